"""Item 9 of the acceptance list: a 30-second tool times out at TOOL_TIMEOUT_S (1 s for this
module's worker) and the loop goes on. Its own module, so only its worker has the short
timeout."""

import json
import time

import pytest

from agent.models import ToolCallLog
from agent.untrusted import untrusted_blocks
from tests.acceptance.conftest import post_run, wait_for_run
from tests.acceptance.traces import slow_tool_trace
from tests.fakes.openai_server import text_reply, tool_call, tool_reply

pytestmark = pytest.mark.django_db(transaction=True)

WORKER_ENV = {"TOOL_TIMEOUT_S": "1"}
WORKER_INCLUDE = ["tests.acceptance.worker_tools"]


def test_a_30_second_tool_times_out_and_the_loop_continues(worker, fake_openai):
    # Given a model that calls the 30-second tool, then answers
    fake_openai.enqueue(
        tool_reply(tool_call("acceptance_slow_lookup", {}, call_id="call_slow")),
        text_reply("The lookup timed out; I answered without it."),
    )

    # When an agent's run goes through the worker
    started = time.monotonic()
    run_id = post_run("Look it up, however long it takes.")
    try:
        run = wait_for_run(run_id, worker, timeout=25)
        took = time.monotonic() - started

        # Then the worker started the tool and stopped waiting for it after TOOL_TIMEOUT_S
        assert slow_tool_trace(run_id, "started").exists()
        assert not slow_tool_trace(run_id, "finished").exists()
    finally:
        for stage in ("started", "finished"):
            slow_tool_trace(run_id, stage).unlink(missing_ok=True)
    assert "acceptance_slow_lookup" in [
        t["function"]["name"] for t in fake_openai.requests[0]["tools"]
    ]
    log = ToolCallLog.objects.get(run=run)
    assert (log.tool_call_id, log.ok, log.error_code, log.retryable) == (
        "call_slow",
        False,
        "TOOL_TIMEOUT",
        True,
    )
    assert 1000 <= log.elapsed_ms < 5000
    # and the model got the timeout under the call's id and was called again
    assert len(fake_openai.requests) == 2
    (tool_message,) = fake_openai.tool_messages(1)
    assert tool_message["tool_call_id"] == "call_slow"
    (body,) = untrusted_blocks(tool_message["content"])
    sent = json.loads(body)
    assert (sent["ok"], sent["error"]["code"]) == (False, "TOOL_TIMEOUT")
    assert "looked_up" not in sent
    # and the run completed in far less than the tool's 30 seconds
    assert (run.status, run.stop_reason, run.step_count) == ("completed", "final_answer", 2)
    assert run.final_answer == "The lookup timed out; I answered without it."
    assert took < 15
