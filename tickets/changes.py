"""The live desk's writes (DESIGN §14): a ticket's changes in order, and the notifications they
bring to the people concerned.

Every change of a ticket the desk's pages show is appended here as a `TicketChange`, in the
transaction of the change itself, numbered by the ticket's counter (`last_change_seq`) and
announced to the web processes once it commits (config/live.py: the streams of the key
`ticket:<pk>` wake up). The notifications a change brings are written in the same
transaction, and announced on `user:<pk>` so the recipient's header count moves at once.

Who is told what:
* `ticket.assigned`: the new assignee (unless they assigned it to themselves);
* `message.created` from the customer: the ticket's assignee;
* `ticket.escalated`: every supervisor when raised; when handled, whoever raised it and the
  assignee;
* `refund.status` succeeded or failed (settled), or rejected: the ticket's assignee;
* `satisfaction.rated` (the customer rated the ticket, or commented on their rating): the
  ticket's assignee.
Nobody is told of their own doing.
"""

from collections.abc import Iterable
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from config.db import Update, update_returning, update_then_insert
from config.live import announce_in_transaction, notify_in_transaction_sql
from config.refund_statuses import RefundStatus
from config.roles import GROUP_FOR_ROLE, Role
from tickets.models import Notification, Ticket, TicketChange, TicketEvent, TicketMessage

T = TicketChange.Type
N = Notification.Kind

REFUND_NOTIFIED = {
    RefundStatus.SUCCEEDED: (N.REFUND_SETTLED, "refunded"),
    RefundStatus.FAILED: (N.REFUND_SETTLED, "failed"),
    RefundStatus.REJECTED: (N.REFUND_REJECTED, "rejected"),
}


# The key list streams follow to hear of tickets opened after they were drawn.
NEW_TICKETS_KEY = "tickets:new"


def ticket_key(ticket_id: int) -> str:
    """The key a ticket's streams follow (config/live.py)."""
    return f"ticket:{ticket_id}"


def user_key(user_id: int) -> str:
    """The key a user's notification streams follow."""
    return f"user:{user_id}"


def message_data(message: TicketMessage) -> dict[str, Any]:
    """A message as the ticket API shows it (DESIGN §9's message shape)."""
    return {
        "id": message.pk,
        "author_kind": message.author_kind,
        "author": message.author.get_username() if message.author else None,
        "body": message.body,
        "visibility": message.visibility,
        "delivery": message.delivery,
        "created_at": message.created_at.isoformat(),
    }


# No savepoint of its own: a failure here rolls back the change it reports with it.
@transaction.atomic(savepoint=False)
def ticket_change_append(
    *, ticket_id: int, type: str, data: dict[str, Any], actor: User | None = None
) -> TicketChange:
    """Append the ticket's next change and the notifications it brings. Call it inside the
    transaction of the change: the ticket's row stays locked (its counter moved on) until that
    commits, so changes of one ticket commit one after another, in seq order. On PostgreSQL
    the counter, the row and its `NOTIFY` are one statement."""
    change = TicketChange(ticket_id=ticket_id, type=type, data=data)
    counter = Update(
        Ticket, where={"pk": ticket_id}, add={"last_change_seq": 1}, returning="last_change_seq"
    )
    key = ticket_key(ticket_id)
    notify = notify_in_transaction_sql(key=key, seq_sql="held.last_change_seq")
    if notify is not None:
        change.seq = 0  # an offset from the counter as the UPDATE leaves it
        seq = update_then_insert(
            counter, inserts=[[change]], relative={TicketChange: "seq"}, also=[notify]
        )
    else:
        seq = update_returning(counter)
        if seq is not None:
            change.seq = seq
            change.save(force_insert=True)
            announce_in_transaction(key=key, seq=seq)
    if seq is None:
        raise Ticket.DoesNotExist(f"no ticket {ticket_id}")
    change.seq = seq
    _notify_about(change, actor)
    return change


def ticket_opened(ticket: Ticket) -> None:
    """Tell the lists that a ticket was opened (their tickets' own keys do not cover it)."""
    announce_in_transaction(key=NEW_TICKETS_KEY, seq=ticket.pk)


def message_created(message: TicketMessage) -> TicketChange:
    """`message.created` for a new message of its ticket."""
    return ticket_change_append(
        ticket_id=message.ticket_id,
        type=T.MESSAGE_CREATED,
        data=message_data(message),
        actor=message.author,
    )


def message_delivery(
    *, message: TicketMessage, from_delivery: str, to_delivery: str, error: str = ""
) -> TicketChange:
    """`message.delivery`: a reply went queued → sent | failed (or failed → queued, retried)."""
    sent_at = message.sent_at.isoformat() if to_delivery == "sent" and message.sent_at else None
    return ticket_change_append(
        ticket_id=message.ticket_id,
        type=T.MESSAGE_DELIVERY,
        data={
            "id": message.pk,
            "delivery": to_delivery,
            "from": from_delivery,
            "to": to_delivery,
            "error": error,
            "sent_at": sent_at,
        },
    )


# --- notifications ------------------------------------------------------------------------


def details_changed(*, ticket_id: int, what: str) -> TicketChange:
    """`ticket.details`: the priority, tags, CC or an SLA target (`what`) changed, for open
    pages to redraw the panel that shows them. Nobody is notified."""
    return ticket_change_append(ticket_id=ticket_id, type=T.DETAILS, data={"changed": what})


def _may_tell(change: TicketChange) -> bool:
    """Whether `change` may tell anyone anything: the others cost no read of the ticket."""
    data = change.data
    if change.type == T.MESSAGE_CREATED:
        return (
            data.get("author_kind") == TicketMessage.AuthorKind.CUSTOMER
            and data.get("visibility") == TicketMessage.Visibility.PUBLIC
        )
    if change.type == T.TICKET_ASSIGNED:
        return bool(data.get("to"))
    if change.type == T.REFUND_STATUS:
        return data.get("status") in REFUND_NOTIFIED
    return change.type in (T.TICKET_ESCALATED, T.SATISFACTION_RATED)


def _notify_about(change: TicketChange, actor: User | None) -> None:
    if not _may_tell(change):
        return
    ticket = Ticket.objects.select_related("customer", "assignee").get(pk=change.ticket_id)
    recipients, kind, text = _who_is_told(change, ticket)
    targets = {user for user in recipients if user is not None and user.is_active}
    if actor is not None:
        targets = {user for user in targets if user.pk != actor.pk}
    if not targets:
        return
    notifications = [
        Notification(
            recipient=user,
            ticket=ticket,
            kind=kind,
            text=text[: Notification._meta.get_field("text").max_length],
            actor=actor,
            data={"seq": change.seq, "type": change.type, **change.data},
        )
        for user in sorted(targets, key=lambda user: user.pk)
    ]
    Notification.objects.bulk_create(notifications)
    for notification in notifications:
        announce_in_transaction(key=user_key(notification.recipient_id), seq=notification.pk or 0)


def _who_is_told(change: TicketChange, ticket: Ticket) -> tuple[Iterable[User | None], str, str]:
    """The recipients, kind and words of the notification `change` brings (none: no one)."""
    data, ref = change.data, ticket.reference
    if change.type == T.TICKET_ASSIGNED and data.get("to"):
        by = f" by {data['by']}" if data.get("by") else ""
        return [ticket.assignee], N.ASSIGNED, f"{ref} was assigned to you{by}: {ticket.subject}"
    if (
        change.type == T.MESSAGE_CREATED
        and data.get("author_kind") == TicketMessage.AuthorKind.CUSTOMER
        and data.get("visibility") == TicketMessage.Visibility.PUBLIC
    ):
        return [ticket.assignee], N.CUSTOMER_REPLIED, f"{ticket.customer.name} replied on {ref}"
    if change.type == T.TICKET_ESCALATED and data.get("escalated"):
        return _supervisors(), N.ESCALATED, escalation_raised_text(ref, data.get("note", ""))
    if change.type == T.TICKET_ESCALATED:
        told = [ticket.assignee, *_escalated_by(ticket)]
        by = f" by {data['by']}" if data.get("by") else ""
        return told, N.ESCALATION_HANDLED, f"The escalation of {ref} was handled{by}"
    if change.type == T.REFUND_STATUS and data.get("status") in REFUND_NOTIFIED:
        kind, words = REFUND_NOTIFIED[data["status"]]
        amount = f"{data.get('amount')} {data.get('currency', '')}".strip()
        return [ticket.assignee], kind, f"The refund of {amount} on {ref} was {words}"
    if change.type == T.SATISFACTION_RATED:
        comment = f": “{data['comment']}”" if data.get("comment") else ""
        return (
            [ticket.assignee],
            N.SATISFACTION_RATED,
            f"{ticket.customer.name} rated {ref} {data.get('rating')}{comment}",
        )
    return [], "", ""


def escalation_raised_text(reference: str, note: str) -> str:
    """The words of an `escalated` notification: the note, when it is still kept."""
    return f"{reference} was escalated: {note}" if note else f"{reference} was escalated"


def _supervisors() -> list[User]:
    group = GROUP_FOR_ROLE[Role.SUPERVISOR]
    return list(get_user_model().objects.filter(is_active=True, groups__name=group).distinct())


def _escalated_by(ticket: Ticket) -> list[User]:
    """Whoever raised the ticket's latest escalation."""
    raised = (
        TicketEvent.objects.filter(ticket=ticket, type=TicketEvent.Type.ESCALATED)
        .select_related("actor")
        .order_by("-created_at", "-id")
        .first()
    )
    return [raised.actor] if raised is not None and raised.actor is not None else []


def notifications_mark_read(*, user: User, ids: list[int] | None = None) -> int:
    """Mark `user`'s notifications `ids` read (all of theirs with None); others' are never
    touched. Returns how many were unread and are now read."""
    unread = Notification.objects.filter(recipient=user, read_at__isnull=True)
    if ids is not None:
        unread = unread.filter(pk__in=ids)
    with transaction.atomic():
        count = unread.update(read_at=timezone.now())
        if count:
            announce_in_transaction(key=user_key(user.pk), seq=0)
    return count


def ticket_mark_seen(*, ticket: Ticket, user: User) -> None:
    """The assignee opened the ticket: what the customer wrote until now is seen."""
    if ticket.assignee_id is not None and ticket.assignee_id == user.pk:
        Ticket.objects.filter(pk=ticket.pk, assignee=user).update(assignee_seen_at=timezone.now())
