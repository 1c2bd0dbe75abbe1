"""Thin Celery tasks: take an id, let the service re-check the state, safe to run twice."""

import random
from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from tickets import satisfaction, sla
from tickets.models import TicketMessage
from tickets.services.delivery import (
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
    countdown = _backoff_s(attempt.attempts)
    reply_schedule_retry(message_pk=message_pk, at=timezone.now() + timedelta(seconds=countdown))
    raise self.retry(countdown=countdown)


@shared_task(bind=True, max_retries=None)
def send_satisfaction_survey(self, survey_pk: int) -> bool:
    """Enqueued on commit by a solve (tickets/satisfaction.py). Retried as replies are; after
    EMAIL_SEND_RETRIES attempts the survey stays unsent (nothing to mark: it only expires)."""
    sending = satisfaction.survey_send(survey_pk=survey_pk)
    if not sending.error or sending.attempts >= settings.EMAIL_SEND_RETRIES:
        return sending.sent
    raise self.retry(countdown=_backoff_s(sending.attempts))


def _backoff_s(attempts: int) -> float:
    """Exponential backoff with full jitter: a random wait up to EMAIL_RETRY_BASE_S·2^(n-1)
    after the n-th attempt, at most an hour."""
    return random.uniform(0, min(settings.EMAIL_RETRY_BASE_S * 2 ** (attempts - 1), MAX_BACKOFF_S))


@shared_task
def resend_stalled_replies() -> int:
    """Periodic (beat): queued replies whose task or retry was lost (see replies_stalled), and
    satisfaction surveys whose task never ran."""
    stalled = replies_stalled()
    for message_pk in stalled:
        send_reply.delay(message_pk)
    surveys = satisfaction.surveys_stalled()
    for survey_pk in surveys:
        send_satisfaction_survey.delay(survey_pk)
    return len(stalled) + len(surveys)


@shared_task
def record_sla_breaches() -> int:
    """Periodic (beat): one sla.breached event per SLA target that went past due."""
    return sla.record_breaches()
