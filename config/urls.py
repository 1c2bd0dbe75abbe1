from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

import agent.urls
import refunds.urls
import tickets.urls
from config import health, metrics
from config.api_errors import JsonErrorsMixin, api_not_found
from config.roles import is_reviewer, support_role
from config.throttling import (
    AnonThrottle,
    GuardedAdminAuthenticationForm,
    SignInTokenSerializer,
    ThrottledLoginView,
)
from tickets.api import ObtainTokenView


class SchemaView(JsonErrorsMixin, SpectacularAPIView):
    """The OpenAPI schema, for anyone logged in (SPECTACULAR_SETTINGS["SERVE_PERMISSIONS"])."""


@login_required
def home(request):
    """Where "/" and a login without ?next= land: a reviewer's work is the review queue, everyone
    else's the ticket list. A reviewer who also has a support role works tickets first."""
    if is_reviewer(request.user) and support_role(request.user) is None:
        return redirect("refunds:queue")
    return redirect("tickets:list")


api_urlpatterns = [
    # Anonymous requests per address (DRF's view turns throttling off by default); its
    # serializer holds failed sign-ins to the login page's limits.
    path(
        "auth/token/",
        ObtainTokenView.as_view(
            throttle_classes=[AnonThrottle],
            serializer_class=SignInTokenSerializer,
        ),
        name="api-token",
    ),
    path("schema/", SchemaView.as_view(), name="api-schema"),
    # A page for a browser: a visitor who is not logged in is sent to the login page.
    path(
        "docs/",
        login_required(SpectacularSwaggerView.as_view(url_name="api-schema")),
        name="api-docs",
    ),
    *tickets.urls.api_urlpatterns,
    *agent.urls.api_urlpatterns,
    *refunds.urls.api_urlpatterns,
    # Last: an unknown /api/ path answers JSON, not the HTML 404 page.
    re_path(r"^.*$", api_not_found, name="api-not-found"),
]

# The admin's login is a door for password guesses too.
admin.site.login_form = GuardedAdminAuthenticationForm

urlpatterns = [
    path("", home, name="home"),
    path("login/", ThrottledLoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    # For load balancers, orchestrators and Prometheus (README "Operations").
    path("healthz", health.healthz, name="healthz"),
    path("metrics", metrics.metrics, name="metrics"),
    path("api/", include(api_urlpatterns)),
    path("tickets/", include((tickets.urls.urlpatterns, "tickets"))),
    path("customers/", include((tickets.urls.customer_urlpatterns, "customers"))),
    path("runs/", include((agent.urls.urlpatterns, "agent"))),
    path("review/", include((refunds.urls.urlpatterns, "refunds"))),
]

# Errors Django answers itself (DEBUG off): JSON under /api/, the HTML pages elsewhere.
handler403 = "config.api_errors.permission_denied"
handler404 = "config.api_errors.page_not_found"
handler500 = "config.api_errors.server_error"
