import pytest

from refunds.models import RefundEvent, RefundRequest, SimulatedRefund
from refunds.reconciliation import refunds_reconcile
from refunds.tasks import execute_refund
from tests.conftest import TEST_QUEUE
from tests.refunds.test_reconciliation import later
from tests.services import WorkerProcess, wait_for

S = RefundRequest.Status


@pytest.mark.services
def test_a_real_worker_executes_an_approved_refund_once(
    celery_worker, simulated_provider, make_refund
):
    # Given an approved refund
    refund = make_refund()

    # When its task goes through the real broker to a real worker, and is delivered again
    execute_refund.delay(refund.pk)
    wait_for(lambda: RefundRequest.objects.get(pk=refund.pk).status == S.SUCCEEDED)
    again = execute_refund.delay(refund.pk)
    wait_for(
        lambda: celery_worker.finished(again), what="the second delivery", worker=celery_worker
    )

    # Then the provider holds exactly one refund, and the request settled once
    refund.refresh_from_db()
    ledger = SimulatedRefund.objects.get()
    assert ledger.idempotency_key == refund.request_id
    assert refund.provider_refund_id == ledger.provider_refund_id
    assert list(
        RefundEvent.objects.filter(refund_request=refund).values_list("to_status", flat=True)
    ) == ["executing", "succeeded"]
    assert celery_worker.log().count("refunds.tasks.execute_refund") >= 2


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_a_refund_whose_worker_died_mid_call_is_settled_by_reconciliation(
    simulated_provider, make_refund
):
    # Given a worker stuck in a slow provider call, killed before the provider acted
    worker = WorkerProcess(
        TEST_QUEUE, extra_env={"SIMULATED_PROVIDER_LATENCY_S": "8"}, log_name="worker-killed"
    ).start()
    refund = make_refund()
    try:
        execute_refund.delay(refund.pk)
        wait_for(lambda: RefundRequest.objects.get(pk=refund.pk).status == S.EXECUTING)
        worker.kill()
    finally:
        worker.stop()
    assert SimulatedRefund.objects.count() == 0

    # When the sweep runs once the call can no longer be in flight
    report = refunds_reconcile(now=later())

    # Then the request was re-sent under the same key and settled once
    refund.refresh_from_db()
    ledger = SimulatedRefund.objects.get()
    assert dict(report.stale_executing) == {"succeeded": 1}
    assert refund.status == S.SUCCEEDED
    assert ledger.idempotency_key == refund.request_id
    assert refund.provider_refund_id == ledger.provider_refund_id
