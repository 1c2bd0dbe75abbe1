"""What the assistant harness itself costs per step, with a model that answers instantly.

Each measured step is one `agent.runtime.run_step.advance()` as the step the run was handed to,
between the care a worker gives its database connections before and after a task
(config/celery.py: the connection is due a health check, which a handed-over step's read of
its run answers, config/connections.py, and a run's first step, whose first query writes,
sends a "SELECT 1" for): context assembly
(every run reads the same ticket thread: the answer a run posts to the ticket is removed
after it), one HTTP call to a zero-latency fake OpenAI server through the real `openai`
client, saving the reply, running two tools (get_order + search_policies, quick lookups that
run at the same time) through the executor, and saving their log rows, events and tool
messages with the hand-over.

    .venv/bin/python bench/agent_overhead.py [--json] [--only postgresql|sqlite] [--raw]

Besides the time it counts, per step, the SQL statements (each sent in a call of its own; a
connection's health check, CONN_HEALTH_CHECKS, counts as one), the commits that wrote
something and waited for the disk, those that wrote without waiting (PostgreSQL's
synchronous_commit off) and the database connections opened, on every thread (a tool's too),
from one more run with the counters on (tests/dbcost.py), so counting never slows the timed
runs. `--json` prints {"postgresql": {"median_ms", "p95_ms", "queries_per_step",
"commits_per_step", "async_commits_per_step", "connections_per_step", ..., "last_step":
{"median_ms", "queries", "commits"}}, "sqlite": {...}}: the tool steps, and apart from them
the last step, which gets the answer and ends the run; `--raw` adds every step's time
("timings_ms"), for a comparison across rounds (bench/peers/compare.py). The model's answer
is asked for unstreamed (the figures) and streamed (under "streamed", as a run does by
default); `--stream off|on` measures one way only. BENCH_RUNS sets the runs (default 20),
BENCH_STEPS the tool steps of each (default 3, at most 6): a step's cost as its run grows.

It measures SQLite, and PostgreSQL when reachable (BENCH_POSTGRES_URL, default
postgres://postgres@127.0.0.1:5432/refund_desk_bench). Each backend runs in a child process
on a throwaway database made like the test database (`var/test_db_bench.sqlite3`, or
`test_refund_desk_bench` on PostgreSQL), migrated and seeded, and dropped at the end.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
RUNS = int(os.environ.get("BENCH_RUNS", "20"))
# Each step looks up one of the customer's three orders: at most 6 steps, as the executor
# answers the third identical call REPEATED_CALL without running it.
STEPS_PER_RUN = int(os.environ.get("BENCH_STEPS", "3"))
POSTGRES_URL = os.environ.get(
    "BENCH_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/refund_desk_bench"
)
LI_WEI_ORDERS = ["202610110087", "202610150012", "202609020031"]


def measure() -> dict:
    """Runs in a child process with DATABASE_URL chosen by the parent."""
    sys.path.insert(0, str(BASE_DIR))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ["TEST_DB_SUFFIX"] = "_bench"
    os.environ["LOG_LEVEL"] = "WARNING"
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.db import connection

    from agent import services
    from agent import tasks as agent_tasks
    from agent.executor.pool import close_idle_threads
    from agent.runtime import run_step
    from config.celery import KeptConnectionsWorkerFixup
    from config.celery import app as celery_app
    from desk.demo import seed_demo
    from tests.dbcost import DatabaseCost
    from tests.fakes.openai_server import FakeOpenAI, text_reply, tool_call, tool_reply
    from tickets.models import Ticket, TicketMessage

    test_db = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    fake = FakeOpenAI().start()
    settings.LLM_PROVIDER = "openai"
    settings.OPENAI_BASE_URL = fake.base_url
    settings.AGENT_MAX_STEPS = STEPS_PER_RUN + 1

    def reply(request):
        step = sum(1 for m in request["messages"] if m["role"] == "assistant")
        if step >= STEPS_PER_RUN:
            return text_reply("Done.")
        return tool_reply(
            tool_call("get_order", {"order_id": LI_WEI_ORDERS[step % len(LI_WEI_ORDERS)]}),
            tool_call("search_policies", {"query": f"refund window damaged item {step}"}),
        )

    fake.respond_with(reply)
    # This script delivers every step itself: nothing may reach a broker from here.
    agent_tasks.advance_run.delay = lambda *args, **kwargs: None
    try:
        seed_demo()
        ticket = Ticket.objects.get(reference="TCK-1001")
        thread = list(ticket.messages.values_list("pk", flat=True))
        user = get_user_model().objects.get(username="agent")

        def one_run(step, last) -> None:
            run = services.run_start(ticket=ticket, user=user, message="Check the orders.")
            outcome = run_step.StepOutcome(run_step.StepKind.CONTINUE)
            for _ in range(STEPS_PER_RUN):
                outcome = step(run, outcome)
                assert outcome.kind == run_step.StepKind.CONTINUE, outcome
            outcome = last(run, outcome)
            assert outcome.kind == run_step.StepKind.FINISHED, outcome
            # The answer the run posted to the ticket goes, so that every run reads the same
            # thread (the peer's context does not grow from run to run either).
            TicketMessage.objects.filter(ticket=ticket).exclude(pk__in=thread).delete()

        # The tool steps' times, and the last steps' (the model answers, the run ends).
        timings: list[float] = []
        last_timings: list[float] = []
        # What a worker does with its database connections before and after every task
        # (config/celery.py): a step on a worker has its connection checked.
        between_tasks = KeptConnectionsWorkerFixup(celery_app).close_database

        def timed(into: list[float]):
            def step(run, previous):
                started = time.perf_counter()
                between_tasks()
                outcome = run_step.advance(
                    run_id=run.pk, expected_version=previous.version, owner=previous.owner
                )
                between_tasks()
                into.append((time.perf_counter() - started) * 1000)
                return outcome

            return step

        one_run(timed(timings), timed(last_timings))  # warm-up: imports, each thread's connection
        timings.clear()
        last_timings.clear()
        for _ in range(RUNS):
            one_run(timed(timings), timed(last_timings))
        costs: list[DatabaseCost] = []
        last_cost = DatabaseCost()

        def counted(run, previous):
            with DatabaseCost() as cost:
                outcome = timed(timings)(run, previous)
            costs.append(cost)
            return outcome

        def counted_last(run, previous):
            with last_cost:
                return timed(last_timings)(run, previous)

        one_run(counted, counted_last)
        return {
            "vendor": connection.vendor,
            "steps": len(timings) - STEPS_PER_RUN,
            "median_ms": round(statistics.median(timings[:-STEPS_PER_RUN]), 2),
            "p95_ms": round(statistics.quantiles(timings[:-STEPS_PER_RUN], n=20)[18], 2),
            "queries_per_step": round(sum(c.queries for c in costs) / len(costs), 2),
            "commits_per_step": round(sum(c.commits for c in costs) / len(costs), 2),
            "async_commits_per_step": round(sum(c.async_commits for c in costs) / len(costs), 2),
            "connections_per_step": round(sum(c.connections for c in costs) / len(costs), 2),
            # The step that gets the answer and ends the run (not in the figures above).
            "last_step": {
                "median_ms": round(statistics.median(last_timings[:-1]), 2),
                "queries": last_cost.queries,
                "commits": last_cost.commits,
            },
            "timings_ms": [round(t, 3) for t in timings[:-STEPS_PER_RUN]],
        }
    finally:
        fake.stop()
        close_idle_threads()  # their connections would keep the database from being dropped
        connection.creation.destroy_test_db(test_db, verbosity=0)


def child(database_url: str | None, *, stream: bool) -> dict | str:
    env = {
        key: value for key, value in os.environ.items() if key not in ("DATABASE_URL", "REDIS_URL")
    }
    if database_url:
        env["DATABASE_URL"] = database_url
    env["LLM_STREAM"] = "true" if stream else "false"
    done = subprocess.run(
        [sys.executable, __file__, "--child"],
        cwd=BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        return done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "failed"
    return json.loads(done.stdout.strip().splitlines()[-1])


BACKENDS = {"sqlite": None, "postgresql": POSTGRES_URL}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--only", choices=sorted(BACKENDS), help="measure one database")
    parser.add_argument("--raw", action="store_true", help="with --json: every step's time")
    parser.add_argument(
        "--stream",
        choices=("off", "on", "both"),
        default="both",
        help='the model\'s answer unstreamed (the figures), streamed (under "streamed"), or both',
    )
    options = parser.parse_args()
    if not 1 <= STEPS_PER_RUN <= 2 * len(LI_WEI_ORDERS):
        parser.error(f"BENCH_STEPS must be 1 to {2 * len(LI_WEI_ORDERS)}, not {STEPS_PER_RUN}")
    labels = [options.only] if options.only else list(BACKENDS)
    variants = {"off": [False], "on": [True], "both": [False, True]}[options.stream]
    if not options.json:
        print(
            f"Harness cost per step (model answers instantly; 2 tool calls per step; "
            f"{RUNS} runs x {STEPS_PER_RUN} steps)"
        )
        print(
            f"{'database':<24}{'steps':>7}{'median ms':>11}{'p95 ms':>9}"
            f"{'queries':>9}{'commits':>9}{'no-wait':>9}{'connections':>13}"
        )
    results: dict = {}
    for label in labels:
        for stream in variants:
            result = child(BACKENDS[label], stream=stream)
            if not options.raw and isinstance(result, dict):
                result.pop("timings_ms", None)
            if stream and label in results and isinstance(results[label], dict):
                results[label]["streamed"] = result
            else:
                results[label] = result
            if not options.json:
                print_row(f"{label}, streamed" if stream else label, result)
    if options.json:
        print(json.dumps(results, indent=2))


def print_row(label: str, result: dict | str) -> None:
    if isinstance(result, str):
        print(f"{label:<24}  not measured: {result}")
        return
    print(
        f"{label:<24}{result['steps']:>7}{result['median_ms']:>11.1f}{result['p95_ms']:>9.1f}"
        f"{result['queries_per_step']:>9g}{result['commits_per_step']:>9g}"
        f"{result['async_commits_per_step']:>9g}{result['connections_per_step']:>13g}"
    )
    last = result["last_step"]
    print(
        f"{'  its last step':<24}{'':>7}{last['median_ms']:>11.1f}{'':>9}"
        f"{last['queries']:>9g}{last['commits']:>9g}"
    )


if __name__ == "__main__":
    if "--child" in sys.argv:
        print(json.dumps(measure()))
    else:
        main()
