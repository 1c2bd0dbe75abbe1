"""Steps per second with many runs at once, and proof that no work was done twice.

50 runs are started at once through the API (`POST /api/tickets/TCK-1001/runs/` from 8 threads:
runserver's listen backlog is 10), each three tool steps (one `get_order` call each) and a
final answer: four model calls a run, each answered by the fake model after 200 ms (its server
is a ThreadingHTTPServer, so calls overlap). Two worker processes (`celery -A config worker -c
4`, prefork, no beat) on Redis and PostgreSQL work them off. Reported: wall time from the first
POST to the last run's `run.completed`, steps (model calls) per second, and the duplicate-work
checks: every run completed with its answer, the model asked exactly 4 times a run, each tool
call logged once (3 a run, no tool_call_id twice), no run with a step saved twice (4 assistant
and 3 tool messages, 4 `model.started` events, step_count 4), and how many task deliveries
found nothing to do.

    REDIS_URL=redis://127.0.0.1:6379/7 .venv/bin/python bench/throughput.py [--runs 50] [--json]

Database and broker as in bench/e2e_latency.py (`test_refund_desk_bench_throughput`, dropped
at the end; the Redis database's `celery` queue is purged).
"""

import argparse
import json
import re
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from http.server import ThreadingHTTPServer

from e2e_latency import ApiClient, Desk, log, one_tool_per_step, running_desk

TOOL_STEPS = 3
MODEL_CALLS_PER_RUN = TOOL_STEPS + 1
ACTIVE = ("queued", "running")
# runserver listens with a backlog of 10: 50 connections at once would be reset.
STARTING_THREADS = 8
TASK_RESULT = re.compile(r"agent\.tasks\.advance_run\[[^\]]+\] succeeded in [\d.]+s: '(\w+)'")


def start_all(client: ApiClient, count: int) -> tuple[list[uuid.UUID], float, float]:
    """Start `count` runs through the API from STARTING_THREADS threads at once; their ids,
    when the first request went out and how long the last took to be answered."""
    released = time.time()
    with ThreadPoolExecutor(max_workers=STARTING_THREADS) as pool:
        run_ids = list(
            pool.map(lambda index: client.start_run(f"Check my orders ({index})."), range(count))
        )
    return [uuid.UUID(run_id) for run_id in run_ids], released, time.time() - released


def wait_until_ended(run_ids: list[uuid.UUID], timeout_s: float) -> None:
    from agent.models import AgentRun

    started = reported = time.monotonic()
    while time.monotonic() - started < timeout_s:
        active = AgentRun.objects.filter(pk__in=run_ids, status__in=ACTIVE).count()
        if not active:
            return
        if time.monotonic() - reported >= 2:
            reported = time.monotonic()
            steps = sum(
                AgentRun.objects.filter(pk__in=run_ids).values_list("step_count", flat=True)
            )
            log(
                f"  {reported - started:4.0f} s: {len(run_ids) - active}/{len(run_ids)} runs "
                f"ended, {steps} steps done"
            )
        time.sleep(0.05)
    raise TimeoutError(f"runs still active after {timeout_s:.0f} s")


def duplicate_checks(desk: Desk, run_ids: list[uuid.UUID]) -> dict:
    """What the database and the fake model say about work done twice."""
    from django.db.models import Count, Q

    from agent.models import AgentRun, ToolCallLog

    runs = AgentRun.objects.filter(pk__in=run_ids).annotate(
        assistant_messages=Count("messages", filter=Q(messages__role="assistant"), distinct=True),
        tool_messages=Count("messages", filter=Q(messages__role="tool"), distinct=True),
        model_starts=Count("events", filter=Q(events__type="model.started"), distinct=True),
        tool_logs=Count("tool_calls", distinct=True),
    )
    expected = (
        "completed",
        "final_answer",
        MODEL_CALLS_PER_RUN,
        MODEL_CALLS_PER_RUN,
        TOOL_STEPS,
        MODEL_CALLS_PER_RUN,
        TOOL_STEPS,
    )
    wrong = [
        str(run.pk)
        for run in runs
        if (
            run.status,
            run.stop_reason,
            run.step_count,
            run.assistant_messages,
            run.tool_messages,
            run.model_starts,
            run.tool_logs,
        )
        != expected
    ]
    call_ids = list(
        ToolCallLog.objects.filter(run_id__in=run_ids).values_list("tool_call_id", flat=True)
    )
    task_results = Counter(
        result for worker in desk.processes for result in TASK_RESULT.findall(worker.log())
    )
    return {
        "all_completed": not wrong,
        "runs_not_as_expected": wrong,
        "model_requests": len(desk.fake.requests),
        "model_requests_expected": MODEL_CALLS_PER_RUN * len(run_ids),
        "tool_calls_logged": len(call_ids),
        "tool_call_ids_logged_twice": len(call_ids) - len(set(call_ids)),
        "task_results": dict(task_results),
    }


def completion_span(run_ids: list[uuid.UUID], released: float) -> float:
    """Seconds from the first POST to the last run's end event (same machine, same clock)."""
    from agent.models import RunEvent

    ends = RunEvent.objects.filter(run_id__in=run_ids, type="run.completed").values_list(
        "created_at", flat=True
    )
    last: datetime = max(ends)
    return last.timestamp() - released


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--model-latency-s", type=float, default=0.2)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=4, help="-c of each worker")
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    with running_desk("throughput") as desk:
        threading_server = isinstance(desk.fake._server, ThreadingHTTPServer)
        if not threading_server:
            log("The fake model's server is not a ThreadingHTTPServer: calls will queue.")
        desk.fake.respond_with(one_tool_per_step(TOOL_STEPS, latency_s=args.model_latency_s))
        for index in range(args.workers):
            desk.worker(concurrency=args.concurrency, label=f"worker{index + 1}")
        client = ApiClient(desk.web().url)
        log(f"Starting {args.runs} runs at once...")
        run_ids, released, starting_s = start_all(client, args.runs)
        log(f"  all {args.runs} started in {starting_s:.2f} s")
        wait_until_ended(run_ids, args.timeout)
        wall_s = completion_span(run_ids, released)
        checks = duplicate_checks(desk, run_ids)
    steps = MODEL_CALLS_PER_RUN * args.runs
    no_duplicates = (
        checks["all_completed"]
        and checks["model_requests"] == checks["model_requests_expected"]
        and checks["tool_call_ids_logged_twice"] == 0
        and checks["tool_calls_logged"] == TOOL_STEPS * args.runs
    )
    result = {
        "bench": "throughput",
        "runs": args.runs,
        "steps_per_run": f"{TOOL_STEPS} tool steps + answer ({MODEL_CALLS_PER_RUN} model calls)",
        "model_latency_s": args.model_latency_s,
        "fake_model_threading": threading_server,
        "workers": f"{args.workers} x -c {args.concurrency}",
        "starting_s": round(starting_s, 2),
        "wall_s": round(wall_s, 2),
        "steps": steps,
        "steps_per_s": round(steps / wall_s, 1),
        "runs_per_s": round(args.runs / wall_s, 2),
        "no_duplicate_work": no_duplicates,
        **checks,
    }
    if args.json:
        print(json.dumps(result))
        return
    print(
        f"{args.runs} runs at once, {result['steps_per_run']}, model {args.model_latency_s:g} s "
        f"a call, {result['workers']}:"
    )
    print(
        f"  wall {wall_s:.1f} s, {result['steps_per_s']} steps/s ({result['runs_per_s']} runs/s); "
        f"all completed: {checks['all_completed']}; no duplicate work: {no_duplicates}"
    )
    print(
        f"  model requests {checks['model_requests']}/{checks['model_requests_expected']}, "
        f"tool calls logged {checks['tool_calls_logged']} "
        f"({checks['tool_call_ids_logged_twice']} twice), task results {checks['task_results']}"
    )


if __name__ == "__main__":
    main()
