"""What the ticket page's forms post to: a reply or note, a retry, status, priority, tags, CC,
a macro's actions, assignment, a refund withdrawn, escalation and its clearing. Each runs one
service call, which checks the role; a refusal shows the page again with what was typed."""

from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from agent.answer_check import contradicted_claims
from config.errors import ApplicationError
from desk import macros
from desk.views.shared import require_staff, typed
from desk.views.ticket_page import macro_with_actions, render_ticket, ticket_or_404
from refunds import services as refund_services
from refunds.models import RefundRequest
from tickets import attachments, services
from tickets.models import Macro, Ticket, TicketMessage
from tickets.services import ClaimsContradictState


def _act(
    request,
    reference: str,
    action,
    success: str,
    *,
    form: str = "actions",
    draft: dict | None = None,
    applied_macro: Macro | None = None,
):
    """Run one service call for a form on the ticket page: back to the ticket with a notice,
    or the page again with the refusal and what was typed. A refusal of a form with text
    (`form` "reply", "escalate", "deescalate") is shown next to it; the others on top.
    `applied_macro`: the macro the text came from, whose actions stay offered either way."""
    require_staff(request.user)
    ticket = ticket_or_404(reference)
    try:
        action(ticket)
    except ApplicationError as exc:
        if form == "actions":
            messages.error(request, exc.message)
            error = ""
        else:
            # Shown next to the form with the text kept, where the browser scrolls to.
            error = exc.message
        if exc.code == ClaimsContradictState.code:
            # The reply box lists them, once, with a button to send the reply as it is: the
            # list says what the error would, so there is no error line above it.
            draft = {**(draft or {}), "claims": services.claims_in_words(exc.extra["claims"])}
            error = ""
        return render_ticket(
            request,
            ticket_or_404(reference),
            draft=draft,
            error_for=form,
            error=error,
            status=exc.status_code,
            applied_macro=applied_macro,
        )
    messages.success(request, success)
    if applied_macro is not None:
        url = reverse("tickets:detail", kwargs={"reference": reference})
        return redirect(f"{url}?{urlencode({'pending_macro': applied_macro.pk})}#reply")
    return redirect("tickets:detail", reference=reference)


@login_required
@require_POST
def ticket_write(request, reference: str):
    if attachments.body_too_large(request.META.get("CONTENT_LENGTH")):
        # Not read at all (reading the text would read the files too): the page again.
        return _act(request, reference, _refuse_too_large, "", form="reply")
    body = typed(request, "body")
    visibility = request.POST.get("visibility", TicketMessage.Visibility.INTERNAL)
    if visibility not in TicketMessage.Visibility.values:
        visibility = TicketMessage.Visibility.INTERNAL
    public = visibility == TicketMessage.Visibility.PUBLIC
    files = request.FILES.getlist("files")
    return _act(
        request,
        reference,
        lambda t: services.ticket_write(
            ticket=t,
            author=request.user,
            body=body,
            visibility=visibility,
            claims_check=lambda text: contradicted_claims(text=text, ticket=t),
            confirm_claims=request.POST.get("confirm_claims") == "1",
            files=attachments.uploads_from(files),
        ),
        "Reply queued for sending to the customer." if public else "Internal note added.",
        form="reply",
        draft={"body": body, "visibility": visibility},
        applied_macro=macro_with_actions(request, "POST"),
    )


def _refuse_too_large(ticket: Ticket) -> None:
    raise attachments.TooLarge("The files are too large to attach: send fewer or smaller ones.")


@login_required
@require_POST
def ticket_retry_reply(request, reference: str, message_id: int):
    require_staff(request.user)
    message = get_object_or_404(TicketMessage, pk=message_id, ticket__reference=reference)
    return _act(
        request,
        reference,
        lambda t: services.reply_retry(message=message, actor=request.user),
        "Sending the reply again.",
    )


@login_required
@require_POST
def ticket_status(request, reference: str):
    to_status = request.POST.get("status", "")
    label = dict(Ticket.Status.choices).get(to_status, to_status)
    return _act(
        request,
        reference,
        lambda t: services.ticket_set_status(ticket=t, to_status=to_status, actor=request.user),
        f"Ticket marked {label.lower()}.",
    )


@login_required
@require_POST
def ticket_priority(request, reference: str):
    priority = request.POST.get("priority", "")
    label = dict(Ticket.Priority.choices).get(priority, priority)
    return _act(
        request,
        reference,
        lambda t: services.ticket_set_priority(ticket=t, priority=priority, actor=request.user),
        f"Priority set to {label.lower()}.",
    )


def _split_list(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


@login_required
@require_POST
def ticket_tags(request, reference: str):
    add = _split_list(request.POST.get("add", ""))
    remove = request.POST.getlist("remove")
    return _act(
        request,
        reference,
        lambda t: services.ticket_change_tags(ticket=t, actor=request.user, add=add, remove=remove),
        "Tags updated.",
    )


@login_required
@require_POST
def ticket_cc(request, reference: str):
    cc = _split_list(request.POST.get("cc", ""))
    return _act(
        request,
        reference,
        lambda t: services.ticket_set_cc(ticket=t, cc=cc, actor=request.user),
        "CC updated.",
        draft={"cc": cc},
    )


@login_required
@require_POST
def ticket_macro_actions(request, reference: str, macro_id: int):
    """The agent confirms the actions of the macro they applied (status, priority, tags). The
    reply box's text comes along and is shown again, unsent, as it was."""
    require_staff(request.user)
    macro = get_object_or_404(macros.macros_for(request.user), pk=macro_id)
    draft = {"body": typed(request, "body")}
    if request.POST.get("visibility") in TicketMessage.Visibility.values:
        draft["visibility"] = request.POST["visibility"]
    try:
        done = macros.macro_confirm_actions(
            macro=macro, ticket=ticket_or_404(reference), agent=request.user
        )
    except ApplicationError as exc:
        messages.error(request, exc.message)
        return render_ticket(request, ticket_or_404(reference), draft=draft, status=exc.status_code)
    messages.success(request, f"{macro.name}: {'; '.join(done) or 'nothing to change'}.")
    return render_ticket(request, ticket_or_404(reference), draft=draft)


@login_required
@require_POST
def ticket_assign(request, reference: str):
    username = request.POST.get("assignee", "").strip()
    if username == "me":
        username = request.user.username

    def assign(ticket: Ticket) -> None:
        assignee = services.support_member(username) if username else None
        services.ticket_assign(ticket=ticket, assignee=assignee, actor=request.user)

    return _act(
        request,
        reference,
        assign,
        f"Assigned to {username}." if username else "Ticket unassigned.",
    )


@login_required
@require_POST
def ticket_refund_withdraw(request, reference: str, request_id: str):
    note = typed(request, "note")

    def withdraw(ticket: Ticket) -> None:
        refund = get_object_or_404(RefundRequest, ticket=ticket, request_id=request_id)
        refund_services.refund_withdraw(refund=refund, by=request.user, note=note)

    return _act(request, reference, withdraw, f"Refund {request_id} withdrawn.")


@login_required
@require_POST
def ticket_escalate(request, reference: str):
    note = typed(request, "note")
    return _act(
        request,
        reference,
        lambda t: services.ticket_escalate(ticket=t, note=note, actor=request.user),
        "Escalated: supervisors see it in their Escalated view.",
        form="escalate",
        draft={"note": note},
    )


@login_required
@require_POST
def ticket_deescalate(request, reference: str):
    note = typed(request, "note")
    return _act(
        request,
        reference,
        lambda t: services.ticket_clear_escalation(ticket=t, note=note, actor=request.user),
        "Escalation marked handled.",
        form="deescalate",
        draft={"deescalate_note": note},
    )
