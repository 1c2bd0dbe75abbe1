"""A model endpoint answering garbage, against a real worker (DESIGN §7, §1.10).

tests/agent/test_runtime.py checks the in-process reasons for HTML, missing and empty
choices. Here the same worker process takes a series of garbage answers, one run each: every
run fails with a readable reason, the worker (and its pool process) survives, and the next
run after them completes.
"""

import time

import pytest
from celery import current_app

from agent.models import AgentRun, ToolCallLog
from tests.agent.runs import start_run
from tests.fakes.openai_server import text_reply
from tests.services import WorkerProcess

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]

MALFORMED = "The model call failed: the model returned a malformed response: "

GARBAGE = [
    (
        b"<html><body>502 Bad Gateway</body></html>",
        MALFORMED + "the body is not a chat completion.",
    ),
    ((200, b'{"id": "chatcmpl-1", "object": "chat.completion", "choi'), MALFORMED),
    ((200, {"id": "x", "object": "chat.completion"}), MALFORMED + "no choices."),
    ((200, {"id": "x", "object": "chat.completion", "choices": []}), MALFORMED + "empty choices."),
    (
        (
            200,
            {
                "id": "x",
                "object": "chat.completion",
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "tool_calls",
                        "message": {
                            "role": "assistant",
                            "tool_calls": [{"type": "function", "function": {"arguments": "{}"}}],
                        },
                    }
                ],
            },
        ),
        MALFORMED + "a tool call without an id or a function name.",
    ),
    ((200, [1, 2, 3]), MALFORMED + "no choices."),
]


def wait_for_end(run_id, timeout: float = 30.0) -> AgentRun:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = AgentRun.objects.get(pk=run_id)
        if run.status in ("completed", "failed", "cancelled"):
            return run
        time.sleep(0.1)
    raise AssertionError(f"run {run_id} did not end")


def test_garbage_from_the_model_fails_runs_readably_and_the_worker_keeps_working(demo, fake_openai):
    worker = WorkerProcess(
        current_app.conf.task_default_queue,
        log_name="flt-garbage",
        extra_env=fake_openai.worker_env,
    ).start()
    try:
        pid = worker.process.pid
        # When each run gets one garbage answer
        failed = []
        for body, _ in GARBAGE:
            fake_openai.enqueue(body)
            failed.append(wait_for_end(start_run("Price of the mug?").pk))
        # and the run after them a real one
        fake_openai.enqueue(text_reply("The mug cost 129.00 CNY."))
        last = wait_for_end(start_run("Price of the mug?").pk)

        # Then the worker is the same live process, with the same pool process throughout
        assert worker.process.poll() is None
        assert worker.process.pid == pid
        log = worker.log()
    finally:
        worker.stop()

    for run, (_, reason) in zip(failed, GARBAGE, strict=True):
        assert (run.status, run.stop_reason) == ("failed", "error")
        assert run.error.startswith(reason), run.error
        assert "Traceback" not in run.error and 'File "' not in run.error
    assert (last.status, last.final_answer) == ("completed", "The mug cost 129.00 CNY.")
    # one model call per run: garbage is not retried, nothing was executed
    assert len(fake_openai.requests) == len(GARBAGE) + 1
    assert ToolCallLog.objects.count() == 0
    assert "WorkerLostError" not in log
    assert "ForkPoolWorker-2" not in log
    assert log.count("agent.tasks.advance_run") >= 2 * (len(GARBAGE) + 1)
