"""/macros/: the macros a desk user may use; supervisors add and change the shared ones, with
their language versions and actions, and preview one on a real ticket before anyone uses it."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, redirect, render

from config.errors import ApplicationError
from config.roles import Role, support_role
from desk import macros
from desk.macro_pages.forms import MacroForm
from tickets.models import MACRO_PLACEHOLDERS, Macro, Ticket


def _require_writer(user) -> None:
    if support_role(user) is None:
        raise PermissionDenied("Only interns, agents and supervisors use macros.")


def _require_supervisor(user) -> None:
    if support_role(user) != Role.SUPERVISOR:
        raise PermissionDenied("Only supervisors add or change shared macros.")


@login_required
def macro_list(request):
    _require_writer(request.user)
    return render(
        request,
        "tickets/macros.html",
        {
            "macros": macros.macros_for(request.user),
            "can_edit": support_role(request.user) == Role.SUPERVISOR,
        },
    )


@login_required
def macro_edit(request, macro_id: int | None = None):
    """A new shared macro, or one to change; what was typed stays on the page when refused."""
    _require_supervisor(request.user)
    macro = get_object_or_404(Macro, pk=macro_id, owner__isnull=True) if macro_id else Macro()
    form = MacroForm(request.POST or None, instance=macro)
    if request.method == "POST" and form.is_valid():
        saved = form.save()
        messages.success(request, f"Saved “{saved.name}”.")
        return redirect("macro-edit", macro_id=saved.pk)
    return render(
        request,
        "tickets/macro_edit.html",
        {
            "form": form,
            "macro": macro if macro.pk else None,
            "placeholders": MACRO_PLACEHOLDERS,
            **_preview(request, macro),
        },
    )


def _preview(request, macro: Macro) -> dict:
    """The saved macro applied to the ticket named by ?preview=, as an agent would get it."""
    reference = request.GET.get("preview", "").strip()
    if not reference or not macro.pk:
        return {"preview_reference": reference}
    ticket = Ticket.objects.filter(reference=reference).first()
    if ticket is None:
        return {"preview_reference": reference, "preview_error": f"No ticket {reference}."}
    try:
        applied = macros.macro_apply(macro=macro, ticket=ticket, agent=request.user)
    except ApplicationError as exc:
        return {"preview_reference": reference, "preview_error": exc.message}
    return {"preview_reference": reference, "preview": applied}
