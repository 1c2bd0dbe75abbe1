"""Every write to a ticket: messages, replies by email, status, assignment, escalation, inbound
mail. Permissions are checked here, so the API and the HTML views refuse the same things."""

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db import IntegrityError, connection, transaction
from django.db.models import F, IntegerField, Max, Q
from django.db.models.functions import Cast, Substr
from django.utils import timezone

from config.celery import enqueue_on_commit
from config.errors import ApplicationError, Conflict, Forbidden
from config.refund_statuses import RefundStatus
from config.roles import Role, is_supervisor, support_role
from orders.addresses import BadAddress, at_a_host_not_a_domain, email_key, host_refusal
from orders.models import Customer, Order
from tickets import attachment_files, attachments, changes, mail, satisfaction, sla
from tickets.attachments import Upload
from tickets.models import Tag, Ticket, TicketChange, TicketCounter, TicketEvent, TicketMessage

logger = logging.getLogger(__name__)

S = Ticket.Status
V = TicketMessage.Visibility
D = TicketMessage.Delivery

# DESIGN §4: open → pending → open, open|pending → solved → closed, solved → open.
TICKET_ALLOWED: dict[str, set[str]] = {
    S.OPEN: {S.PENDING, S.SOLVED},
    S.PENDING: {S.OPEN, S.SOLVED},
    S.SOLVED: {S.CLOSED, S.OPEN},
    S.CLOSED: set(),
}
# A customer writing again puts the ticket back in front of the desk.
REOPENED_BY_CUSTOMER = {S.PENDING, S.SOLVED}

SEND_REPLY_TASK = "tickets.tasks.send_reply"
TICKET_REFERENCE_IN_SUBJECT = re.compile(r"\[(TCK-[0-9]+)\]")
ORDER_ID_IN_TEXT = re.compile(r"(?<![0-9])[0-9]{8,20}(?![0-9])")
FIRST_REFERENCE_NUMBER = 1001


def _require(allowed: bool, message: str, code: str = "permission_denied") -> None:
    if not allowed:
        raise Forbidden(message, code=code)


def _touch(ticket: Ticket, now: datetime | None = None, **fields: Any) -> None:
    now = now or timezone.now()
    Ticket.objects.filter(pk=ticket.pk).update(updated_at=now, **fields)
    for name, value in fields.items():
        setattr(ticket, name, value)
    ticket.updated_at = now


# The events of what the ticket page's panel of details shows: an open page redraws it.
DETAIL_EVENTS: dict[str, str] = {
    TicketEvent.Type.PRIORITY_CHANGED: "priority",
    TicketEvent.Type.TAGS_CHANGED: "tags",
    TicketEvent.Type.CC_CHANGED: "cc",
}


def _event(ticket: Ticket, type: str, actor: User | None = None, **data: Any) -> TicketEvent:
    event = TicketEvent.objects.create(ticket=ticket, type=type, actor=actor, data=data)
    if type in DETAIL_EVENTS:
        changes.details_changed(ticket_id=ticket.pk, what=DETAIL_EVENTS[type])
    return event


# --- messages -------------------------------------------------------------------------------


@transaction.atomic
def ticket_post_message(
    *,
    ticket: Ticket,
    author_kind: str,
    body: str,
    author: User | None = None,
    visibility: str = V.INTERNAL,
    message_id: str | None = None,
) -> TicketMessage:
    """Record a message as it is: no email, no permission check (the desk's own notes, the
    assistant's answers and customer mail come through here). Internal unless said otherwise."""
    message = TicketMessage.objects.create(
        ticket=ticket,
        author_kind=author_kind,
        body=body,
        author=author,
        visibility=visibility,
        message_id=message_id,
    )
    _touch(ticket, message.created_at)
    changes.message_created(message)
    return message


# What a reply says about refunds that the records contradict: [{text, order_id, claimed,
# actual}] (the claim check, agent.answer_check, given by the layer above).
ClaimsCheck = Callable[[str], list[dict]]


class ClaimsContradictState(Conflict):
    code = "claim_contradicts_state"


@attachment_files.atomic()
def ticket_write(
    *,
    ticket: Ticket,
    author: User,
    body: str,
    visibility: str,
    claims_check: ClaimsCheck | None = None,
    confirm_claims: bool = False,
    files: Sequence[Upload] = (),
) -> TicketMessage:
    """A support member writes on the ticket: an internal note, or a public reply that is
    emailed to the customer, with its files, after commit (queued → sent, or failed after the
    retries). Files over the limits refuse the whole message (tickets/attachments.py).

    A public reply is first read by `claims_check`: when the records contradict what it says
    about a refund it is refused (ClaimsContradictState, the claims in `extra`) unless
    `confirm_claims`, and a confirmed one leaves a `claims_confirmed` event. Internal notes are
    never checked."""
    role = support_role(author)
    _require(role is not None, "Only interns, agents and supervisors write on tickets.")
    body = body.strip()
    if not body:
        raise ApplicationError("Write something first.", code="empty_message")
    attachments.check_uploads(files, "files")
    if visibility == V.INTERNAL:
        note = ticket_post_message(
            ticket=ticket, author_kind=TicketMessage.AuthorKind.AGENT, body=body, author=author
        )
        attachments.attach(note, files)
        return note
    _require(role != Role.INTERN, "Interns write internal notes; an agent sends the reply.")
    if ticket.status == S.CLOSED:
        raise Conflict(
            f"{ticket.reference} is closed: open a new ticket to write to the customer.",
            code="ticket_closed",
        )
    contradicted = claims_check(body) if claims_check is not None else []
    if contradicted and not confirm_claims:
        raise ClaimsContradictState(
            "The reply says something about a refund that the records contradict: "
            + "; ".join(
                dict.fromkeys(
                    f"“{claim['text']}” ({_actual_in_words(claim)})" for claim in contradicted
                )
            )
            + ". Correct it, or confirm that it should be sent as it is.",
            extra={"claims": contradicted},
        )
    message = TicketMessage.objects.create(
        ticket=ticket,
        author_kind=TicketMessage.AuthorKind.AGENT,
        author=author,
        body=body,
        visibility=V.PUBLIC,
        delivery=D.QUEUED,
        message_id=mail.new_message_id(ticket),
    )
    if contradicted:
        _event(
            ticket,
            TicketEvent.Type.CLAIMS_CONFIRMED,
            author,
            message=message.pk,
            claims=contradicted,
        )
    attachments.attach(message, files)
    _touch(ticket)
    _stamp_first_response(ticket, message.created_at)
    changes.message_created(message)
    enqueue_on_commit(SEND_REPLY_TASK, message.pk)
    return message


def _stamp_first_response(ticket: Ticket, at: datetime) -> None:
    """The first public reply meets the first-response target (DESIGN §15): stamped once."""
    if Ticket.objects.filter(pk=ticket.pk, first_responded_at__isnull=True).update(
        first_responded_at=at
    ):
        ticket.first_responded_at = at


def _statuses_in_words(actual: str) -> str:
    """ "pending_approval, succeeded" as the desk says statuses: "pending approval, refunded"."""
    return ", ".join(
        RefundStatus(status).label.lower() if status in RefundStatus.values else status
        for status in (part.strip() for part in actual.split(","))
    )


def _where(claim: dict) -> str:
    return f"order {claim['order_id']}" if claim.get("order_id") else "this ticket"


def _actual_in_words(claim: dict) -> str:
    if claim["actual"] == "not_ordered":
        return "it is not one of the customer's orders"
    where = _where(claim)
    if claim["actual"] == "none":
        return f"{where} has no refund request"
    return f"the refund on {where} is {_statuses_in_words(claim['actual'])}"


def claims_in_words(claims: Sequence[dict]) -> list[dict]:
    """Each contradicted claim once, as the ticket page lists it: its words (`text`), where
    (`where`), what the records hold (`actual`, and `words`, its statuses as the desk says
    them). A sentence two readers caught is one claim to the agent."""
    lines: dict[tuple, dict] = {}
    for claim in claims:
        line = {
            "text": claim["text"],
            "where": _where(claim),
            "actual": claim["actual"],
            "words": _statuses_in_words(claim["actual"]),
        }
        lines.setdefault(tuple(line.values()), line)
    return list(lines.values())


@dataclass(frozen=True)
class DeliveryAttempt:
    delivery: str  # the message's delivery status after this attempt
    error: str = ""  # why the mail server did not take it (the attempt may be retried)
    attempts: int = 0  # attempts made since the reply was (re)queued


def reply_send(*, message_pk: int) -> DeliveryAttempt:
    """Hand one queued reply to the mail server. Where the database can lock one row
    (PostgreSQL), the reply's row stays locked while it is sent, so a redelivered task waits and
    then finds it sent. SQLite can only lock the whole file: holding that through a slow mail
    server would stop every other write of the desk, so there the reply is read, sent, and marked
    sent only if it is still queued. A crash between the server taking it and the commit sends it
    again on retry, under the same Message-ID (at least once, never lost)."""
    if not connection.features.has_select_for_update:
        return _deliver(_reply(message_pk))
    with transaction.atomic():
        # Only the message's row: the ticket stays writable while the mail server talks, and
        # PostgreSQL cannot lock the nullable side of the author join anyway.
        return _deliver(_reply(message_pk, select_for_update=True))


def _reply(message_pk: int, *, select_for_update: bool = False) -> TicketMessage:
    messages = TicketMessage.objects.select_related("ticket__customer", "author")
    if select_for_update:
        messages = messages.select_for_update(of=("self",))
    return messages.get(pk=message_pk)


def _deliver(message: TicketMessage) -> DeliveryAttempt:
    if message.delivery != D.QUEUED:
        return DeliveryAttempt(message.delivery)
    attempts = message.delivery_attempts + 1
    queued = TicketMessage.objects.filter(pk=message.pk, delivery=D.QUEUED)
    try:
        mail.reply_email(message).send()
    except mail.MAIL_SERVER_ERRORS as exc:
        error = mail.describe_error(exc)
        queued.update(delivery_attempts=attempts, delivery_error=error)
        logger.warning("Reply %s to %s not sent: %s", message.pk, message.ticket, error)
        return DeliveryAttempt(D.QUEUED, error, attempts)
    message.sent_at = timezone.now()
    with transaction.atomic():
        if not queued.update(
            delivery=D.SENT, delivery_attempts=attempts, delivery_error="", sent_at=message.sent_at
        ):
            return DeliveryAttempt(D.SENT)  # another delivery of the task recorded it first
        _event(message.ticket, TicketEvent.Type.REPLY_SENT, message.author, message=message.pk)
        changes.message_delivery(message=message, from_delivery=D.QUEUED, to_delivery=D.SENT)
    return DeliveryAttempt(D.SENT, attempts=attempts)


def reply_schedule_retry(*, message_pk: int, at: datetime) -> None:
    """Record when the next attempt is due, so the sweep can tell a lost retry from a waiting
    one."""
    TicketMessage.objects.filter(pk=message_pk, delivery=D.QUEUED).update(next_attempt_at=at)


@transaction.atomic
def reply_give_up(*, message_pk: int, error: str) -> bool:
    """The retries are spent: the reply is marked failed (the agent can retry it)."""
    message = TicketMessage.objects.select_for_update().get(pk=message_pk)
    if message.delivery != D.QUEUED:
        return False
    TicketMessage.objects.filter(pk=message.pk).update(delivery=D.FAILED, delivery_error=error)
    _event(message.ticket, TicketEvent.Type.REPLY_FAILED, None, message=message.pk, error=error)
    changes.message_delivery(
        message=message, from_delivery=D.QUEUED, to_delivery=D.FAILED, error=error
    )
    return True


@transaction.atomic
def reply_retry(*, message: TicketMessage, actor: User) -> TicketMessage:
    """An agent sends a failed reply again: failed → queued, and a new delivery task."""
    _require(
        support_role(actor) in (Role.AGENT, Role.SUPERVISOR),
        "Only agents and supervisors send replies.",
    )
    # A fresh round of attempts, due now.
    updated = TicketMessage.objects.filter(pk=message.pk, delivery=D.FAILED).update(
        delivery=D.QUEUED, delivery_error="", delivery_attempts=0, next_attempt_at=timezone.now()
    )
    if not updated:
        raise Conflict("Only a reply whose delivery failed can be retried.", code="not_failed")
    enqueue_on_commit(SEND_REPLY_TASK, message.pk)
    message.refresh_from_db()
    changes.message_delivery(message=message, from_delivery=D.FAILED, to_delivery=D.QUEUED)
    return message


def replies_stalled(*, grace: timedelta = timedelta(minutes=5)) -> list[int]:
    """Queued replies whose task was lost: never tried long after they were written (a broker
    that was down at commit), or long past their next attempt (a retry that was never
    delivered). A reply waiting out its backoff is left alone."""
    cutoff = timezone.now() - grace
    stalled = TicketMessage.objects.filter(delivery=D.QUEUED).filter(
        Q(next_attempt_at__isnull=True, created_at__lt=cutoff) | Q(next_attempt_at__lt=cutoff)
    )
    return list(stalled.values_list("pk", flat=True))


# --- status, assignment, escalation -------------------------------------------------------


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


# --- tags and CC (DESIGN §15) ------------------------------------------------------------

TAG_MAX_LENGTH = 50
TAGS_PER_CHANGE = 20
# Letters and digits in any script, and a few joiners; no leading or trailing punctuation.
TAG_NAME = re.compile(r"^\w(?:[\w .:/+-]*\w)?$")
CC_MAX = 10


def clean_tag_names(names: Sequence[str], *, field: str) -> list[str]:
    """Each name trimmed, inner spaces collapsed, duplicates (ignoring case) dropped;
    ApplicationError naming `field` for a bad one (bulk changes check a body with it before
    changing any ticket)."""
    if len(names) > TAGS_PER_CHANGE:
        raise ApplicationError(
            f"At most {TAGS_PER_CHANGE} tags in one change.",
            code="invalid",
            extra={"fields": {field: [f"At most {TAGS_PER_CHANGE} tags."]}},
        )
    cleaned: dict[str, str] = {}
    for name in names:
        name = " ".join(name.split())
        if not name or len(name) > TAG_MAX_LENGTH or not TAG_NAME.match(name):
            raise ApplicationError(
                f"{name[:60]!r} is not a tag name: 1 to {TAG_MAX_LENGTH} letters, digits, "
                "spaces or . : / + - _, starting and ending with a letter or digit.",
                code="invalid_tag",
                extra={"fields": {field: ["Not a tag name."]}},
            )
        cleaned.setdefault(name.lower(), name)
    return list(cleaned.values())


def tag_for_name(name: str) -> Tag:
    """The tag called `name` in any case, made if there is none (the first spelling stays)."""
    tag = Tag.objects.filter(name__iexact=name).first()
    if tag is not None:
        return tag
    try:
        with transaction.atomic():
            return Tag.objects.create(name=name)
    except IntegrityError:
        # Made at the same moment by someone else: tag_name_unique_ignoring_case.
        return Tag.objects.get(name__iexact=name)


@transaction.atomic
def ticket_change_tags(
    *, ticket: Ticket, actor: User, add: Sequence[str] = (), remove: Sequence[str] = ()
) -> Ticket:
    """Add and remove tags (names in any case); one tags_changed event when anything changed.
    A name in both lists is left as it is, so nothing depends on which is applied first."""
    _require(support_role(actor) is not None, "Only interns, agents and supervisors tag tickets.")
    add, remove = clean_tag_names(add, field="add"), clean_tag_names(remove, field="remove")
    both = {name.lower() for name in add} & {name.lower() for name in remove}
    add = [name for name in add if name.lower() not in both]
    remove = [name for name in remove if name.lower() not in both]
    # Two people tagging at once: each change starts where the other ended.
    Ticket.objects.select_for_update().filter(pk=ticket.pk).first()
    current = {tag.name.lower(): tag for tag in ticket.tags.all()}
    added = [tag_for_name(name) for name in add if name.lower() not in current]
    removed = [current[name.lower()] for name in remove if name.lower() in current]
    if not added and not removed:
        return ticket
    ticket.tags.add(*added)
    ticket.tags.remove(*removed)
    _touch(ticket)
    _event(
        ticket,
        TicketEvent.Type.TAGS_CHANGED,
        actor,
        added=[tag.name for tag in added],
        removed=[tag.name for tag in removed],
    )
    return ticket


def clean_cc(
    addresses: list[str], *, customer: Customer | None = None, truncate: bool = False
) -> list[str]:
    """Valid, distinct addresses (equal as DESIGN invariant 11 says), the customer's own left
    out (they get the reply anyway). ApplicationError naming the first bad one, or for more
    than CC_MAX unless `truncate` (inbound mail: the first CC_MAX are kept). An address at an
    IP or a bare host name is refused, or with `truncate` left out: a sender's CC line is not
    a reason to refuse their email."""
    from django.core.exceptions import ValidationError
    from django.core.validators import validate_email

    kept: dict[str, str] = {}
    for address in addresses:
        address = address.strip()
        if at_a_host_not_a_domain(address):
            if truncate:
                continue
            raise ApplicationError(
                host_refusal(address),
                code="invalid_address",
                extra={"fields": {"cc": [host_refusal(address)]}},
            )
        try:
            validate_email(address)
            key = email_key(address)
        except (ValidationError, BadAddress):
            raise ApplicationError(
                f"{address[:100]!r} is not an email address.",
                code="invalid_address",
                extra={"fields": {"cc": [f"Not an email address: {address[:100]}"]}},
            ) from None
        if customer is not None and key == customer.email_key:
            continue
        kept.setdefault(key, address)
    if len(kept) > CC_MAX and not truncate:
        raise ApplicationError(
            f"At most {CC_MAX} addresses in CC.",
            code="invalid",
            extra={"fields": {"cc": [f"At most {CC_MAX} addresses."]}},
        )
    return list(kept.values())[:CC_MAX]


@transaction.atomic
def ticket_set_cc(*, ticket: Ticket, cc: list[str], actor: User) -> Ticket:
    """Replace the CC list: who is copied on the public replies from now on."""
    _require(
        support_role(actor) in (Role.AGENT, Role.SUPERVISOR),
        "Only agents and supervisors change who is copied on replies.",
    )
    current = Ticket.objects.select_for_update().select_related("customer").get(pk=ticket.pk)
    cc = clean_cc(cc, customer=current.customer)
    if cc == list(current.cc):
        return ticket
    _touch(ticket, cc=cc)
    _event(ticket, TicketEvent.Type.CC_CHANGED, actor, **{"from": current.cc, "to": cc})
    return ticket


def _add_cc(ticket: Ticket, addresses: list[str]) -> None:
    """Inbound mail's CC joins the ticket's (nobody is dropped by a later email)."""
    if not addresses:
        return
    current = Ticket.objects.select_related("customer").get(pk=ticket.pk)
    merged = clean_cc([*current.cc, *addresses], customer=current.customer, truncate=True)
    if merged != list(current.cc):
        _touch(ticket, cc=merged)


# --- new tickets and customer mail ---------------------------------------------------------


def _highest_number() -> int:
    number = Cast(Substr("reference", 5), IntegerField())
    return Ticket.objects.aggregate(n=Max(number))["n"] or FIRST_REFERENCE_NUMBER - 1


def _take_number() -> int:
    """The next ticket number. The counter's row stays locked until the caller's transaction
    ends: tickets opened at the same time take their numbers one after another."""
    number = _moved_counter()
    if number is not None:
        return number
    try:
        with transaction.atomic():
            # No counter yet (a new database, or one emptied by a test): it starts after the
            # highest reference.
            return TicketCounter.objects.create(pk=1, last=_highest_number() + 1).last
    except IntegrityError:  # another new ticket started it first: it is there now
        number = _moved_counter()
        assert number is not None
        return number


def _moved_counter() -> int | None:
    """The counter moved on by one (None: there is none yet). The UPDATE locks its row, and
    the read sees this transaction's own number."""
    counter = TicketCounter.objects.filter(pk=1)
    with transaction.atomic():
        if not counter.update(last=F("last") + 1):
            return None
        return counter.values_list("last", flat=True).get()


def _numbered_ticket(**fields: Any) -> Ticket:
    """A new ticket under the next number from the counter."""
    reference = f"TCK-{_take_number()}"
    try:
        with transaction.atomic():
            return Ticket.objects.create(reference=reference, **fields)
    except IntegrityError:
        if not Ticket.objects.filter(reference=reference).exists():
            raise
    # The number was given outside the counter (the demo's tickets, tickets imported with their
    # references): the counter moves past the highest, its row still held.
    number = _highest_number() + 1
    TicketCounter.objects.filter(pk=1).update(last=number)
    return Ticket.objects.create(reference=f"TCK-{number}", **fields)


def _order_mentioned(customer: Customer, *texts: str) -> Order | None:
    """The first of this customer's orders named in the text (never another customer's)."""
    for order_id in ORDER_ID_IN_TEXT.findall(" ".join(texts)):
        order = Order.objects.filter(order_id=order_id, customer=customer).first()
        if order is not None:
            return order
    return None


@transaction.atomic
def ticket_open(
    *,
    customer: Customer,
    subject: str,
    body: str,
    order: Order | None = None,
    opened_by: User | None = None,
    message_id: str | None = None,
    priority: str = Ticket.Priority.NORMAL,
) -> Ticket:
    """A new ticket with the customer's first message (from their email, or recorded by an
    agent from a call or chat), numbered by the counter: see _take_number."""
    if opened_by is not None:
        _require(support_role(opened_by) is not None, "Only support staff open tickets.")
    if order is not None and order.customer_id != customer.pk:
        raise ApplicationError(
            f"Order {order.order_id} is not {customer.name}'s.",
            code="order_not_customers",
            extra={"fields": {"order_id": ["Not this customer's order."]}},
        )
    subject = " ".join(subject.split())[:200] or "(no subject)"
    order = order or _order_mentioned(customer, subject, body)
    now = timezone.now()
    first_due, resolution_due = sla.due_times(priority=priority, opened_at=now)
    ticket = _numbered_ticket(
        customer=customer,
        subject=subject,
        order=order,
        priority=priority,
        first_response_due_at=first_due,
        resolution_due_at=resolution_due,
    )
    changes.ticket_opened(ticket)
    _event(ticket, TicketEvent.Type.CREATED, opened_by, via="desk" if opened_by else "email")
    ticket_post_message(
        ticket=ticket,
        author_kind=TicketMessage.AuthorKind.CUSTOMER,
        author=opened_by,
        body=body,
        visibility=V.PUBLIC,
        message_id=message_id,
    )
    return ticket


def customer_for_email(*, email: str, name: str = "") -> Customer:
    """The customer with this address (DESIGN invariant 11: equal after lower-casing ASCII and
    IDNA-encoding the domain, orders/addresses.py; nothing looser), or a new one named `name`,
    else the address's local part. BadAddress for a domain that cannot be encoded."""
    email = email.strip()
    key = email_key(email)
    customer = Customer.objects.filter(email_key=key).first()
    if customer is not None:
        return customer
    try:
        with transaction.atomic():
            return Customer.objects.create(email=email, name=name.strip() or email.split("@")[0])
    except IntegrityError:
        # Created by a simultaneous email from the same sender.
        customer = Customer.objects.filter(email_key=key).first()
        if customer is None:
            raise
        return customer


@dataclass(frozen=True)
class Inbound:
    ticket: Ticket
    created: bool  # a new ticket was opened for this email
    duplicate: bool = False  # this message_id was received before; nothing changed


def ticket_receive_email(
    *,
    sender: str,
    name: str,
    subject: str,
    body: str,
    message_id: str,
    cc: Sequence[str] = (),
    files: Sequence[Upload] = (),
) -> Inbound:
    """A customer's email: appended to their own ticket named `[TCK-…]` in the subject (which
    reopens it if pending or solved), otherwise a new ticket. Idempotent on `message_id`: the
    same email delivered twice is one message. Its files are checked before anything is
    written: one too large refuses the whole email (413), nothing kept."""
    message_id = message_id.strip()
    if not mail.is_header_safe(message_id):
        # It threads our replies (In-Reply-To): a space or line break there would break, or
        # add to, the headers of every reply on the ticket.
        raise ApplicationError(
            "message_id must be the email's Message-ID: visible ASCII, no spaces.",
            code="invalid",
            extra={"fields": {"message_id": ["Not a Message-ID."]}},
        )
    attachments.check_uploads(files, "attachments")
    seen = _already_received(message_id)
    if seen is not None:
        return seen
    try:
        with attachment_files.atomic():
            inbound = _receive(sender, name, subject, body, message_id)
            _add_cc(inbound.ticket, list(cc))
            if files:
                attachments.attach(TicketMessage.objects.get(message_id=message_id), files)
            return inbound
    except IntegrityError:
        seen = _already_received(message_id)  # the same email, delivered twice at once
        if seen is None:
            raise
        return seen


def _already_received(message_id: str) -> Inbound | None:
    message = TicketMessage.objects.select_related("ticket").filter(message_id=message_id).first()
    if message is None:
        return None
    return Inbound(message.ticket, created=False, duplicate=True)


def _receive(sender: str, name: str, subject: str, body: str, message_id: str) -> Inbound:
    customer = customer_for_email(email=sender, name=name)
    ticket = _customers_open_ticket_in(subject, customer)
    if ticket is None:
        return Inbound(
            ticket_open(customer=customer, subject=subject, body=body, message_id=message_id),
            created=True,
        )
    ticket_post_message(
        ticket=ticket,
        author_kind=TicketMessage.AuthorKind.CUSTOMER,
        body=body,
        visibility=V.PUBLIC,
        message_id=message_id,
    )
    _event(ticket, TicketEvent.Type.CUSTOMER_REPLIED, None)
    if ticket.status in REOPENED_BY_CUSTOMER:
        ticket_set_status(ticket=ticket, to_status=S.OPEN, reason="customer replied")
    return Inbound(ticket, created=False)


def _customers_open_ticket_in(subject: str, customer: Customer) -> Ticket | None:
    """The first ticket the subject names that is this customer's and not closed; a ticket
    merged into another stands for the one it was merged into (DESIGN §19). A sender naming
    someone else's ticket gets a ticket of their own: nothing lands on, or reveals, another's.
    Locked, so a status change and this email do not cross."""
    for reference in TICKET_REFERENCE_IN_SUBJECT.findall(subject):
        ticket = _merged_target(reference, customer)
        if ticket is not None and ticket.status != S.CLOSED:
            return ticket
    return None


# Merges chain (A into B, later B into C); a longer chain than this is not followed.
MERGE_CHAIN_LIMIT = 20


def _merged_target(reference: str, customer: Customer) -> Ticket | None:
    """The customer's ticket of that reference, or the ticket it was (in the end) merged
    into, locked. Merges only join one customer's tickets, so the chain stays theirs."""
    tickets = Ticket.objects.select_for_update().filter(customer=customer)
    ticket = tickets.filter(reference=reference).first()
    for _ in range(MERGE_CHAIN_LIMIT):
        if ticket is None or ticket.merged_into_id is None:
            return ticket
        ticket = tickets.filter(pk=ticket.merged_into_id).first()
    return None
