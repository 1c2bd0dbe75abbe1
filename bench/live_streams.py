"""How many live run streams one web process holds, and how fast events reach them (issue 14).

One `uvicorn config.asgi:application` process (one worker) on PostgreSQL and Redis serves
`--streams` (1,000) concurrent `GET /api/runs/<id>/events/stream/`, one run each, opened with
raw asyncio sockets. This process then writes `--rounds` events to every run through
`agent.services.run_event_append`, as the worker writes `message.delta` events, spread evenly
at `--rate` events a second, and times each from its commit to its frame arriving on the
stream: p50 / p95 / max, and how many streams got every event. It also reports the web
process's memory and threads with no stream open and with all of them open, and the database
connections it holds.

    REDIS_URL=redis://127.0.0.1:6379/10 .venv/bin/python bench/live_streams.py [--streams 1000]
        [--rounds 3] [--rate 200] [--json]

The Redis database is the bench's own (its `celery` queue is purged: starting the runs
enqueues their first steps, which no worker takes). PostgreSQL is BENCH_POSTGRES_URL's server;
the bench makes a throwaway database (`test_refund_desk_bench_live`), migrated and seeded, and
drops it at the end (bench/e2e_latency.py's harness). Throttles and fair-use limits are off.
Progress goes to stderr; `--json` prints the result alone on stdout.
"""

import argparse
import asyncio
import json
import os
import resource
import sys
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from e2e_latency import (
    Desk,
    WebServer,
    log,
    running_desk,
    summary_ms,
)

TICKET = "TCK-1001"
USERNAME = "agent"
# Every stream needs a socket here and one in the web process, plus the database and Redis.
FILE_LIMIT_HEADROOM = 256
READY_TIMEOUT_S = 60.0


class UvicornServer(WebServer):
    """The web process as the other benches start it (uvicorn), and what it uses."""

    def __init__(self, desk: Desk):
        super().__init__(desk, "uvicorn")

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def usage(self) -> dict:
        """Resident memory and threads of the web process, from /proc."""
        fields = {}
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            name, _, value = line.partition(":")
            fields[name] = value.strip()
        return {
            "rss_mb": round(int(fields["VmRSS"].split()[0]) / 1024, 1),
            "threads": int(fields["Threads"]),
        }


@dataclass
class Stream:
    key: str  # what it follows: a run's id, a ticket's reference
    path: str  # its event stream's URL path
    after: int
    status: int = 0
    arrived: dict[int, float] = field(default_factory=dict)
    error: str = ""


async def follow(stream: Stream, port: int, token: str, opened: asyncio.Event) -> None:
    """Open one stream and record when each event's frame arrives, until cancelled (the
    ticket streams' bench follows its streams the same way)."""
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(
            (
                f"GET {stream.path}?after={stream.after} HTTP/1.1\r\n"
                f"Host: 127.0.0.1\r\nAuthorization: Token {token}\r\n"
                "Accept: text/event-stream\r\n\r\n"
            ).encode()
        )
        await writer.drain()
        head = await reader.readuntil(b"\r\n\r\n")
        stream.status = int(head.split(b" ", 2)[1])
    except (OSError, asyncio.IncompleteReadError, ValueError) as error:
        stream.error = error.__class__.__name__
        return
    finally:
        opened.set()
    buffer = b""
    try:
        while chunk := await reader.read(65536):
            now = time.monotonic()
            buffer += chunk
            *frames, buffer = buffer.split(b"\n\n")
            for frame in frames:
                for line in frame.split(b"\n"):
                    if line.startswith(b"id: "):
                        stream.arrived[int(line[4:])] = now
    finally:
        writer.close()


def start_runs(count: int) -> list[str]:
    from django.contrib.auth import get_user_model

    from agent import services
    from tickets.models import Ticket

    ticket = Ticket.objects.get(reference=TICKET)
    user = get_user_model().objects.get(username=USERNAME)
    runs = []
    for number in range(count):
        runs.append(str(services.run_start(ticket=ticket, user=user, message="Hi").pk))
        if (number + 1) % 250 == 0:
            log(f"  {number + 1} runs started")
    return runs


def api_token() -> str:
    from django.contrib.auth import get_user_model

    from ops.authentication import api_token_issue

    user = get_user_model().objects.get(username=USERNAME)
    return api_token_issue(user=user).key


def stamp_now(stamps: list[float]) -> None:
    stamps.append(time.monotonic())


def write_events(run_ids: list[str], rounds: int, rate: float) -> dict[tuple[str, int], float]:
    """Append `rounds` events to every run at `rate` a second; (run, seq) -> commit time."""
    from django.db import transaction

    from agent import services
    from agent.models import AgentRun

    runs = list(AgentRun.objects.filter(pk__in=run_ids))
    committed: dict[tuple[str, int], float] = {}
    interval = 1.0 / rate
    next_at = time.monotonic()
    for number in range(rounds):
        for run in runs:
            next_at += interval
            time.sleep(max(next_at - time.monotonic(), 0))
            stamp: list[float] = []
            with transaction.atomic():
                # Registered before the event's own announcement, so it runs first: the time
                # the commit returned, before anything was published.
                transaction.on_commit(partial(stamp_now, stamp))
                event = services.run_event_append(
                    run=run, type="message.delta", data={"text": f"round {number} "}
                )
            committed[(str(run.pk), event.seq)] = stamp[0]
        log(f"  round {number + 1}/{rounds} written")
    return committed


async def on_a_thread(function, *args):
    """Run Django work off the event loop; the thread's connection is closed after, so the
    throwaway database can be dropped at the end."""

    def call():
        from django.db import connection

        try:
            return function(*args)
        finally:
            connection.close()

    return await asyncio.to_thread(call)


def database_connections() -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid()"
        )
        return cursor.fetchone()[0]


async def measure(desk: Desk, args: argparse.Namespace) -> dict:
    web = UvicornServer(desk)
    desk.processes.append(web)
    web.start()
    idle = web.usage()
    run_ids = await on_a_thread(start_runs, args.streams)
    token = await on_a_thread(api_token)

    log(f"Opening {args.streams} streams...")
    streams = [Stream(run_id, f"/api/runs/{run_id}/events/stream/", after=1) for run_id in run_ids]
    opened_at = time.monotonic()
    followers = []
    for stream in streams:
        opened = asyncio.Event()
        followers.append(asyncio.create_task(follow(stream, web.port, token, opened)))
        await opened.wait()
    open_s = time.monotonic() - opened_at
    statuses = {stream.status for stream in streams}
    refused = [stream for stream in streams if stream.status != 200]
    log(f"  {args.streams - len(refused)} open in {open_s:.1f}s (statuses {sorted(statuses)})")
    await asyncio.sleep(1.0)
    holding = web.usage()
    connections = await on_a_thread(database_connections)
    log(f"  web process: {holding} with the streams open; {connections} database connections")

    log(f"Writing {args.rounds} events to each run at {args.rate:g}/s...")
    committed = await on_a_thread(write_events, run_ids, args.rounds, args.rate)
    deadline = time.monotonic() + args.grace
    while time.monotonic() < deadline and not all_arrived(streams, committed):
        await asyncio.sleep(0.1)
    during = web.usage()
    for follower in followers:
        follower.cancel()
    await asyncio.gather(*followers, return_exceptions=True)

    by_run = {stream.key: stream for stream in streams}
    latencies = [
        (by_run[run_id].arrived[seq] - at) * 1000
        for (run_id, seq), at in committed.items()
        if seq in by_run[run_id].arrived
    ]
    complete = sum(
        1
        for stream in streams
        if all(seq in stream.arrived for (run_id, seq) in committed if run_id == stream.key)
    )
    return {
        "streams": args.streams,
        "open_streams": args.streams - len(refused),
        "open_s": round(open_s, 2),
        "events_written": len(committed),
        "events_delivered": len(latencies),
        "streams_with_every_event": complete,
        "latency": summary_ms(latencies) if latencies else None,
        "within_200ms": round(
            sum(1 for value in latencies if value <= 200) / max(len(committed), 1), 4
        ),
        "rate_per_s": args.rate,
        "web_idle": idle,
        "web_with_streams": holding,
        "web_after_events": during,
        "database_connections_with_streams": connections,
    }


def all_arrived(streams: list[Stream], committed: dict[tuple[str, int], float]) -> bool:
    by_run = {stream.key: stream for stream in streams}
    return all(seq in by_run[run_id].arrived for run_id, seq in committed)


def raise_file_limit(streams: int) -> None:
    """The web process inherits this process's limit: both need a descriptor per stream."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = streams + FILE_LIMIT_HEADROOM
    if soft < wanted:
        if hard != resource.RLIM_INFINITY and hard < wanted:
            sys.exit(f"The open-file limit is {hard}; {wanted} are needed (ulimit -Hn).")
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=1000, help="open streams (default 1000)")
    parser.add_argument("--rounds", type=int, default=3, help="events per run (default 3)")
    parser.add_argument("--rate", type=float, default=200.0, help="events a second, all runs")
    parser.add_argument("--grace", type=float, default=10.0, help="seconds to wait at the end")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args()
    raise_file_limit(args.streams)
    # Starting a thousand runs as one user is not fair use; the bench measures streams.
    os.environ["AGENT_RUNS_PER_HOUR"] = "0"
    os.environ["AGENT_TOKENS_PER_HOUR"] = "0"
    with running_desk("live") as desk:
        result = asyncio.run(measure(desk, args))
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        log(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
