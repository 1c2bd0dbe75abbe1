"""The worker's database connection is dropped in the middle of a step (DESIGN §7).

A real worker on PostgreSQL runs a tool that blocks; meanwhile the test terminates the
worker's backends. The step's next write fails with OperationalError; the step must be
retried on a new connection (not fail the run) and the transcript must come out whole:
contiguous seqs, one tool message and one ToolCallLog per call id, no repeated model call.
"""

import uuid

import pytest
from celery import current_app

from agent.models import AgentMessage, AgentRun, RunEvent, ToolCallLog
from tests.agent.runs import start_run
from tests.fakes.openai_server import text_reply, tool_call, tool_reply
from tests.services import (
    WorkerProcess,
    backends,
    terminate_backends,
    wait_for,
)

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]


def test_a_step_whose_database_connection_drops_is_retried_without_duplicates(
    postgres, demo, fake_openai, tmp_path
):
    # Given a worker, recognisable in pg_stat_activity, running a tool that blocks
    name = f"flt-worker-{uuid.uuid4().hex[:8]}"
    (tmp_path / "block").touch()
    fake_openai.enqueue(
        tool_reply(
            tool_call("counted_probe", {}, call_id="call_counted"),
            tool_call("blocking_probe", {}, call_id="call_blocking"),
        ),
        text_reply("Both probes ran."),
    )
    worker = WorkerProcess(
        current_app.conf.task_default_queue,
        log_name="flt-db-dropped",
        extra_args=["--include", "tests.agent.worker_tools"],
        extra_env={**fake_openai.worker_env, "PROBE_DIR": str(tmp_path), "TOOL_TIMEOUT_S": "30"},
        application_name=name,
    ).start()
    try:
        run = start_run("Probe both.")
        wait_for(lambda: (tmp_path / "blocking_started").exists(), what="the blocking tool")

        # When its database connection is terminated while the tool runs
        wait_for(lambda: backends(name), what="the worker's backend")
        assert terminate_backends(name) >= 1
        (tmp_path / "block").unlink()

        # Then the run still completes
        wait_for(
            lambda: AgentRun.objects.get(pk=run.pk).status in ("completed", "failed"),
            what="the run to end",
        )
        log = worker.log()
        assert worker.process.poll() is None
    finally:
        worker.stop()

    run.refresh_from_db()
    assert (run.status, run.stop_reason, run.final_answer, run.error) == (
        "completed",
        "final_answer",
        "Both probes ran.",
        "",
    )
    assert "database connection lost mid-step" in log
    assert "Retry in" in log
    # the model was asked once per step: the retry did not ask it again for step 1
    assert len(fake_openai.requests) == 2
    assert [m["tool_call_id"] for m in fake_openai.tool_messages(1)] == [
        "call_counted",
        "call_blocking",
    ]
    # and the transcript is whole: contiguous seqs, one tool message per call id
    messages = list(
        AgentMessage.objects.filter(run=run)
        .order_by("seq")
        .values_list("seq", "role", "tool_call_id")
    )
    assert messages == [
        (1, "user", ""),
        (2, "assistant", ""),
        (3, "tool", "call_counted"),
        (4, "tool", "call_blocking"),
        (5, "assistant", ""),
    ]
    assert sorted(ToolCallLog.objects.filter(run=run).values_list("tool_call_id", flat=True)) == [
        "call_blocking",
        "call_counted",
    ]
    assert not RunEvent.objects.filter(run=run, type="run.failed").exists()
    # The counted tool was logged before the drop and never ran again; the blocking one ran
    # again because its log row was the write that failed (a read tool: harmless).
    assert (tmp_path / "counted_probe").read_text().count("x") == 1
    assert (tmp_path / "blocking_finished").read_text().count("x") == 2
