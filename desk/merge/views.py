"""The ticket page's "Merge into…" form (DESIGN §19): desk.merge.services decides."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from config.errors import ApplicationError
from desk.merge.services import merge_target, ticket_merge
from desk.views.shared import require_staff
from desk.views.ticket_page import render_ticket, ticket_or_404


@login_required
@require_POST
def ticket_merge_page(request, reference: str):
    """The ticket page's "Merge into…": with its confirmation ticked, merges and sends the agent
    to the target; a refusal comes back on the page with the reference as typed."""
    require_staff(request.user)
    source = ticket_or_404(reference)
    typed = request.POST.get("into", "")
    try:
        target = merge_target(typed)
        if request.POST.get("confirm") != "yes":
            raise ApplicationError(
                f"Tick the box to confirm: {source.reference} will be closed and everything on "
                f"it moved to {target.reference}.",
                code="confirm_required",
            )
        ticket_merge(source=source, target=target, actor=request.user)
    except ApplicationError as exc:
        return render_ticket(
            request,
            ticket_or_404(reference),
            draft={"merge_into": typed},
            error_for="merge",
            error=exc.message,
            status=exc.status_code,
        )
    messages.success(request, f"{source.reference} was merged into this ticket.")
    return redirect("tickets:detail", reference=target.reference)
