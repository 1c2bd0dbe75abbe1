"""A ticket's status along DESIGN §4's state machine (with its SLA clock and, on solving, the
satisfaction survey), its priority (with its SLA targets), who it is assigned to, and escalation
to supervisors and back. Apart from the messages: these change the ticket, not its
conversation (an escalation's reason is the one note they write)."""

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from config.errors import ApplicationError, Conflict
from config.roles import Role, is_supervisor, support_role
from tickets import changes, satisfaction, sla
from tickets.models import Ticket, TicketChange, TicketEvent, TicketMessage
from tickets.services.messages import ticket_post_message
from tickets.services.shared import _event, _require, _touch

S = Ticket.Status

# DESIGN §4: open → pending → open, open|pending → solved → closed, solved → open.
TICKET_ALLOWED: dict[str, set[str]] = {
    S.OPEN: {S.PENDING, S.SOLVED},
    S.PENDING: {S.OPEN, S.SOLVED},
    S.SOLVED: {S.CLOSED, S.OPEN},
    S.CLOSED: set(),
}
# A customer writing again puts the ticket back in front of the desk.
REOPENED_BY_CUSTOMER = {S.PENDING, S.SOLVED}


@transaction.atomic
def ticket_set_status(
    *, ticket: Ticket, to_status: str, actor: User | None = None, reason: str = ""
) -> Ticket:
    """Move the ticket along DESIGN §4's state machine (compare-and-swap); anything else is
    refused with 409. `actor` None is the desk itself (a customer's email reopening it)."""
    if actor is not None:
        _require(
            support_role(actor) in (Role.AGENT, Role.SUPERVISOR),
            "Only agents and supervisors change a ticket's status.",
        )
    from_status = ticket.status
    if to_status not in TICKET_ALLOWED.get(from_status, set()):
        allowed = sorted(TICKET_ALLOWED.get(from_status, set()))
        raise Conflict(
            f"{ticket.reference} cannot go from {from_status} to {to_status}.",
            code="illegal_transition",
            extra={"from": from_status, "to": to_status, "allowed": allowed},
        )
    now = timezone.now()
    if not Ticket.objects.filter(pk=ticket.pk, status=from_status).update(
        status=to_status, updated_at=now
    ):
        raise Conflict(
            f"{ticket.reference} changed while you were looking at it; reload and try again.",
            code="stale_status",
            extra={"from": from_status, "to": to_status},
        )
    # The swap holds the row: its clock is read as it is, and moved with the status.
    clock = Ticket.objects.get(pk=ticket.pk)
    clock_fields = sla.clock_fields_for_move(clock, from_status, to_status, now)
    if clock_fields:
        Ticket.objects.filter(pk=ticket.pk).update(**clock_fields)
    for name, value in clock_fields.items():
        setattr(ticket, name, value)
    ticket.status, ticket.updated_at = to_status, now
    _event(
        ticket,
        TicketEvent.Type.STATUS_CHANGED,
        actor,
        **{"from": from_status, "to": to_status},
        reason=reason,
    )
    changes.ticket_change_append(
        ticket_id=ticket.pk,
        type=TicketChange.Type.TICKET_STATUS,
        data={
            "status": to_status,
            "from": from_status,
            "to": to_status,
            "reason": reason,
            "by": actor.get_username() if actor else None,
        },
        actor=actor,
    )
    if to_status == S.SOLVED:
        # DESIGN §19: this solve's survey, emailed after commit (one per solve: the swap above).
        satisfaction.survey_issue(ticket=ticket, agent_id=clock.assignee_id)
    return ticket


@transaction.atomic
def ticket_set_priority(*, ticket: Ticket, priority: str, actor: User) -> Ticket:
    """Change the priority; both SLA targets are recomputed from the new priority's policy,
    counted from when the ticket was opened (the resolution one keeps its pauses), in the
    business calendar in force now (tickets/sla.py due_times)."""
    _require(
        support_role(actor) in (Role.AGENT, Role.SUPERVISOR),
        "Only agents and supervisors change a ticket's priority.",
    )
    if priority not in Ticket.Priority.values:
        raise ApplicationError(
            f"{priority!r} is not a priority.",
            code="invalid",
            extra={"fields": {"priority": [f"Must be one of: {', '.join(Ticket.Priority)}."]}},
        )
    current = Ticket.objects.select_for_update().get(pk=ticket.pk)
    if current.priority == priority:
        return ticket
    first_due, resolution_due = sla.due_times(
        priority=priority,
        opened_at=current.created_at,
        paused_seconds=current.sla_paused_seconds,
        paused_business_seconds=current.sla_paused_business_seconds,
    )
    _touch(
        ticket,
        priority=priority,
        first_response_due_at=first_due,
        resolution_due_at=resolution_due,
    )
    change = {"from": current.priority, "to": priority}
    _event(ticket, TicketEvent.Type.PRIORITY_CHANGED, actor, **change)
    return ticket


def support_member(username: str) -> User:
    """The active support user called `username` (someone tickets can be assigned to)."""
    user = get_user_model().objects.filter(username=username, is_active=True).first()
    if user is None or support_role(user) is None:
        raise ApplicationError(
            f"{username!r} is not an active intern, agent or supervisor.",
            code="invalid_assignee",
            extra={"fields": {"assignee": ["Not an active intern, agent or supervisor."]}},
        )
    return user


@transaction.atomic
def ticket_assign(*, ticket: Ticket, assignee: User | None, actor: User) -> Ticket:
    """Assign to a support member (oneself included), or unassign with None."""
    _require(
        support_role(actor) in (Role.AGENT, Role.SUPERVISOR),
        "Only agents and supervisors assign tickets.",
    )
    if assignee is not None and support_role(assignee) is None:
        raise ApplicationError(f"{assignee} does not work tickets.", code="invalid_assignee")
    # The assignee as it is now, not as the caller last saw it: two people assigning at once
    # leave a history where each change starts where the previous one ended.
    current = Ticket.objects.select_for_update().get(pk=ticket.pk)
    before = current.assignee.username if current.assignee is not None else None
    after = assignee.username if assignee else None
    if before == after:
        return ticket
    # A new assignee has seen nothing of it yet.
    _touch(ticket, assignee=assignee, assignee_seen_at=None)
    _event(ticket, TicketEvent.Type.ASSIGNED, actor, **{"from": before, "to": after})
    changes.ticket_change_append(
        ticket_id=ticket.pk,
        type=TicketChange.Type.TICKET_ASSIGNED,
        data={"assignee": after, "from": before, "to": after, "by": actor.get_username()},
        actor=actor,
    )
    return ticket


@transaction.atomic
def ticket_escalate(*, ticket: Ticket, note: str, actor: User) -> Ticket:
    """Flag the ticket for supervisors, with the reason as an internal note."""
    _require(
        support_role(actor) in (Role.INTERN, Role.AGENT),
        "Interns and agents escalate to supervisors.",
    )
    note = note.strip()
    if not note:
        raise ApplicationError(
            "Say why it needs a supervisor.",
            code="empty_note",
            extra={"fields": {"note": ["This field may not be blank."]}},
        )
    if ticket.status == S.CLOSED:
        raise Conflict(f"{ticket.reference} is closed.", code="ticket_closed")
    _touch(ticket, escalated=True)
    ticket_post_message(
        ticket=ticket,
        author_kind=TicketMessage.AuthorKind.AGENT,
        author=actor,
        body=f"Escalated to supervisors: {note}",
    )
    _event(ticket, TicketEvent.Type.ESCALATED, actor, note=note)
    changes.ticket_change_append(
        ticket_id=ticket.pk,
        type=TicketChange.Type.TICKET_ESCALATED,
        data={"escalated": True, "note": note, "by": actor.get_username()},
        actor=actor,
    )
    return ticket


@transaction.atomic
def ticket_clear_escalation(*, ticket: Ticket, actor: User, note: str = "") -> Ticket:
    """A supervisor has dealt with the escalation: the flag goes, the history stays."""
    _require(is_supervisor(actor), "Only supervisors handle escalations.")
    now = timezone.now()
    # Compare-and-swap: of several supervisors clearing at once, one clears it.
    if not Ticket.objects.filter(pk=ticket.pk, escalated=True).update(
        escalated=False, updated_at=now
    ):
        raise Conflict(f"{ticket.reference} is not escalated.", code="not_escalated")
    ticket.escalated, ticket.updated_at = False, now
    _event(ticket, TicketEvent.Type.ESCALATION_CLEARED, actor, note=note.strip())
    changes.ticket_change_append(
        ticket_id=ticket.pk,
        type=TicketChange.Type.TICKET_ESCALATED,
        data={"escalated": False, "note": note.strip(), "by": actor.get_username()},
        actor=actor,
    )
    return ticket
