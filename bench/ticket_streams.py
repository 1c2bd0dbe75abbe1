"""How many live ticket streams one web process holds, and how fast changes reach them (issue 33).

One `uvicorn config.asgi:application` process (one worker) on PostgreSQL and Redis serves
`--streams` (1,000) concurrent `GET /api/tickets/<ref>/events/stream/`, one ticket each, opened
with raw asyncio sockets. This process then writes `--rounds` changes to every ticket through
the desk's own service (`tickets.services.ticket_post_message`: a message, appended as
`message.created` and announced by PostgreSQL NOTIFY with its commit), spread evenly at
`--rate` changes a second, and times each from its commit to its frame arriving on the
stream: p50 / p95 / max, and how many streams got every change. It also reports the web
process's memory and threads with no stream open and with all of them open, and the database
connections it holds.

    REDIS_URL=redis://127.0.0.1:6379/10 .venv/bin/python bench/ticket_streams.py [--streams 1000]
        [--rounds 3] [--rate 200] [--json]

PostgreSQL is BENCH_POSTGRES_URL's server; the bench makes a throwaway database
(`test_refund_desk_bench_tickets`), migrated and seeded, with one ticket per stream, and drops
it at the end (bench/e2e_latency.py's harness, as bench/live_streams.py). Progress goes to
stderr; `--json` prints the result alone on stdout.
"""

import argparse
import asyncio
import json
import os
import time
from functools import partial

from e2e_latency import Desk, log, running_desk, summary_ms
from live_streams import (
    Stream,
    UvicornServer,
    api_token,
    database_connections,
    follow,
    on_a_thread,
    raise_file_limit,
    stamp_now,
)

SUBJECT = "Bench ticket"


def open_tickets(count: int) -> list[tuple[str, int]]:
    """`count` new tickets of one demo customer: (reference, last change seq) each."""
    from orders.models import Customer
    from tickets import services

    customer = Customer.objects.order_by("pk").first()
    assert customer is not None, "the demo shop has customers"
    tickets = []
    for number in range(count):
        ticket = services.ticket_open(customer=customer, subject=SUBJECT, body=f"Ticket {number}")
        ticket.refresh_from_db(fields=["last_change_seq"])
        tickets.append((ticket.reference, ticket.last_change_seq))
        if (number + 1) % 250 == 0:
            log(f"  {number + 1} tickets opened")
    return tickets


def write_changes(references: list[str], rounds: int, rate: float) -> dict[tuple[str, int], float]:
    """Post `rounds` internal notes on every ticket at `rate` a second; (ticket, seq) -> the
    time its commit returned."""
    from django.db import transaction

    from tickets import services
    from tickets.models import Ticket, TicketChange, TicketMessage

    tickets = list(Ticket.objects.filter(reference__in=references))
    committed: dict[tuple[str, int], float] = {}
    interval = 1.0 / rate
    next_at = time.monotonic()
    for number in range(rounds):
        for ticket in tickets:
            next_at += interval
            time.sleep(max(next_at - time.monotonic(), 0))
            stamp: list[float] = []
            with transaction.atomic():
                transaction.on_commit(partial(stamp_now, stamp))
                message = services.ticket_post_message(
                    ticket=ticket,
                    author_kind=TicketMessage.AuthorKind.SYSTEM,
                    body=f"round {number}",
                )
                seq = TicketChange.objects.get(
                    ticket=ticket, type="message.created", data__id=message.pk
                ).seq
            committed[(ticket.reference, seq)] = stamp[0]
        log(f"  round {number + 1}/{rounds} written")
    return committed


async def measure(desk: Desk, args: argparse.Namespace) -> dict:
    web = UvicornServer(desk)
    desk.processes.append(web)
    web.start()
    idle = web.usage()
    tickets = await on_a_thread(open_tickets, args.streams)
    token = await on_a_thread(api_token)

    log(f"Opening {args.streams} ticket streams...")
    streams = [
        Stream(reference, f"/api/tickets/{reference}/events/stream/", after=seq)
        for reference, seq in tickets
    ]
    opened_at = time.monotonic()
    followers = []
    for stream in streams:
        opened = asyncio.Event()
        followers.append(asyncio.create_task(follow(stream, web.port, token, opened)))
        await opened.wait()
    open_s = time.monotonic() - opened_at
    refused = [stream for stream in streams if stream.status != 200]
    statuses = sorted({stream.status for stream in streams})
    log(f"  {args.streams - len(refused)} open in {open_s:.1f}s (statuses {statuses})")
    await asyncio.sleep(1.0)
    holding = web.usage()
    connections = await on_a_thread(database_connections)
    log(f"  web process: {holding} with the streams open; {connections} database connections")

    log(f"Writing {args.rounds} changes to each ticket at {args.rate:g}/s...")
    references = [stream.key for stream in streams]
    committed = await on_a_thread(write_changes, references, args.rounds, args.rate)
    deadline = time.monotonic() + args.grace
    by_ticket = {stream.key: stream for stream in streams}
    while time.monotonic() < deadline and not all(
        seq in by_ticket[reference].arrived for reference, seq in committed
    ):
        await asyncio.sleep(0.1)
    during = web.usage()
    for follower in followers:
        follower.cancel()
    await asyncio.gather(*followers, return_exceptions=True)

    latencies = [
        (by_ticket[reference].arrived[seq] - at) * 1000
        for (reference, seq), at in committed.items()
        if seq in by_ticket[reference].arrived
    ]
    complete = sum(
        1
        for stream in streams
        if all(seq in stream.arrived for (ref, seq) in committed if ref == stream.key)
    )
    return {
        "streams": args.streams,
        "open_streams": args.streams - len(refused),
        "open_s": round(open_s, 2),
        "changes_written": len(committed),
        "changes_delivered": len(latencies),
        "streams_with_every_change": complete,
        "latency": summary_ms(latencies) if latencies else None,
        "within_200ms": round(
            sum(1 for value in latencies if value <= 200) / max(len(committed), 1), 4
        ),
        "rate_per_s": args.rate,
        "web_idle": idle,
        "web_with_streams": holding,
        "web_after_changes": during,
        "database_connections_with_streams": connections,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=1000, help="open streams (default 1000)")
    parser.add_argument("--rounds", type=int, default=3, help="changes per ticket (default 3)")
    parser.add_argument("--rate", type=float, default=200.0, help="changes a second, all tickets")
    parser.add_argument("--grace", type=float, default=10.0, help="seconds to wait at the end")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args()
    raise_file_limit(args.streams)
    os.environ["AGENT_RUNS_PER_HOUR"] = "0"
    with running_desk("tickets") as desk:
        result = asyncio.run(measure(desk, args))
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        log(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
