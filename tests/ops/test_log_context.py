"""One refund traced across web and worker: every log line names the request, run, refund and
tool call it belongs to."""

import contextvars
import re
import time

import pytest
from celery.worker.request import Request
from django.test import Client
from rest_framework.test import APIClient

from agent.tasks import advance_run
from config.celery import app as celery_app
from ops.worker import REQUEST_ID_HEADER
from refunds.tasks import execute_refund
from tests.agent.runs import probe_tool, start_run
from tests.conftest import TEST_QUEUE
from tests.factories import RefundProposalFactory
from tests.fakes.openai_server import text_reply, tool_call, tool_reply
from tests.services import purge_queue

pytestmark = pytest.mark.django_db


def test_each_request_gets_an_id_answered_in_x_request_id():
    given = Client().get("/login/", HTTP_X_REQUEST_ID="lb-4f2a.9:1")
    made = Client().get("/login/")
    forged = Client().get("/login/", HTTP_X_REQUEST_ID="x\nFAKE line")

    assert given["X-Request-ID"] == "lb-4f2a.9:1"
    assert re.fullmatch(r"[0-9a-f]{32}", made["X-Request-ID"])
    assert re.fullmatch(r"[0-9a-f]{32}", forged["X-Request-ID"])


def take_message(queue: str):
    """The next message on `queue`, as a worker would receive it."""
    with celery_app.connection_for_read() as connection:
        reader = connection.SimpleQueue(queue)
        try:
            message = reader.get(block=True, timeout=10)
            message.ack()
            return message
        finally:
            reader.close()


def run_as_a_worker(message) -> None:
    """The worker's own code path for one message (celery.worker.request.Request.execute), in
    an empty context: whatever the execution's lines say, they learnt it from the message."""
    assert message.headers["task"] == execute_refund.name
    request = Request(message, app=celery_app, task=execute_refund)
    contextvars.Context().run(request.execute)


def lines_with(printed, text: str) -> list[str]:
    return [line for line in printed.getvalue().splitlines() if text in line]


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_an_approval_and_its_execution_log_the_same_request_id(
    agent_user, reviewer, simulated_provider, printed
):
    # Given a refund proposal waiting for review, and nothing else queued
    refund = RefundProposalFactory(requested_by=agent_user)
    confirmation = refund.confirmations.get()
    purge_queue(TEST_QUEUE)

    # When a reviewer approves it, behind a load balancer that names the request
    api = APIClient()
    api.force_authenticate(reviewer)
    response = api.post(
        f"/api/refunds/{refund.request_id}/approve/",
        {"version": confirmation.version, "fingerprint": confirmation.fingerprint},
        format="json",
        HTTP_X_REQUEST_ID="trace-approval-1",
    )
    assert response.status_code == 200, response.content
    assert response["X-Request-ID"] == "trace-approval-1"

    # And a worker executes what the approval enqueued
    run_as_a_worker(take_message(TEST_QUEUE))

    # Then the web's line and the worker's lines carry the same request id and refund
    refund.refresh_from_db()
    assert refund.status == "succeeded"
    trace = f"[req=trace-approval-1 refund={refund.request_id}]"
    [enqueued] = lines_with(printed, "Enqueued refunds.tasks.execute_refund")
    [executed] = lines_with(printed, f"Refund {refund.request_id} execution: succeeded")
    assert enqueued.endswith(trace)
    assert executed.endswith(trace)
    [succeeded] = lines_with(printed, "Task refunds.tasks.execute_refund[")
    assert succeeded.endswith("[req=trace-approval-1]")


@pytest.mark.django_db(transaction=True)
def test_a_tool_call_logs_its_run_and_call_id(demo, fake_openai, settings, printed):
    # Given a tool that takes longer than tools may
    settings.TOOL_TIMEOUT_S = 0.2
    fake_openai.enqueue(
        tool_reply(tool_call("slow_probe", {}, call_id="call_slow")), text_reply("Done.")
    )
    with probe_tool("slow_probe", body=lambda calls: time.sleep(0.6)):
        run = start_run("Probe slowly.")

        # When a step runs, delivered with the id of the request that started the run
        advance_run.apply(args=(str(run.pk),), headers={REQUEST_ID_HEADER: "trace-run-2"})
        time.sleep(0.6)  # the probe's thread, done before its tool goes away

    # Then the executor's warning names the request, the run and the call
    [timed_out] = lines_with(printed, "Tool slow_probe timed out")
    assert timed_out.endswith(f"[req=trace-run-2 run={run.pk} call=call_slow]")
    [step] = lines_with(printed, "Assistant step:")
    assert step == f"Assistant step: continue [req=trace-run-2 run={run.pk}]"
