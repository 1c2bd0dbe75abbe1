"""Runs driven by real worker processes over the real broker (Redis in CI, the filesystem
transport on a laptop), talking to the fake OpenAI server over HTTP."""

import pytest
from celery import current_app
from django.contrib.auth import get_user_model
from django.utils import timezone
from rest_framework.test import APIClient

from agent.models import AgentRun, ToolCallLog
from agent.tasks import resume_stalled_runs
from tests.agent.runs import start_run
from tests.fakes.openai_server import text_reply, tool_call, tool_reply
from tests.services import WorkerProcess, wait_for

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]


def run_status(run_id) -> str:
    return AgentRun.objects.values_list("status", flat=True).get(pk=run_id)


def worker(env: dict, name: str) -> WorkerProcess:
    return WorkerProcess(
        current_app.conf.task_default_queue,
        extra_env=env,
        log_name=name,
        extra_args=["--include", "tests.agent.worker_tools"],
    ).start()


def test_a_worker_runs_a_started_run_to_its_answer(demo, fake_openai):
    fake_openai.enqueue(
        tool_reply(tool_call("get_order", {"order_id": "202610110087"}, call_id="call_1")),
        text_reply("The mug cost 129.00 CNY."),
    )
    process = worker(fake_openai.worker_env, "run-worker")
    try:
        api = APIClient()
        api.force_authenticate(get_user_model().objects.get(username="agent"))
        response = api.post(
            "/api/tickets/TCK-1001/runs/", {"message": "Price of the mug?"}, format="json"
        )
        assert response.status_code == 202
        run_id = response.json()["id"]

        wait_for(lambda: run_status(run_id) == "completed", what="the run to complete")
    finally:
        process.stop()

    run = AgentRun.objects.get(pk=run_id)
    assert (run.stop_reason, run.final_answer, run.step_count) == (
        "final_answer",
        "The mug cost 129.00 CNY.",
        2,
    )
    assert [m["tool_call_id"] for m in fake_openai.tool_messages(1)] == ["call_1"]
    assert "agent.tasks.advance_run" in process.log()


def two_probes_then(fake_openai, tmp_path, counted: str, blocking: str, answer: str) -> dict:
    """A model that asks for `counted` and `blocking` at once (the second blocks while
    $PROBE_DIR/block exists), then answers `answer`. Returns the workers' environment."""
    (tmp_path / "block").touch()
    fake_openai.enqueue(
        tool_reply(
            tool_call(counted, {}, call_id="call_counted"),
            tool_call(blocking, {}, call_id="call_blocking"),
        ),
        text_reply(answer),
    )
    return {
        **fake_openai.worker_env,
        "PROBE_DIR": str(tmp_path),
        "AGENT_LEASE_SECONDS": "3",
        "TOOL_TIMEOUT_S": "4",
    }


def kill_while_blocked(process: WorkerProcess, tmp_path) -> None:
    wait_for(lambda: (tmp_path / "blocking_started").exists(), what="the blocking probe")
    process.kill()
    process.stop()
    (tmp_path / "block").unlink()


def resume_in_a_new_worker(env: dict, run: AgentRun) -> None:
    """Once the run's lease expired, the sweep hands it to a new worker, which completes it."""
    wait_for(
        lambda: AgentRun.objects.get(pk=run.pk).lease_expires_at < timezone.now(),
        timeout=15,
        what="the lease to expire",
    )
    second = worker(env, "rescue-worker")
    try:
        assert resume_stalled_runs() == 1
        wait_for(lambda: run_status(run.pk) == "completed", what="the resumed run")
    finally:
        second.stop()


def assert_both_answered_once_after_one_model_call(fake_openai, run, answer: str) -> None:
    """Each call has one log row, and the model was not asked again for the step that died."""
    assert sorted(ToolCallLog.objects.filter(run=run).values_list("tool_call_id", flat=True)) == [
        "call_blocking",
        "call_counted",
    ]
    assert len(fake_openai.requests) == 2
    assert [m["tool_call_id"] for m in fake_openai.tool_messages(1)] == [
        "call_counted",
        "call_blocking",
    ]
    run.refresh_from_db()
    assert (run.status, run.final_answer, run.step_count) == ("completed", answer, 2)


def test_a_worker_killed_mid_tool_is_resumed_without_a_second_model_call(
    demo, fake_openai, tmp_path
):
    # Given a model that asks for two tools at once, the second of which blocks
    env = two_probes_then(
        fake_openai, tmp_path, "counted_probe", "blocking_probe", "Both probes ran."
    )
    first = worker(env, "doomed-worker")
    run = start_run("Probe both.")

    # When the worker is killed while the second tool runs
    kill_while_blocked(first, tmp_path)
    assert len(fake_openai.requests) == 1
    assert list(ToolCallLog.objects.filter(run=run).values_list("tool_call_id", flat=True)) == [
        "call_counted"
    ]
    # and, once its lease expired, the sweep hands the run to a new worker
    resume_in_a_new_worker(env, run)

    # Then every tool body ran to completion exactly once, each call has one log row,
    # and the model was not asked again for the step that died
    assert (tmp_path / "counted_probe").read_text().count("x") == 1
    assert (tmp_path / "blocking_finished").read_text().count("x") == 1
    assert_both_answered_once_after_one_model_call(fake_openai, run, "Both probes ran.")


def test_a_worker_killed_between_quick_lookups_repeats_them_without_a_second_model_call(
    demo, fake_openai, tmp_path
):
    # Given a model that asks for two quick lookups at once, the second of which blocks
    env = two_probes_then(
        fake_openai, tmp_path, "quick_counted_probe", "quick_blocking_probe", "Both lookups ran."
    )
    first = worker(env, "doomed-worker")
    run = start_run("Look both up.")

    # When the worker is killed while the second lookup runs
    kill_while_blocked(first, tmp_path)
    # the first lookup's result was to be saved with the step's next write, which never came
    assert len(fake_openai.requests) == 1
    assert not ToolCallLog.objects.filter(run=run).exists()
    resume_in_a_new_worker(env, run)

    # Then the resumed step repeated both lookups (and only them): each call has one log row,
    # and the model was not asked again for the step that died
    assert (tmp_path / "counted_probe").read_text().count("x") == 2
    assert (tmp_path / "blocking_finished").read_text().count("x") == 1
    assert_both_answered_once_after_one_model_call(fake_openai, run, "Both lookups ran.")
