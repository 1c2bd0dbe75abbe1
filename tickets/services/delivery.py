"""Sending a public reply by email: one attempt (the reply's row locked where the database can
lock one), the next attempt's time, giving up after the retries (failed), an agent's retry of a
failed reply, and the queued replies whose task was lost. The Celery tasks in tickets/tasks.py
drive these; the reply itself is written in tickets/services/messages.py."""

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.contrib.auth.models import User
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from config.celery import enqueue_on_commit
from config.errors import Conflict
from config.roles import Role, support_role
from tickets import changes, mail
from tickets.models import TicketEvent, TicketMessage
from tickets.services.shared import _event, _require

logger = logging.getLogger(__name__)

D = TicketMessage.Delivery

SEND_REPLY_TASK = "tickets.tasks.send_reply"


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
