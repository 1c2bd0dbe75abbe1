"""What the assistant harness itself costs per step, with a model that answers instantly.

Each measured step is one `agent.runtime.advance()`: lease, context assembly, one HTTP call to
a zero-latency fake OpenAI server through the real `openai` client, saving the reply, running
two tools (get_order + search_policies) through the executor with their log rows, events,
tool messages, lease release.

    DJANGO_SETTINGS_MODULE=config.settings .venv/bin/python bench/agent_overhead.py

It measures SQLite, and PostgreSQL when reachable (BENCH_POSTGRES_URL, default
postgres://postgres@127.0.0.1:5432/refund_desk_bench). Each backend runs in a child process
on a throwaway database made like the test database (`var/test_db_bench.sqlite3`, or
`test_refund_desk_bench` on PostgreSQL), migrated and seeded, and dropped at the end.
"""

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
RUNS = int(os.environ.get("BENCH_RUNS", "20"))
STEPS_PER_RUN = 3
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

    from agent import runtime, services
    from agent import tasks as agent_tasks
    from tests.fakes.openai_server import FakeOpenAI, text_reply, tool_call, tool_reply
    from tickets.demo import seed_demo
    from tickets.models import Ticket

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
            tool_call("get_order", {"order_id": LI_WEI_ORDERS[step]}),
            tool_call("search_policies", {"query": f"refund window damaged item {step}"}),
        )

    fake.respond_with(reply)
    # This script delivers every step itself: nothing may reach a broker from here.
    agent_tasks.advance_run.delay = lambda *args, **kwargs: None
    try:
        seed_demo()
        ticket = Ticket.objects.get(reference="TCK-1001")
        user = get_user_model().objects.get(username="agent")
        timings = []
        for _ in range(RUNS):
            run = services.run_start(ticket=ticket, user=user, message="Check the orders.")
            version = None
            for _ in range(STEPS_PER_RUN):
                started = time.perf_counter()
                outcome = runtime.advance(run_id=run.pk, expected_version=version)
                timings.append((time.perf_counter() - started) * 1000)
                assert outcome.kind == runtime.StepKind.CONTINUE, outcome
                version = outcome.version
            runtime.advance(run_id=run.pk, expected_version=version)
        return {
            "vendor": connection.vendor,
            "steps": len(timings),
            "median_ms": statistics.median(timings),
            "p95_ms": statistics.quantiles(timings, n=20)[18],
        }
    finally:
        fake.stop()
        connection.creation.destroy_test_db(test_db, verbosity=0)


def child(database_url: str | None) -> dict | str:
    env = {
        key: value for key, value in os.environ.items() if key not in ("DATABASE_URL", "REDIS_URL")
    }
    if database_url:
        env["DATABASE_URL"] = database_url
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


def main() -> None:
    print(
        f"Harness cost per step (model answers instantly; 2 tool calls per step; "
        f"{RUNS} runs x {STEPS_PER_RUN} steps)"
    )
    print(f"{'database':<12}{'steps':>7}{'median ms':>12}{'p95 ms':>10}")
    for label, url in (("sqlite", None), ("postgresql", POSTGRES_URL)):
        result = child(url)
        if isinstance(result, str):
            print(f"{label:<12}  not measured: {result}")
            continue
        print(
            f"{label:<12}{result['steps']:>7}{result['median_ms']:>12.1f}{result['p95_ms']:>10.1f}"
        )


if __name__ == "__main__":
    if "--child" in sys.argv:
        print(json.dumps(measure()))
    else:
        main()
