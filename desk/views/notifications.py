"""/notifications/: the user's notifications, and marking them read."""

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from desk.views.shared import PAGE_SIZE, require_staff
from tickets import changes, selectors


@login_required
def notification_list(request):
    """The user's notifications, newest first; opening one marks it read."""
    require_staff(request.user)
    page = Paginator(selectors.notifications_of(user=request.user), PAGE_SIZE).get_page(
        request.GET.get("page")
    )
    return render(request, "tickets/notifications.html", {"page": page})


@login_required
@require_POST
def notification_read(request):
    """Mark one notification read (`id`) and go to its ticket, or all of them (no `id`)."""
    require_staff(request.user)
    raw = request.POST.get("id", "")
    if raw.isdigit():
        notification = get_object_or_404(selectors.notifications_of(user=request.user), pk=int(raw))
        changes.notifications_mark_read(user=request.user, ids=[notification.pk])
        return redirect("tickets:detail", reference=notification.ticket.reference)
    changes.notifications_mark_read(user=request.user)
    return redirect("notifications")
