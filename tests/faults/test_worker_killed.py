"""A worker SIGKILLed in the middle of a provider call (DESIGN §8).

tests/refunds/test_execution_worker.py covers a kill *before* the provider acted (the sweep
re-sends under the same key). This is the other half: the provider made the refund and the
worker died waiting for the answer; the sweep must adopt that refund, never make a second.
"""

import pytest

from refunds.models import RefundEvent, RefundRequest
from refunds.reconciliation import refunds_reconcile
from refunds.tasks import execute_refund
from tests.conftest import TEST_QUEUE
from tests.refunds.test_reconciliation import later
from tests.services import WorkerProcess, wait_for

S = RefundRequest.Status

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]


def test_a_worker_killed_after_the_provider_refunded_is_settled_with_that_refund(
    stripe_server, make_refund
):
    # Given a worker whose provider makes the refund, then holds the answer back
    stripe_server.stall_next(seconds=20)
    worker = WorkerProcess(
        TEST_QUEUE,
        log_name="flt-killed-after-refund",
        extra_env={
            "REFUND_ADAPTER": "stripe",
            "STRIPE_API_KEY": stripe_server.api_key,
            "STRIPE_API_BASE": stripe_server.url,
            "REFUND_PROVIDER_TIMEOUT_S": "30",
        },
    ).start()
    refund = make_refund()
    try:
        execute_refund.delay(refund.pk)
        wait_for(lambda: len(stripe_server.refunds) == 1, what="the provider's refund")

        # When the worker is killed while it waits for the answer
        assert RefundRequest.objects.get(pk=refund.pk).status == S.EXECUTING
        worker.kill()
    finally:
        worker.stop()
    [made] = stripe_server.refunds.values()

    # and the sweep runs once the call can no longer be in flight
    report = refunds_reconcile(now=later())

    # Then the request carries the provider's refund, and nothing was sent again
    refund.refresh_from_db()
    assert dict(report.stale_executing) == {"succeeded": 1}
    assert (refund.status, refund.provider_refund_id) == (S.SUCCEEDED, made["id"])
    assert len(stripe_server.refunds) == 1
    [sent] = stripe_server.create_requests()
    assert sent.headers["idempotency-key"] == refund.request_id
    assert list(
        RefundEvent.objects.filter(refund_request=refund).values_list("to_status", flat=True)
    ) == ["executing", "succeeded"]
    assert RefundEvent.objects.filter(refund_request=refund).last().detail["source"] == (
        "reconcile"
    )
