"""How long a user waits for an answer: `POST /api/tickets/<ref>/runs/` to the run `completed`.

Everything is real but the model: the web app served as in production by one `uvicorn
config.asgi:application` process (`--server runserver` for `manage.py runserver --noreload`,
which serves each request on a new thread with a new database connection; DEBUG off either
way), a `celery -A config worker` subprocess on Redis, PostgreSQL, and the fake
OpenAI-compatible server of the tests answering instantly. Each run makes three tool steps
(one `get_order` call each), then the model answers. Runs go one after another, after a few
warm-up runs that are not counted. Completion is detected by polling `GET /api/runs/<id>/`
every `--poll-ms` (10 ms): the event stream (`/events/stream/`) reads the database every
0.5 s, which would add up to half a second to every figure (`--via sse` measures that path).

    REDIS_URL=redis://127.0.0.1:6379/7 .venv/bin/python bench/e2e_latency.py [--runs 30] [--json]

The Redis database is the bench's own: its `celery` queue is purged at the start. PostgreSQL
is BENCH_POSTGRES_URL's server (default postgres://postgres@127.0.0.1:5432/refund_desk_bench);
the bench makes a throwaway database named after it (`test_refund_desk_bench_e2e`), migrated
and seeded, and drops it at the end. The web server runs with the API throttle and fair-use
limits off (`API_THROTTLE_USER=0`, `AGENT_RUNS_PER_HOUR=0`): tight polling is not a user.

This module is also the harness of bench/throughput.py and bench/resume_after_kill.py: the
throwaway database, the fake model, the worker and web processes and their clean shutdown.
"""

import argparse
import contextlib
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

BASE_DIR = Path(__file__).resolve().parent.parent
POSTGRES_URL = os.environ.get(
    "BENCH_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/refund_desk_bench"
)
DEMO_PASSWORD = os.environ.get("DEMO_PASSWORD", "demo-pass-123")
TICKET = "TCK-1001"
LI_WEI_ORDERS = ["202610110087", "202610150012", "202609020031"]
# The queue the web app publishes to: the bench's Redis database is its own, so it is purged.
QUEUE = "celery"
READY_TIMEOUT_S = 60.0


def log(message: str) -> None:
    """Progress goes to stderr, so that --json leaves stdout to the result."""
    print(message, file=sys.stderr, flush=True)


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    position = fraction * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def summary_ms(values: list[float]) -> dict:
    return {
        "p50_ms": round(statistics.median(values), 1),
        "p95_ms": round(percentile(values, 0.95), 1),
        "min_ms": round(min(values), 1),
        "max_ms": round(max(values), 1),
    }


def database_url(suffix: str) -> str:
    """BENCH_POSTGRES_URL with `_<suffix>` added to its database name."""
    parts = urlsplit(POSTGRES_URL)
    return urlunsplit(parts._replace(path=f"{parts.path}_{suffix}"))


def redis_url() -> str:
    url = os.environ.get("REDIS_URL", "")
    if not url:
        sys.exit("Set REDIS_URL to a Redis database of the bench's own (its queue is purged).")
    return url


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def parse_time(value: str) -> float:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


# --- The desk's processes ---------------------------------------------------------------------


class Desk:
    """A throwaway database, the fake model and the desk's processes, all stopped (and the
    database dropped) by `close()`, whatever happened before.

    Django runs in this process too, on the throwaway database: it seeds it and lets the
    benches read what the workers wrote.
    """

    def __init__(self, name: str, *, extra_env: dict[str, str] | None = None):
        self.name = name
        self.redis_url = redis_url()
        self.extra_env = extra_env or {}
        self.folder = Path(tempfile.mkdtemp(prefix=f"bench-{name}-"))
        self.processes: list[DeskProcess] = []
        self.fake: Any = None
        self.test_db: str | None = None
        self.db_url = ""

    def open(self) -> "Desk":
        os.environ["DATABASE_URL"] = database_url(self.name)
        os.environ["REDIS_URL"] = self.redis_url
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
        os.environ.setdefault("LOG_LEVEL", "WARNING")
        sys.path.insert(0, str(BASE_DIR))
        import django

        django.setup()
        from django.db import connection

        from desk.demo import seed_demo
        from tests.fakes.openai_server import FakeOpenAI
        from tests.services import database_url_for_subprocess, purge_queue

        log(f"Creating the throwaway database for {self.name} (migrate + seed_demo)...")
        self.test_db = connection.creation.create_test_db(
            verbosity=0, autoclobber=True, serialize=False
        )
        seed_demo()
        self.db_url = database_url_for_subprocess()
        purged = purge_queue(QUEUE)
        if purged:
            log(f"Purged {purged} old message(s) from the bench's queue.")
        self.fake = FakeOpenAI().start()
        return self

    @property
    def env(self) -> dict[str, str]:
        """The environment of every desk process: this database, this broker, the fake model."""
        return {
            **os.environ,
            "DATABASE_URL": self.db_url,
            "REDIS_URL": self.redis_url,
            "DJANGO_DEBUG": "false",
            # Plain http on the loopback: DEBUG off would otherwise redirect every request to
            # https (DJANGO_HTTPS defaults on with DEBUG off).
            "DJANGO_HTTPS": "false",
            "LOG_LEVEL": "WARNING",
            **self.fake.worker_env,
            **self.extra_env,
        }

    def worker(self, *, concurrency: int, beat: bool = False, label: str = "worker") -> "Worker":
        process = Worker(self, concurrency=concurrency, beat=beat, label=label)
        self.processes.append(process)
        return process.start()

    def web(self, server: str = "uvicorn") -> "WebServer":
        process = WebServer(self, server)
        self.processes.append(process)
        return process.start()

    def close(self) -> None:
        for process in reversed(self.processes):
            with contextlib.suppress(Exception):
                process.stop()
        if self.fake is not None:
            self.fake.stop()
        if self.test_db is not None:
            from django.db import connection, connections

            connections.close_all()
            connection.creation.destroy_test_db(self.test_db, verbosity=0)
            log(f"Dropped the throwaway database {self.test_db}.")
            self.test_db = None


@contextlib.contextmanager
def running_desk(name: str, *, extra_env: dict[str, str] | None = None) -> Iterator[Desk]:
    """A `Desk` closed on the way out, also on Ctrl-C or SIGTERM."""
    desk = Desk(name, extra_env=extra_env)
    previous = signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        yield desk.open()
    finally:
        desk.close()
        signal.signal(signal.SIGTERM, previous)


@dataclass
class DeskProcess:
    """A subprocess in a session of its own: Ctrl-C in the terminal does not reach it (the
    bench stops it in order), and its whole process group can be signalled at once."""

    desk: Desk
    label: str
    process: subprocess.Popen | None = None
    log_path: Path = field(init=False)

    def __post_init__(self) -> None:
        self.log_path = self.desk.folder / f"{self.label}-{uuid.uuid4().hex[:6]}.log"

    def spawn(self, command: list[str], env: dict[str, str]) -> None:
        with self.log_path.open("w") as output:
            self.process = subprocess.Popen(
                command,
                cwd=BASE_DIR,
                env=env,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def log(self) -> str:
        return self.log_path.read_text() if self.log_path.exists() else ""

    def wait_until(self, ready: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process is None or self.process.poll() is not None:
                raise RuntimeError(f"{self.label} exited early:\n{self.log()[-3000:]}")
            if ready():
                return
            time.sleep(0.1)
        raise RuntimeError(f"{self.label} not {what} after {READY_TIMEOUT_S}s:\n{self.log()}")

    def kill(self) -> None:
        """SIGKILL the whole process group: the main process, its pool, an embedded beat."""
        if self.process is not None and self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.kill()
        # A warm shutdown may leave pool children behind for a moment: none may outlive it.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)


class Worker(DeskProcess):
    def __init__(self, desk: Desk, *, concurrency: int, beat: bool, label: str):
        super().__init__(desk, label)
        self.concurrency = concurrency
        self.beat = beat

    def start(self) -> "Worker":
        command = [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "-Q",
            QUEUE,
            f"--concurrency={self.concurrency}",
            "--pool=prefork",
            "--loglevel=INFO",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            "-n",
            f"bench-{self.label}-{uuid.uuid4().hex[:6]}@%h",
        ]
        if self.beat:
            # Beat's schedule file is the bench's, not the checkout's var/celerybeat-schedule.
            command += ["-B", "--schedule", str(self.desk.folder / "celerybeat-schedule")]
        self.spawn(command, self.desk.env)
        self.wait_until(lambda: " ready." in self.log(), "ready")
        log(f"  {self.label} ready (-c {self.concurrency}{', with beat' if self.beat else ''}).")
        return self


# How each web server is started on a port.
WEB_SERVERS = {
    "uvicorn": lambda port: [
        sys.executable,
        "-m",
        "uvicorn",
        "config.asgi:application",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--no-access-log",
        "--log-level",
        "warning",
        "--lifespan",
        "off",
    ],
    "runserver": lambda port: [
        sys.executable,
        "manage.py",
        "runserver",
        "--noreload",
        f"127.0.0.1:{port}",
    ],
}


class WebServer(DeskProcess):
    def __init__(self, desk: Desk, server: str = "uvicorn"):
        super().__init__(desk, "web")
        self.port = free_port()
        self.command = WEB_SERVERS[server](self.port)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> "WebServer":
        env = {
            **self.desk.env,
            "API_THROTTLE_USER": "0",
            "API_THROTTLE_ANON": "0",
            "AGENT_RUNS_PER_HOUR": "0",
            "AGENT_TOKENS_PER_HOUR": "0",
        }
        self.spawn(self.command, env)
        self.wait_until(self.answers, "answering")
        log(f"  web server ready at {self.url}.")
        return self

    def answers(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/healthz", timeout=2) as response:
                return response.status in (200, 503)
        except urllib.error.HTTPError:
            return True
        except OSError:
            return False


# --- The API, as a client sees it -------------------------------------------------------------


class ApiClient:
    def __init__(self, base_url: str, username: str = "agent"):
        self.base_url = base_url
        self.token = ""
        answer = self.call(
            "POST", "/api/auth/token/", {"username": username, "password": DEMO_PASSWORD}
        )
        self.token = answer["token"]

    def request(self, method: str, path: str, body: dict | None = None) -> urllib.request.Request:
        headers = {"Accept": "application/json"}
        if self.token:
            headers["Authorization"] = f"Token {self.token}"
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        return urllib.request.Request(
            f"{self.base_url}{path}", data=data, headers=headers, method=method
        )

    def call(self, method: str, path: str, body: dict | None = None) -> Any:
        with urllib.request.urlopen(self.request(method, path, body), timeout=30) as response:
            return json.loads(response.read())

    def start_run(self, message: str) -> str:
        return self.call("POST", f"/api/tickets/{TICKET}/runs/", {"message": message})["id"]

    def run(self, run_id: str) -> dict:
        return self.call("GET", f"/api/runs/{run_id}/")

    def events(self, run_id: str) -> list[dict]:
        return self.call("GET", f"/api/runs/{run_id}/events/")

    def poll_until_ended(self, run_id: str, *, every_s: float, timeout_s: float) -> dict:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            run = self.run(run_id)
            if run["status"] in ("completed", "failed", "cancelled"):
                return run
            time.sleep(every_s)
        raise TimeoutError(f"run {run_id} did not end within {timeout_s}s")

    def stream_until_ended(self, run_id: str, *, timeout_s: float) -> str:
        """Follow the run's server-sent events; return the type of the event that ended it."""
        request = self.request("GET", f"/api/runs/{run_id}/events/stream/")
        request.add_header("Accept", "text/event-stream")
        ended = ""
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            for raw in response:
                line = raw.decode().strip()
                if line.startswith("event: ") and line[7:] in (
                    "run.completed",
                    "run.failed",
                    "run.cancelled",
                ):
                    ended = line[7:]
                if ended and not line:
                    return ended
        return ended or "stream closed"


# --- Scripted model ---------------------------------------------------------------------------


def one_tool_per_step(tool_steps: int, *, latency_s: float = 0.0) -> Callable[[dict], object]:
    """The fake model's script: `tool_steps` steps of one get_order call each, then an answer.
    Which step a request is for follows from its transcript (assistant messages so far)."""
    from tests.fakes.openai_server import Sleep, text_reply, tool_call, tool_reply

    def reply(request: dict) -> object:
        step = sum(1 for message in request["messages"] if message["role"] == "assistant")
        if step >= tool_steps:
            answer = text_reply("The orders are checked: the mug is refundable.")
        else:
            order_id = LI_WEI_ORDERS[step % len(LI_WEI_ORDERS)]
            answer = tool_reply(tool_call("get_order", {"order_id": order_id}))
        return Sleep(latency_s, answer) if latency_s else answer

    return reply


# --- This bench -------------------------------------------------------------------------------

TOOL_STEPS = 3


def breakdown(events: list[dict], posted_at: float, detected_at: float) -> dict:
    """Where one run's time went, from its events' timestamps (same machine, same clock):
    until its first step started, in the hops between steps (a step's last event to the
    next step's first), and from its end until the client saw it."""
    times = [(event["type"], parse_time(event["created_at"])) for event in events]
    starts = [moment for kind, moment in times if kind == "model.started"]
    hops = 0.0
    for index, (kind, moment) in enumerate(times):
        if kind == "model.started" and moment != starts[0]:
            hops += moment - times[index - 1][1]
    ended = next(
        moment for kind, moment in times if kind.startswith("run.") and kind != "run.started"
    )
    return {
        "to_first_step_ms": round((starts[0] - posted_at) * 1000, 1),
        "hops_ms": round(hops * 1000, 1),
        "to_detection_ms": round((detected_at - ended) * 1000, 1),
    }


def measure_one(client: ApiClient, args: argparse.Namespace) -> dict:
    posted_at = time.time()
    started = time.perf_counter()
    run_id = client.start_run("Check my three orders, please.")
    if args.via == "sse":
        ended = client.stream_until_ended(run_id, timeout_s=args.timeout)
        status = {"run.completed": "completed"}.get(ended, ended)
    else:
        status = client.poll_until_ended(
            run_id, every_s=args.poll_ms / 1000, timeout_s=args.timeout
        )["status"]
    elapsed_ms = (time.perf_counter() - started) * 1000
    detected_at = time.time()
    if status != "completed":
        raise RuntimeError(f"run {run_id} ended {status}, not completed")
    return {
        "run": run_id,
        "total_ms": round(elapsed_ms, 1),
        **breakdown(client.events(run_id), posted_at, detected_at),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30, help="measured runs (default 30)")
    parser.add_argument("--warmup", type=int, default=3, help="runs not counted (default 3)")
    parser.add_argument("--concurrency", type=int, default=2, help="worker -c (default 2)")
    parser.add_argument("--via", choices=("poll", "sse"), default="poll")
    parser.add_argument("--poll-ms", type=float, default=10.0)
    parser.add_argument("--timeout", type=float, default=60.0, help="per run, seconds")
    parser.add_argument("--server", choices=sorted(WEB_SERVERS), default="uvicorn")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args()

    with running_desk("e2e") as desk:
        desk.fake.respond_with(one_tool_per_step(TOOL_STEPS))
        desk.worker(concurrency=args.concurrency)
        client = ApiClient(desk.web(args.server).url)
        rows = []
        for index in range(args.warmup + args.runs):
            row = measure_one(client, args)
            counted = index >= args.warmup
            if counted:
                rows.append(row)
            log(
                f"  run {index + 1}/{args.warmup + args.runs}"
                f"{'' if counted else ' (warm-up)'}: {row['total_ms']:.0f} ms"
            )
    result = {
        "bench": "e2e_latency",
        "server": args.server,
        "detection": f"poll GET /api/runs/<id>/ every {args.poll_ms:g} ms"
        if args.via == "poll"
        else "SSE /api/runs/<id>/events/stream/",
        "tool_steps": TOOL_STEPS,
        "runs": len(rows),
        "worker_concurrency": args.concurrency,
        **summary_ms([row["total_ms"] for row in rows]),
        "median_breakdown_ms": {
            part: round(statistics.median(row[part] for row in rows), 1)
            for part in ("to_first_step_ms", "hops_ms", "to_detection_ms")
        },
        "per_run": rows,
    }
    if args.json:
        print(json.dumps(result))
        return
    print(
        f"POST /runs/ -> completed, {TOOL_STEPS} tool steps + answer, model at zero latency, "
        f"{result['runs']} runs one after another ({result['detection']}):"
    )
    print(
        f"  p50 {result['p50_ms']:.0f} ms   p95 {result['p95_ms']:.0f} ms   "
        f"min {result['min_ms']:.0f}   max {result['max_ms']:.0f}"
    )
    parts = result["median_breakdown_ms"]
    print(
        f"  median: {parts['to_first_step_ms']:.0f} ms to the first step, "
        f"{parts['hops_ms']:.0f} ms in hops between steps, "
        f"{parts['to_detection_ms']:.0f} ms from the end to the client seeing it"
    )


if __name__ == "__main__":
    main()
