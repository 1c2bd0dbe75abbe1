"""Thin Celery tasks: take an id, let the service re-check the state, safe to run twice."""

from celery import shared_task

from refunds.execution import refund_execute, refunds_reconcile
from refunds.services import refund_expire_confirmations


@shared_task
def execute_refund(refund_pk: int) -> str | None:
    """Enqueued on commit by refund_approve; a redelivery finds the request no longer
    `approved` and does nothing."""
    return refund_execute(refund_pk=refund_pk)


@shared_task
def reconcile_refunds() -> str:
    """Periodic (beat): settle unknown outcomes and stale executions, run lost approvals."""
    return refunds_reconcile().summary()


@shared_task
def expire_confirmations() -> int:
    """Periodic (beat): pending confirmation versions past their expiry become `expired`."""
    return refund_expire_confirmations()
