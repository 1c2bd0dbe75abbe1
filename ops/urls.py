"""The doors every visitor and probe uses: home, sign-in and sign-out, /healthz, /metrics."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect
from django.urls import path

from config.roles import is_reviewer, support_role
from ops import health, metrics
from ops.throttling import GuardedAdminAuthenticationForm, ThrottledLoginView


@login_required
def home(request):
    """Where "/" and a login without ?next= land: a reviewer's work is the review queue, everyone
    else's the ticket list. A reviewer who also has a support role works tickets first."""
    if is_reviewer(request.user) and support_role(request.user) is None:
        return redirect("refunds:queue")
    return redirect("tickets:list")


# The admin's login is a door for password guesses too.
admin.site.login_form = GuardedAdminAuthenticationForm

urlpatterns = [
    path("", home, name="home"),
    path("login/", ThrottledLoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    # For load balancers, orchestrators and Prometheus (README "Operations").
    path("healthz", health.healthz, name="healthz"),
    path("metrics", metrics.metrics, name="metrics"),
]
