"""Thin Celery tasks: take an id, let the service re-check the state, safe to run twice."""

import random
from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from tickets import sla
from tickets.models import TicketMessage
from tickets.services import (
    replies_stalled,
    reply_give_up,
    reply_schedule_retry,
    reply_send,
)

MAX_BACKOFF_S = 3600


@shared_task(bind=True, max_retries=None)
def send_reply(self, message_pk: int) -> str:
    """Enqueued on commit by ticket_write. A mail server that is down keeps the reply queued
    and retries with exponential backoff (full jitter); after EMAIL_SEND_RETRIES attempts the
    reply is marked failed and an agent can send it again. Nothing is lost either way."""
    attempt = reply_send(message_pk=message_pk)
    if not attempt.error:
        return attempt.delivery
    # Counted in the database, so a task the sweep re-sent does not start the count again.
    if attempt.attempts >= settings.EMAIL_SEND_RETRIES:
        reply_give_up(message_pk=message_pk, error=attempt.error)
        return TicketMessage.Delivery.FAILED
    ceiling = min(settings.EMAIL_RETRY_BASE_S * 2 ** (attempt.attempts - 1), MAX_BACKOFF_S)
    countdown = random.uniform(0, ceiling)
    reply_schedule_retry(message_pk=message_pk, at=timezone.now() + timedelta(seconds=countdown))
    raise self.retry(countdown=countdown)


@shared_task
def resend_stalled_replies() -> int:
    """Periodic (beat): queued replies whose task or retry was lost (see replies_stalled)."""
    stalled = replies_stalled()
    for message_pk in stalled:
        send_reply.delay(message_pk)
    return len(stalled)


@shared_task
def record_sla_breaches() -> int:
    """Periodic (beat): one sla.breached event per SLA target that went past due."""
    return sla.record_breaches()
