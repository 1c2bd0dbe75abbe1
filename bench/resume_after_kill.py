"""How long a run hangs when its worker dies mid-step: SIGKILL to the whole worker, then a new one.

A real worker with beat (`celery -A config worker -B`) on Redis and PostgreSQL runs a run
whose first step asks for `get_order`; the model's second answer hangs (`--model-hang-s`, 300 s
by default), so the second step is in flight in the model call. A moment after that call
reached the model (`--kill-after-s`) the worker's whole process group (main process, pool,
beat) gets SIGKILL, and a fresh worker with beat starts at once, as a supervisor would restart
it. The model answers at once from then on. Measured from the kill: until the run makes
progress again (a new `model.started` event) and until it is `completed`.

    REDIS_URL=redis://127.0.0.1:6379/7 .venv/bin/python bench/resume_after_kill.py [--json]

What decides the figure is the project's own settings, read from the environment as the
workers read them (AGENT_LEASE_SECONDS, LLM_TIMEOUT_S and whatever else the lease and the
sweep follow); the bench overrides none unless told (`--env NAME=VALUE`, repeatable). The
sweep is beat's `resume_stalled_runs`, on the schedule in config/settings.py.
Database and broker as in bench/e2e_latency.py (`test_refund_desk_bench_resume`, dropped at
the end; the Redis database's `celery` queue is purged).
"""

import argparse
import json
import os
import time
import uuid
from typing import Any

from e2e_latency import Desk, log, one_tool_per_step, running_desk

TOOL_STEPS = 2
ACTIVE = ("queued", "running")


def hang_once(hang_s: float, state: dict) -> Any:
    """The fake model's script: the first request for step 2 hangs; everything else, and that
    step's retry, answers at once."""
    from tests.fakes.openai_server import Sleep

    answer = one_tool_per_step(TOOL_STEPS)

    def reply(request: dict) -> object:
        step = sum(1 for message in request["messages"] if message["role"] == "assistant")
        if step == 1 and "hung_at" not in state:
            state["hung_at"] = time.time()
            return Sleep(hang_s, answer(request))
        return answer(request)

    return reply


def run_snapshot(run_id: uuid.UUID) -> dict:
    from agent.models import AgentRun, RunEvent

    run = AgentRun.objects.values("status", "step_count", "lease_expires_at").get(pk=run_id)
    starts = list(
        RunEvent.objects.filter(run_id=run_id, type="model.started")
        .order_by("seq")
        .values_list("created_at", flat=True)
    )
    return {**run, "model_starts": starts}


def wait_for(what: str, predicate, timeout_s: float) -> float:
    """Seconds until `predicate()` is true, printing progress every 5 s."""
    started = time.monotonic()
    reported = started
    while time.monotonic() - started < timeout_s:
        if predicate():
            return time.monotonic() - started
        if time.monotonic() - reported >= 5:
            reported = time.monotonic()
            log(f"  ... {reported - started:.0f} s, waiting for {what}")
        time.sleep(0.05)
    raise TimeoutError(f"no {what} within {timeout_s:.0f} s")


def measure(desk: Desk, args: argparse.Namespace) -> dict:
    from django.conf import settings
    from django.contrib.auth import get_user_model

    from agent import services
    from tickets.models import Ticket

    state: dict = {}
    desk.fake.respond_with(hang_once(args.model_hang_s, state))
    doomed = desk.worker(concurrency=args.concurrency, beat=True, label="doomed-worker")
    run = services.run_start(
        ticket=Ticket.objects.get(reference="TCK-1001"),
        user=get_user_model().objects.get(username="agent"),
        message="Check my orders, please.",
    )
    run_id = run.pk
    log(f"Run {run_id} started; waiting for its second step to call the model...")
    wait_for("the step to reach the model", lambda: "hung_at" in state, 60)
    time.sleep(args.kill_after_s)
    before = run_snapshot(run_id)
    doomed.kill()
    killed_at, killed_wall = time.monotonic(), time.time()
    log(
        f"SIGKILL to the worker's process group, {args.kill_after_s:g} s into the model call "
        f"(run {before['status']}, lease until {before['lease_expires_at']:%H:%M:%S})."
    )
    desk.worker(concurrency=args.concurrency, beat=True, label="fresh-worker")
    restarted_s = time.monotonic() - killed_at
    log(f"Fresh worker with beat ready {restarted_s:.1f} s after the kill.")
    steps_before = len(before["model_starts"])
    wait_for(
        "the run to make progress",
        lambda: len(run_snapshot(run_id)["model_starts"]) > steps_before,
        args.timeout,
    )
    progress_s = time.monotonic() - killed_at
    log(f"Progress {progress_s:.1f} s after the kill; waiting for the answer...")
    wait_for("the run to complete", lambda: run_snapshot(run_id)["status"] not in ACTIVE, 60)
    completed_s = time.monotonic() - killed_at
    after = run_snapshot(run_id)
    return {
        "bench": "resume_after_kill",
        "settings": {
            "AGENT_LEASE_SECONDS": settings.AGENT_LEASE_SECONDS,
            "LLM_TIMEOUT_S": settings.LLM_TIMEOUT_S,
            "sweep_period_s": settings.CELERY_BEAT_SCHEDULE["resume-stalled-runs"]["schedule"],
            **dict(item.split("=", 1) for item in args.env),
        },
        "lease_left_at_kill_s": round(before["lease_expires_at"].timestamp() - killed_wall, 1),
        "fresh_worker_ready_s": round(restarted_s, 1),
        "progress_after_kill_s": round(progress_s, 1),
        "completed_after_kill_s": round(completed_s, 1),
        "status": after["status"],
        "model_requests": len(desk.fake.requests),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kill-after-s", type=float, default=1.0)
    parser.add_argument("--model-hang-s", type=float, default=300.0)
    parser.add_argument("--concurrency", type=int, default=2, help="worker -c (default 2)")
    parser.add_argument("--timeout", type=float, default=400.0, help="seconds to wait")
    parser.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a setting for the workers and this process (e.g. AGENT_LEASE_SECONDS=10)",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    overrides = dict(item.split("=", 1) for item in args.env)
    os.environ.update(overrides)  # this process's settings too: they are reported
    with running_desk("resume", extra_env=overrides) as desk:
        result = measure(desk, args)
    if args.json:
        print(json.dumps(result, default=str))
        return
    print(
        f"SIGKILL of the whole worker mid-model-call -> the run continues after "
        f"{result['progress_after_kill_s']:.1f} s and is {result['status']} after "
        f"{result['completed_after_kill_s']:.1f} s"
    )
    print(
        f"  (lease had {result['lease_left_at_kill_s']:.0f} s left at the kill; fresh worker "
        f"ready in {result['fresh_worker_ready_s']:.1f} s; settings {result['settings']})"
    )


if __name__ == "__main__":
    main()
