"""The ticket list's "Save this view" and a view's delete button: tickets.saved_views decides;
a refusal comes back as a message on the list."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from config.errors import ApplicationError
from desk.views.shared import require_staff
from tickets import saved_views


def _list_with(query: str):
    return redirect(f"{reverse('tickets:list')}?{query}" if query else reverse("tickets:list"))


@login_required
@require_POST
def view_save(request):
    """Save the list's current filters and sort under a name; the list opens with them."""
    require_staff(request.user)
    query = request.POST.get("query", "")
    try:
        view = saved_views.saved_view_create(
            owner=request.user,
            name=request.POST.get("name", ""),
            query=query,
            shared=request.POST.get("shared") == "yes",
        )
    except ApplicationError as exc:
        messages.error(request, f"The view was not saved: {exc.message}")
        return _list_with(query)
    messages.success(request, f"Saved the view “{view.name}”.")
    return _list_with(view.query)


@login_required
@require_POST
def view_delete(request, view_id: int):
    require_staff(request.user)
    view = get_object_or_404(saved_views.views_for(request.user), pk=view_id)
    try:
        saved_views.saved_view_delete(view=view, actor=request.user)
    except ApplicationError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"Deleted the view “{view.name}”.")
    return redirect("tickets:list")
