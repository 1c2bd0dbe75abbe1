"""Redis stops while a reviewer approves or an agent starts a run (DESIGN §7, §8).

The write is committed before anything is published, so the request must still answer
200 / 202 with the change saved; the lost publish is logged, and once Redis is back the
periodic sweeps do the work: exactly once.
"""

import logging
import time
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone
from rest_framework.test import APIClient

from agent.models import AgentMessage, AgentRun
from agent.tasks import resume_stalled_runs
from refunds.models import RefundEvent, RefundRequest, SimulatedRefund
from refunds.tasks import reconcile_refunds
from tests.conftest import TEST_QUEUE
from tests.factories import RefundProposalFactory
from tests.fakes.openai_server import text_reply
from tests.services import WorkerProcess, wait_for
from tickets.models import TicketMessage

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]

# A refused connection fails at once; this bounds the publish retries of config/settings.py.
PUBLISH_GIVES_UP_WITHIN_S = 10


def warm_up_publisher() -> None:
    """Publish once while Redis is up, so the pool holds a connection that Redis then drops."""
    from config.celery import app

    app.send_task("refunds.tasks.expire_confirmations", queue=f"{TEST_QUEUE}-warmup")


def publish_failures(caplog) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "config.celery" and r.levelno == logging.ERROR
    ]


def approve_through_the_api(refund, confirmation, reviewer, caplog):
    """The reviewer's approval over HTTP; returns the response and how long it took."""
    api = APIClient()
    api.force_authenticate(reviewer)
    started = time.monotonic()
    with caplog.at_level(logging.ERROR, logger="config.celery"):
        response = api.post(
            f"/api/refunds/{refund.request_id}/approve/",
            {"version": 1, "fingerprint": confirmation.fingerprint},
            format="json",
        )
    return response, time.monotonic() - started


def test_an_approval_while_redis_is_down_is_saved_and_executed_once_redis_is_back(
    private_redis, simulated_provider, agent_user, reviewer, caplog
):
    # Given a pending proposal and a broker that goes away
    refund = RefundProposalFactory(requested_by=agent_user)
    confirmation = refund.confirmations.get()
    warm_up_publisher()
    private_redis.stop()

    # When the reviewer approves
    response, elapsed = approve_through_the_api(refund, confirmation, reviewer, caplog)

    # Then the approval answers 200, is saved with its event, and nothing reached the provider
    assert response.status_code == 200, response.content
    assert response.json()["status"] == "approved"
    assert elapsed < PUBLISH_GIVES_UP_WITHIN_S
    refund.refresh_from_db()
    assert refund.status == RefundRequest.Status.APPROVED
    assert list(
        RefundEvent.objects.filter(refund_request=refund).values_list("from_status", "to_status")
    ) == [("", "pending_approval"), ("pending_approval", "approved")]
    [failure] = publish_failures(caplog)
    assert failure.startswith(
        f"Could not enqueue refunds.tasks.execute_refund({refund.pk},): broker unavailable"
    )
    assert SimulatedRefund.objects.count() == 0
    assert simulated_provider.calls() == []

    # When Redis is back (empty: the approval's message never existed), a worker runs, and
    # the sweep looks for approvals whose task never ran
    private_redis.start()
    worker = WorkerProcess(
        TEST_QUEUE,
        log_name="flt-broker-back",
        extra_env={
            "REDIS_URL": private_redis.url,
            "REFUND_APPROVED_GRACE_S": "1",
            "REFUND_ADAPTER": "simulated",
            "SIMULATED_PROVIDER_MODE": "normal",
            "SIMULATED_PROVIDER_LATENCY_S": "0",
        },
    ).start()
    try:
        time.sleep(1.1)  # past the worker's grace for approved requests
        reconcile_refunds.delay()
        wait_for(
            lambda: RefundRequest.objects.get(pk=refund.pk).status == "succeeded",
            what="the sweep to execute the approval",
        )
        # A second sweep, which must find nothing left to do.
        second = reconcile_refunds.delay()
        wait_for(lambda: worker.finished(second), what="the second sweep", worker=worker)
    finally:
        worker.stop()

    # Then the provider holds exactly one refund for it, and it settled once
    refund.refresh_from_db()
    ledger = SimulatedRefund.objects.get()
    assert ledger.idempotency_key == refund.request_id
    assert refund.provider_refund_id == ledger.provider_refund_id
    assert [
        to
        for _, to in RefundEvent.objects.filter(refund_request=refund).values_list(
            "from_status", "to_status"
        )
    ] == ["pending_approval", "approved", "executing", "succeeded"]
    assert "approved, never executed: 1 succeeded" in worker.log()


def test_an_approval_while_redis_hangs_gives_up_publishing_within_seconds(
    private_redis, simulated_provider, agent_user, reviewer, caplog
):
    # Given a broker that still holds our connection open but answers nothing
    refund = RefundProposalFactory(requested_by=agent_user)
    confirmation = refund.confirmations.get()
    warm_up_publisher()
    private_redis.hang()

    # When the reviewer approves
    response, elapsed = approve_through_the_api(refund, confirmation, reviewer, caplog)

    # Then the socket timeouts and the bounded publish retries end the wait: the approval is
    # saved and answered, the publish failure logged, nothing sent to the provider
    assert response.status_code == 200, response.content
    assert elapsed < 2 * PUBLISH_GIVES_UP_WITHIN_S
    refund.refresh_from_db()
    assert refund.status == RefundRequest.Status.APPROVED
    assert len(publish_failures(caplog)) == 1
    assert simulated_provider.calls() == []


def test_a_run_started_while_redis_is_down_is_queued_and_resumed_once_redis_is_back(
    private_redis, demo, fake_openai, caplog
):
    # Given a broker that goes away
    fake_openai.enqueue(text_reply("The mug cost 129.00 CNY."))
    warm_up_publisher()
    private_redis.stop()
    api = APIClient()
    api.force_authenticate(get_user_model().objects.get(username="agent"))

    # When an agent starts a run
    started = time.monotonic()
    with caplog.at_level(logging.ERROR, logger="config.celery"):
        response = api.post(
            "/api/tickets/TCK-1001/runs/", {"message": "Price of the mug?"}, format="json"
        )
    elapsed = time.monotonic() - started

    # Then it answers 202 with the run saved as queued, and no model call was made
    assert response.status_code == 202, response.content
    run = AgentRun.objects.get(pk=response.json()["id"])
    assert (run.status, run.step_count, run.lease_owner) == ("queued", 0, "")
    assert elapsed < PUBLISH_GIVES_UP_WITHIN_S
    [failure] = publish_failures(caplog)
    assert failure.startswith(
        f"Could not enqueue agent.tasks.advance_run('{run.pk}',): broker unavailable"
    )
    assert fake_openai.requests == []

    # When Redis is back, a worker runs, and the stalled-run sweep finds the orphaned run
    private_redis.start()
    worker = WorkerProcess(
        TEST_QUEUE,
        log_name="flt-run-broker-back",
        extra_env={**fake_openai.worker_env, "REDIS_URL": private_redis.url},
    ).start()
    try:
        # As if the sweep's grace for never-picked-up runs had passed.
        AgentRun.objects.filter(pk=run.pk).update(updated_at=timezone.now() - timedelta(minutes=5))
        assert resume_stalled_runs() == 1
        wait_for(
            lambda: AgentRun.objects.get(pk=run.pk).status == "completed", what="the resumed run"
        )
    finally:
        worker.stop()

    # Then the run answered once, from one model call
    run.refresh_from_db()
    assert (run.stop_reason, run.final_answer, run.step_count) == (
        "final_answer",
        "The mug cost 129.00 CNY.",
        1,
    )
    assert len(fake_openai.requests) == 1
    assert list(
        AgentMessage.objects.filter(run=run).order_by("seq").values_list("seq", "role")
    ) == [(1, "user"), (2, "assistant")]
    assert (
        TicketMessage.objects.filter(
            ticket=run.ticket, author_kind="assistant", body="The mug cost 129.00 CNY."
        ).count()
        == 1
    )
