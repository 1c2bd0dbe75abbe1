"""The site's map. Each app's URLs are mounted by module name, a string: config is the base
every app imports, and imports none of them."""

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    # "/", login/, logout/, healthz, metrics
    path("", include("ops.urls")),
    path("admin/", admin.site.urls),
    # api/ (every app's API), tickets/, customers/
    path("", include("desk.urls")),
    path("runs/", include(("agent.urls", "agent"))),
    path("review/", include(("refunds.urls", "refunds"))),
]

# Errors Django answers itself (DEBUG off): JSON under /api/, the HTML pages elsewhere.
handler403 = "config.api_errors.permission_denied"
handler404 = "config.api_errors.page_not_found"
handler500 = "config.api_errors.server_error"
