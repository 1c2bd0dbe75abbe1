from django.urls import path

from agent import api

# HTML pages of this app, mounted by config/urls.py.
urlpatterns: list = []

# API endpoints of this app, mounted under /api/ by desk/urls.py.
api_urlpatterns = [
    path("tickets/<str:reference>/runs/", api.RunStartApi.as_view(), name="api-run-start"),
    path("runs/<uuid:run_id>/", api.RunDetailApi.as_view(), name="api-run-detail"),
    path("runs/<uuid:run_id>/events/", api.RunEventsApi.as_view(), name="api-run-events"),
    path(
        "runs/<uuid:run_id>/events/stream/",
        api.RunEventStreamApi.as_view(),
        name="api-run-event-stream",
    ),
    path("runs/<uuid:run_id>/cancel/", api.RunCancelApi.as_view(), name="api-run-cancel"),
    path(
        "runs/<uuid:run_id>/tool-calls/", api.RunToolCallsApi.as_view(), name="api-run-tool-calls"
    ),
]
