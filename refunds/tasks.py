"""Thin Celery tasks: take an id, let the service re-check the state, safe to run twice."""

import logging

from celery import shared_task

from config.log_context import log_context
from refunds.execution import refund_execute
from refunds.models import RefundRequest
from refunds.reconciliation import refunds_reconcile
from refunds.services import refund_expire_confirmations

logger = logging.getLogger(__name__)


@shared_task
def execute_refund(refund_pk: int) -> str | None:
    """Enqueued on commit by refund_approve; a redelivery finds the request no longer
    `approved` and does nothing."""
    # Every line of the execution names the refund as people know it (config/log_context.py).
    request_id = (
        RefundRequest.objects.filter(pk=refund_pk).values_list("request_id", flat=True).first()
    )
    with log_context(refund_request_id=request_id):
        status = refund_execute(refund_pk=refund_pk)
        logger.info(
            "Refund %s execution: %s",
            request_id or f"#{refund_pk}",
            status or "nothing to do (not approved, or another worker has it)",
        )
    return status


@shared_task
def reconcile_refunds() -> str:
    """Periodic (beat): settle unknown outcomes and stale executions, run lost approvals."""
    return refunds_reconcile().summary()


@shared_task
def expire_confirmations() -> int:
    """Periodic (beat): pending confirmation versions past their expiry become `expired`."""
    return refund_expire_confirmations()
