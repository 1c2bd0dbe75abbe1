from django.urls import path

from tickets import api, views

urlpatterns = [
    path("", views.ticket_list, name="list"),
    path("new/", views.ticket_new, name="new"),
    path("<str:reference>/", views.ticket_detail, name="detail"),
    path("<str:reference>/messages/", views.ticket_write, name="write"),
    path(
        "<str:reference>/messages/<int:message_id>/retry/",
        views.ticket_retry_reply,
        name="retry-reply",
    ),
    path("<str:reference>/status/", views.ticket_status, name="status"),
    path("<str:reference>/assign/", views.ticket_assign, name="assign"),
    path("<str:reference>/escalate/", views.ticket_escalate, name="escalate"),
    path("<str:reference>/deescalate/", views.ticket_deescalate, name="deescalate"),
]

customer_urlpatterns = [
    path("<int:customer_id>/", views.customer_detail, name="customer"),
]

api_urlpatterns = [
    path("tickets/", api.TicketListApi.as_view(), name="api-ticket-list"),
    path("tickets/<str:reference>/", api.TicketDetailApi.as_view(), name="api-ticket-detail"),
    path(
        "tickets/<str:reference>/messages/",
        api.TicketMessageApi.as_view(),
        name="api-ticket-messages",
    ),
    path(
        "tickets/<str:reference>/messages/<int:message_id>/retry/",
        api.TicketMessageRetryApi.as_view(),
        name="api-ticket-message-retry",
    ),
    path(
        "tickets/<str:reference>/status/", api.TicketStatusApi.as_view(), name="api-ticket-status"
    ),
    path(
        "tickets/<str:reference>/assign/", api.TicketAssignApi.as_view(), name="api-ticket-assign"
    ),
    path(
        "tickets/<str:reference>/escalate/",
        api.TicketEscalateApi.as_view(),
        name="api-ticket-escalate",
    ),
    path(
        "tickets/<str:reference>/deescalate/",
        api.TicketDeescalateApi.as_view(),
        name="api-ticket-deescalate",
    ),
    path("customers/<int:customer_id>/", api.CustomerDetailApi.as_view(), name="api-customer"),
    path("inbound/email/", api.InboundEmailApi.as_view(), name="api-inbound-email"),
]
