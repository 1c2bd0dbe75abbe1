from django.urls import path

from tickets import api, views

urlpatterns = [
    path("", views.ticket_list, name="list"),
    path("<str:reference>/", views.ticket_detail, name="detail"),
]

api_urlpatterns = [
    path("tickets/", api.TicketListApi.as_view(), name="api-ticket-list"),
    path("tickets/<str:reference>/", api.TicketDetailApi.as_view(), name="api-ticket-detail"),
]
