"""/tickets/<reference>/: one ticket (conversation, reply box, refunds, the assistant panel,
history, and the buttons the user's role may use), with a macro's text in the reply box when
one is applied. render_ticket draws it, also for the forms that post to it (ticket_forms,
desk.merge.views) when a change is refused."""

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import get_object_or_404, render

from agent.runtime.run_answer import answers_since
from config.errors import ApplicationError
from config.refund_statuses import RefundStatus
from config.roles import Role, is_supervisor, support_role, support_users
from desk import macros
from desk.views.shared import require_staff
from desk.views.ticket_history import history_rows
from orders.selectors import order_summary
from refunds.models import RefundRequest
from tickets import changes, satisfaction, selectors, sla
from tickets.models import Macro, Ticket, TicketMessage
from tickets.services import TICKET_ALLOWED

AGENT_ROLES = (Role.AGENT, Role.SUPERVISOR)


def ticket_or_404(reference: str) -> Ticket:
    try:
        return selectors.ticket_detail(reference=reference)
    except Ticket.DoesNotExist:
        raise Http404(f"No ticket {reference}") from None


def _status_actions(ticket: Ticket) -> list[tuple[str, str]]:
    """The buttons for the statuses the ticket may move to next, in the state machine's order."""
    labels: dict[str, str] = {
        Ticket.Status.OPEN: "Reopen" if ticket.status == Ticket.Status.SOLVED else "Mark open",
        Ticket.Status.PENDING: "Mark pending",
        Ticket.Status.SOLVED: "Mark solved",
        Ticket.Status.CLOSED: "Close",
    }
    allowed = TICKET_ALLOWED[ticket.status]
    return [(value, labels[value]) for value in Ticket.Status.values if value in allowed]


def _public_reply_refusal(role: str | None, ticket: Ticket) -> str:
    """Why this user may not write to the customer on this ticket ("" when they may)."""
    if role == Role.INTERN:
        return "Interns write internal notes; an agent or supervisor sends replies to the customer."
    if role not in AGENT_ROLES:
        return "Only agents and supervisors write to the customer."
    if ticket.status == Ticket.Status.CLOSED:
        return "This ticket is closed: open a new ticket to write to the customer."
    return ""


def _panel_answer_message_id(ticket: Ticket, run) -> int | None:
    """The conversation's note that holds the answer the assistant panel shows in full (the
    latest run's): the conversation folds it, so the page says the answer once."""
    if run is None or not run.final_answer:
        return None
    return (
        ticket.messages.filter(
            author_kind=TicketMessage.AuthorKind.ASSISTANT,
            body=run.final_answer,
            created_at__gte=run.created_at,
        )
        .order_by("-created_at", "-id")
        .values_list("pk", flat=True)
        .first()
    )


def render_ticket(
    request,
    ticket: Ticket,
    *,
    draft: dict | None = None,
    error_for: str = "",
    error: str = "",
    status: int = 200,
    applied_macro: Macro | None = None,
):
    """The ticket page. After a refused form, `draft` holds what was typed, `error_for` names
    the form ("reply", "escalate", "deescalate", "merge", "actions") and `error` says why."""
    role = support_role(request.user)
    public_reply_refusal = _public_reply_refusal(role, ticket)
    draft = dict(draft or {})
    draft.setdefault("visibility", "internal" if public_reply_refusal else "public")
    refunds = list(ticket.refund_requests.select_related("order").order_by("-created_at"))
    latest_run = ticket.runs.order_by("-created_at").first()
    conversation = list(ticket.messages.all())
    since = answers_since(ticket.pk, conversation)
    for message in conversation:
        # Read by the page under an answer a later refund change made stale (not a field).
        message.since_answer = since.get(message.pk, "")  # type: ignore[attr-defined]
    return render(
        request,
        "tickets/detail.html",
        {
            "ticket": ticket,
            "history": history_rows(ticket),
            "latest_run": latest_run,
            "conversation": conversation,
            "panel_answer_message_id": _panel_answer_message_id(ticket, latest_run),
            "refunds": refunds,
            "withdrawable": _withdrawable(refunds, request.user),
            "agent_model": settings.AGENT_MODEL,
            "order": order_summary(ticket.order) if ticket.order else None,
            "can_run_assistant": role is not None,
            "can_write": role is not None,
            "can_reply_publicly": not public_reply_refusal,
            "public_reply_refusal": public_reply_refusal,
            "can_retry": role in AGENT_ROLES,
            "can_change_status": role in AGENT_ROLES,
            "can_assign": role in AGENT_ROLES,
            "can_escalate": role in (Role.INTERN, Role.AGENT)
            and ticket.status != Ticket.Status.CLOSED,
            "can_clear_escalation": is_supervisor(request.user) and ticket.escalated,
            "can_merge": role in AGENT_ROLES and ticket.merged_into_id is None,
            "next_statuses": _status_actions(ticket),
            "priorities": Ticket.Priority.choices,
            "sla_state": sla.sla_state(ticket),
            "sla_due": sla.next_due(ticket),
            "rating": satisfaction.latest_rating(ticket),
            "survey": satisfaction.latest_survey(ticket),
            "can_tag": role is not None,
            "macros": macros.macros_for(request.user) if role is not None else [],
            "applied_macro": applied_macro,
            # attachments
            "attachment_max_mb": f"{settings.ATTACHMENT_MAX_BYTES / (1024 * 1024):g}",
            "support_users": support_users(),
            "draft": draft,
            "error_for": error_for,
            "error": error,
        },
        status=status,
    )


def _withdrawable(refunds: list[RefundRequest], user) -> set[int]:
    """The proposals `user` may take back (refunds.services.refund_withdraw decides; this only
    offers the button): their own awaiting review, or any awaiting review for a supervisor."""
    supervisor = is_supervisor(user)
    return {
        refund.pk
        for refund in refunds
        if refund.status == RefundStatus.PENDING_APPROVAL
        and (supervisor or refund.requested_by_id == user.pk)
    }


@login_required
def ticket_detail(request, reference: str):
    require_staff(request.user)
    ticket = ticket_or_404(reference)
    changes.ticket_mark_seen(ticket=ticket, user=request.user)
    if request.GET.get("macro", "").isdigit():
        return _render_with_macro(request, ticket, int(request.GET["macro"]))
    # A reply written from a macro was sent: its actions stay offered until applied or
    # dismissed, and the reply box is empty again.
    return render_ticket(request, ticket, applied_macro=macro_with_actions(request, "GET"))


def macro_with_actions(request, method: str) -> Macro | None:
    """The user's macro named by `macro` (the reply form) or `pending_macro` (the page after
    sending), when it has actions to offer."""
    data = request.POST if method == "POST" else request.GET
    raw = data.get("macro" if method == "POST" else "pending_macro", "")
    if not raw.isdigit():
        return None
    macro = macros.macros_for(request.user).filter(pk=int(raw)).first()
    return macro if macro is not None and macro.actions else None


def _render_with_macro(request, ticket: Ticket, macro_id: int):
    """The ticket page with the macro's text in the reply box and its actions offered for
    confirmation; nothing is sent or changed (DESIGN §15)."""
    macro = get_object_or_404(macros.macros_for(request.user), pk=macro_id)
    try:
        applied = macros.macro_apply(macro=macro, ticket=ticket, agent=request.user)
    except ApplicationError as exc:
        return render_ticket(request, ticket, error_for="reply", error=exc.message, status=409)
    return render_ticket(
        request,
        ticket,
        draft={"body": applied.body, "visibility": applied.visibility},
        applied_macro=macro if applied.actions else None,
    )
