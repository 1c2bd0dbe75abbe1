from django.urls import path

from refunds import api, views

# HTML pages of this app, mounted by config/urls.py under /review/ (namespace "refunds").
urlpatterns = [
    path("", views.review_queue, name="queue"),
    path("<str:request_id>/", views.review_detail, name="detail"),
    path("<str:request_id>/approve/", views.review_approve, name="approve"),
    path("<str:request_id>/reject/", views.review_reject, name="reject"),
]

# API endpoints of this app, mounted under /api/ by desk/urls.py.
api_urlpatterns = [
    path("refunds/", api.RefundListApi.as_view(), name="api-refund-list"),
    path("refunds/<str:request_id>/", api.RefundDetailApi.as_view(), name="api-refund-detail"),
    path(
        "refunds/<str:request_id>/approve/",
        api.RefundApproveApi.as_view(),
        name="api-refund-approve",
    ),
    path(
        "refunds/<str:request_id>/reject/", api.RefundRejectApi.as_view(), name="api-refund-reject"
    ),
    path(
        "refunds/<str:request_id>/withdraw/",
        api.RefundWithdrawApi.as_view(),
        name="api-refund-withdraw",
    ),
]
