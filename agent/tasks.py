"""Celery tasks of the assistant: one task = one step of a run (DESIGN §7)."""

import logging

from celery import shared_task
from django.db import close_old_connections
from django.utils import timezone

from agent import run_selectors
from agent.metrics import count_step
from agent.runtime import run_step
from config.connections import DISCONNECTS
from config.log_context import log_context

logger = logging.getLogger(__name__)


@shared_task(bind=True, max_retries=run_step.MODEL_RETRIES)
def advance_run(
    self, run_id: str, expected_version: int | None = None, owner: str | None = None
) -> str:
    """Run one step, then enqueue the next, as the `owner` the step hands the run to. A
    second delivery of the same step finds the lease taken or the version moved on, and does
    nothing."""
    with log_context(run_id=run_id):
        return _advance(self, run_id, expected_version, owner)


def _advance(task, run_id: str, expected_version: int | None, owner: str | None) -> str:
    attempt = task.request.retries or 0
    try:
        outcome = run_step.advance(
            run_id=run_id, expected_version=expected_version, attempt=attempt, owner=owner
        )
    except DISCONNECTS as exc:
        # The connection dropped before the step held the run (or while handing it back): the
        # same delivery is retried on a new connection, with the same bounded budget.
        count_step(run_step.StepKind.RETRY)
        close_old_connections()
        delay = run_step.DATABASE_RETRY_BACKOFF_S[
            min(attempt, len(run_step.DATABASE_RETRY_BACKOFF_S) - 1)
        ]
        raise task.retry(exc=exc, countdown=delay) from exc
    except Exception:
        count_step("error")
        raise
    count_step(outcome.kind)
    # One line per step, naming its run (and the request that started it) by the log context.
    logger.info("Assistant step: %s", outcome.kind.value)
    if outcome.kind == run_step.StepKind.RETRY:
        raise task.retry(
            countdown=outcome.retry_in,
            kwargs={"run_id": run_id, "expected_version": outcome.version},
            args=(),
        )
    if outcome.kind == run_step.StepKind.CONTINUE:
        # The next step stays on the queue this one came from (as a retry does).
        queue = (task.request.delivery_info or {}).get("routing_key")
        advance_run.apply_async(
            (run_id,),
            {"expected_version": outcome.version, "owner": outcome.owner},
            queue=queue,
        )
    return outcome.kind.value


@shared_task
def resume_stalled_runs() -> int:
    """Re-enqueue runs whose step died with its worker, without waiting for the broker to
    redeliver: the lease expiry bounds how long a run can hang."""
    stalled = run_selectors.stalled_runs(now=timezone.now())
    for run_id, version in stalled:
        advance_run.delay(str(run_id), expected_version=version)
    return len(stalled)
