"""The desk's pages and the whole API under /api/: the tickets' own, the assistant's and the
reviewers' (agent.urls, refunds.urls), the sign-in token and the schema. One list, so that
the answer in JSON to an unknown /api/ path comes after every API route."""

from django.contrib.auth.decorators import login_required
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

import agent.urls
import refunds.urls
from config.api_errors import JsonErrorsMixin, api_not_found
from desk import api, satisfaction, views
from desk.bulk import api as bulk_api
from desk.business_hours import api as business_hours_api
from desk.business_hours import views as business_hours_views
from desk.live import api as live
from desk.macro_pages import views as macro_views
from desk.merge import api as merge_api
from desk.merge import views as merge_views
from desk.people import api as people_api
from desk.people import views as people_views
from desk.saved_views import api as saved_views_api
from desk.saved_views import views as saved_views_views
from ops.throttling import AnonThrottle, SignInTokenSerializer


class SchemaView(JsonErrorsMixin, SpectacularAPIView):
    """The OpenAPI schema, for anyone logged in (SPECTACULAR_SETTINGS["SERVE_PERMISSIONS"])."""


ticket_urlpatterns = [
    path("", views.ticket_list, name="list"),
    path("views/", saved_views_views.view_save, name="view-save"),
    path("views/<int:view_id>/delete/", saved_views_views.view_delete, name="view-delete"),
    path("new/", views.ticket_new, name="new"),
    path("<str:reference>/", views.ticket_detail, name="detail"),
    path("<str:reference>/messages/", views.ticket_write, name="write"),
    path(
        "<str:reference>/messages/<int:message_id>/retry/",
        views.ticket_retry_reply,
        name="retry-reply",
    ),
    path("<str:reference>/status/", views.ticket_status, name="status"),
    path("<str:reference>/priority/", views.ticket_priority, name="priority"),
    path("<str:reference>/tags/", views.ticket_tags, name="tags"),
    path("<str:reference>/cc/", views.ticket_cc, name="cc"),
    path(
        "<str:reference>/macros/<int:macro_id>/actions/",
        views.ticket_macro_actions,
        name="macro-actions",
    ),
    path("<str:reference>/assign/", views.ticket_assign, name="assign"),
    path("<str:reference>/escalate/", views.ticket_escalate, name="escalate"),
    path(
        "<str:reference>/refunds/<str:request_id>/withdraw/",
        views.ticket_refund_withdraw,
        name="withdraw-refund",
    ),
    path("<str:reference>/deescalate/", views.ticket_deescalate, name="deescalate"),
    path("<str:reference>/merge/", merge_views.ticket_merge_page, name="merge"),
]

customer_urlpatterns = [
    path("<int:customer_id>/", views.customer_detail, name="customer"),
]

ticket_api_urlpatterns = [
    path("tickets/", api.TicketListApi.as_view(), name="api-ticket-list"),
    # Before tickets/<reference>/: "bulk" is no reference.
    path("tickets/bulk/", bulk_api.TicketBulkApi.as_view(), name="api-ticket-bulk"),
    path("views/", saved_views_api.SavedViewListApi.as_view(), name="api-views"),
    path("views/<int:pk>/", saved_views_api.SavedViewDetailApi.as_view(), name="api-view"),
    path("tickets/<str:reference>/", api.TicketDetailApi.as_view(), name="api-ticket-detail"),
    path(
        "tickets/<str:reference>/messages/",
        api.TicketMessageApi.as_view(),
        name="api-ticket-messages",
    ),
    path("tickets/<str:reference>/draft/", api.TicketDraftApi.as_view(), name="api-ticket-draft"),
    path(
        "tickets/<str:reference>/attachments/<int:attachment_id>/",
        api.TicketAttachmentApi.as_view(),
        name="api-ticket-attachment",
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
        "tickets/<str:reference>/priority/",
        api.TicketPriorityApi.as_view(),
        name="api-ticket-priority",
    ),
    path("tickets/<str:reference>/tags/", api.TicketTagsApi.as_view(), name="api-ticket-tags"),
    path("tickets/<str:reference>/cc/", api.TicketCcApi.as_view(), name="api-ticket-cc"),
    path(
        "tickets/<str:reference>/macros/<int:macro_id>/apply/",
        api.TicketMacroApplyApi.as_view(),
        name="api-ticket-macro-apply",
    ),
    path("macros/", api.MacroListApi.as_view(), name="api-macros"),
    path("macros/<int:pk>/", api.MacroDetailApi.as_view(), name="api-macro"),
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
    path(
        "tickets/<str:reference>/merge/",
        merge_api.TicketMergeApi.as_view(),
        name="api-ticket-merge",
    ),
    path("customers/<int:customer_id>/", api.CustomerDetailApi.as_view(), name="api-customer"),
    path("sla/calendar/", business_hours_api.SlaCalendarApi.as_view(), name="api-sla-calendar"),
    path("inbound/email/", api.InboundEmailApi.as_view(), name="api-inbound-email"),
    *[
        path(
            "ticket-list/stream/",
            live.TicketListStreamApi.as_view(),
            name="api-ticket-list-stream",
        ),
        path(
            "tickets/<str:reference>/events/",
            live.TicketEventsApi.as_view(),
            name="api-ticket-events",
        ),
        path(
            "tickets/<str:reference>/events/stream/",
            live.TicketEventStreamApi.as_view(),
            name="api-ticket-event-stream",
        ),
        path("notifications/", live.NotificationListApi.as_view(), name="api-notifications"),
        path(
            "notifications/read/",
            live.NotificationReadApi.as_view(),
            name="api-notifications-read",
        ),
        path(
            "notifications/stream/",
            live.NotificationStreamApi.as_view(),
            name="api-notification-stream",
        ),
    ],
]

api_urlpatterns = [
    # Anonymous requests per address (DRF's view turns throttling off by default); its
    # serializer holds failed sign-ins to the login page's limits.
    path(
        "auth/token/",
        api.ObtainTokenView.as_view(
            throttle_classes=[AnonThrottle],
            serializer_class=SignInTokenSerializer,
        ),
        name="api-token",
    ),
    path("me/", people_api.MeApi.as_view(), name="api-me"),
    path("schema/", SchemaView.as_view(), name="api-schema"),
    # A page for a browser: a visitor who is not logged in is sent to the login page.
    path(
        "docs/",
        login_required(SpectacularSwaggerView.as_view(url_name="api-schema")),
        name="api-docs",
    ),
    *ticket_api_urlpatterns,
    *agent.urls.api_urlpatterns,
    *refunds.urls.api_urlpatterns,
    # Last: an unknown /api/ path answers JSON, not the HTML 404 page.
    re_path(r"^.*$", api_not_found, name="api-not-found"),
]

urlpatterns = [
    path("api/", include(api_urlpatterns)),
    path("me/", people_views.me_page, name="me"),
    path("sla/hours/", business_hours_views.business_hours_page, name="business-hours"),
    path("macros/", macro_views.macro_list, name="macros"),
    path("macros/new/", macro_views.macro_edit, name="macro-new"),
    path("macros/<int:macro_id>/", macro_views.macro_edit, name="macro-edit"),
    # The customer's survey links (DESIGN §19): no login, the signed token is the key.
    path("satisfaction/<str:token>/", satisfaction.survey_page, name="satisfaction"),
    path(
        "satisfaction/<str:token>/comment/",
        satisfaction.survey_comment,
        name="satisfaction-comment",
    ),
    path("notifications/", views.notification_list, name="notifications"),
    path("notifications/read/", views.notification_read, name="notifications-read"),
    path("tickets/", include((ticket_urlpatterns, "tickets"))),
    path("customers/", include((customer_urlpatterns, "customers"))),
]
