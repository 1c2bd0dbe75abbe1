"""Thin Celery tasks: take an id, let the service re-check the state, safe to run twice."""

import random

from celery import shared_task
from django.conf import settings

from tickets.services import replies_stalled, reply_give_up, reply_send


@shared_task(bind=True, max_retries=None)
def send_reply(self, message_pk: int) -> str:
    """Enqueued on commit by ticket_write. A mail server that is down keeps the reply queued
    and retries with exponential backoff (full jitter); after EMAIL_SEND_RETRIES attempts the
    reply is marked failed and an agent can send it again. Nothing is lost either way."""
    attempt = reply_send(message_pk=message_pk)
    if not attempt.error:
        return attempt.delivery
    if self.request.retries >= settings.EMAIL_SEND_RETRIES:
        reply_give_up(message_pk=message_pk, error=attempt.error)
        return "failed"
    ceiling = min(settings.EMAIL_RETRY_BASE_S * 2**self.request.retries, 3600)
    raise self.retry(countdown=random.uniform(0, ceiling))


@shared_task
def resend_stalled_replies() -> int:
    """Periodic (beat): queued replies whose task never ran (the broker was down at commit)."""
    stalled = replies_stalled()
    for message_pk in stalled:
        send_reply.delay(message_pk)
    return len(stalled)
