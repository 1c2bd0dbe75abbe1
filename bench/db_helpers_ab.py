"""What each use of config.db saves over the ORM doing the same work, measured side by side.

config.db builds SQL from model metadata for the reads and writes a step makes many of; the
rule is to keep it only where it holds the step at parity with LangGraph (bench/peers), and to
leave to the ORM whatever saves under a millisecond. This script times, on PostgreSQL, every
place that uses it against the plain ORM version of the same read or write (the ORM versions
are written here, not in the product), alternating the two call by call so that whatever else
the machine does weighs on both alike, and prints the time of each per call and per step (a
tool step of bench/agent_overhead.py makes each call the number of times `PER_STEP` says).

    .venv/bin/python bench/db_helpers_ab.py [--calls 300] [--json]

PostgreSQL is BENCH_POSTGRES_URL's server (default
postgres://postgres@127.0.0.1:5432/refund_desk_bench); the script works in a throwaway
database made like the test database (`test_refund_desk_bench_ab`), dropped at the end.
"""

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
POSTGRES_URL = os.environ.get(
    "BENCH_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/refund_desk_bench"
)
# How often a tool step of bench/agent_overhead.py makes each call (counted on that bench:
# 2.25 writes a step, the run's read once a step, its transcript on one step in four, one
# get_order). 0: not on a step that only looks things up.
PER_STEP = {
    "step write (run + events + messages)": 2.25,
    "run read for the step (joins + thread)": 1,
    "transcript": 0.25,
    "get_order summary": 1,
    "refunded_total": 0,
    "order_lines": 0,
    "customer_order": 0,
    "ticket_thread": 0,
    "run_cancel_flag": 0,
    "prior calls": 0,
    "ticket number": 0,
}


def pairs() -> dict[str, tuple[Callable[[], object], Callable[[], object]]]:
    """Per place: (config.db as the product does it, the ORM doing the same)."""
    from django.contrib.auth import get_user_model
    from django.db import transaction
    from django.db.models import F, Sum
    from django.db.models.expressions import RawSQL

    from agent import services
    from agent.executor.prior import PriorCalls
    from agent.models import AgentMessage, AgentRun, RunEvent
    from agent.run_selectors import run_transcript
    from agent.transitions import write_with_events
    from config import refund_statuses
    from config.db import Update, column
    from orders import selectors as orders
    from orders.models import Order, OrderLine
    from tickets import selectors as tickets
    from tickets.models import Ticket, TicketCounter
    from tickets.services.numbering import _take_number

    ticket = Ticket.objects.get(reference="TCK-1001")
    user = get_user_model().objects.get(username="agent")
    run = services.run_start(ticket=ticket, user=user, message="Check the orders.")
    # The writes go to a run of their own, so that the transcript read keeps its length.
    written = services.run_start(ticket=ticket, user=user, message="Check the orders.")
    seqs = iter(range(100, 10**9))
    for _ in range(6):
        AgentMessage.objects.create(run=run, seq=next(seqs), role="user", content="a message")
    customer = ticket.customer
    order = ticket.order
    assert order is not None and customer is not None

    def orm_run_for_step():
        thread = tickets.ticket_thread_sql(column(AgentRun, "ticket", AgentRun._meta.db_table))
        return (
            AgentRun.objects.select_related("ticket__order", "started_by", "customer")
            .annotate(thread=RawSQL(thread, ()))
            .filter(pk=run.pk)
            .first()
        )

    def orm_summary():
        found = Order.objects.filter(customer=customer, order_id=order.order_id).first()
        assert found is not None
        lines = list(OrderLine.objects.filter(order=found).order_by("id"))
        return found, lines, orm_refunded()

    def orm_refunded():
        committed = order.refund_requests.filter(status__in=refund_statuses.COMMITTED)
        return committed.aggregate(total=Sum("amount"))["total"]

    def db_write():
        events = [RunEvent(run=written, type="step.checkpoint", data={"n": 1})]
        messages = [AgentMessage(run=written, seq=next(seqs), role="tool", content="{}")]
        update = Update(AgentRun, where={"pk": written.pk}, add={"version": 1})
        return write_with_events(update, events, rows=[messages], durable=False)

    def orm_write():
        with transaction.atomic():
            transaction.get_connection().cursor().execute("SET LOCAL synchronous_commit TO OFF")
            held = AgentRun.objects.filter(pk=written.pk)
            held.update(version=F("version") + 1, last_event_seq=F("last_event_seq") + 1)
            last = held.values_list("last_event_seq", flat=True)[0]
            RunEvent.objects.bulk_create(
                [RunEvent(run=written, seq=last, type="step.checkpoint", data={"n": 1})]
            )
            AgentMessage.objects.bulk_create(
                [AgentMessage(run=written, seq=next(seqs), role="tool", content="{}")]
            )
        return True

    def orm_take_number():
        with transaction.atomic():
            counter = TicketCounter.objects.select_for_update().get(pk=1)
            counter.last += 1
            counter.save(update_fields=["last"])
            return counter.last

    def in_transaction(take: Callable[[], int]) -> Callable[[], int]:
        def taken():
            with transaction.atomic():
                return take()

        return taken

    TicketCounter.objects.get_or_create(pk=1, defaults={"last": 5000})
    transcript = run_transcript(run=run)
    for message in transcript:
        message.tool_calls = message.tool_calls or [{"id": "x"}]
    return {
        "step write (run + events + messages)": (db_write, orm_write),
        "run read for the step (joins + thread)": (
            lambda: services._run_for_step(where={"pk": run.pk}),
            orm_run_for_step,
        ),
        "transcript": (
            lambda: run_transcript(run=run),
            lambda: list(AgentMessage.objects.filter(run=run).order_by("seq")),
        ),
        "get_order summary": (
            lambda: orders.customer_order_summary(customer=customer, order_id=order.order_id),
            orm_summary,
        ),
        "refunded_total": (lambda: orders.refunded_total(order), orm_refunded),
        "order_lines": (
            lambda: orders.order_lines(order),
            lambda: list(OrderLine.objects.filter(order=order).order_by("id")),
        ),
        "customer_order": (
            lambda: orders.customer_order(customer=customer, order_id=order.order_id),
            lambda: Order.objects.filter(customer=customer, order_id=order.order_id).first(),
        ),
        "ticket_thread": (
            lambda: tickets.ticket_thread(ticket_id=ticket.pk),
            lambda: list(
                ticket.messages.order_by("created_at", "id").values_list(
                    "author_kind", "created_at", "body"
                )
            ),
        ),
        "run_cancel_flag": (
            lambda: services.run_cancel_flag(run=run, owner=run.lease_owner),
            lambda: (
                AgentRun.objects.filter(pk=run.pk, lease_owner=run.lease_owner)
                .values_list("cancel_requested", flat=True)
                .first()
            ),
        ),
        "prior calls": (
            lambda: PriorCalls.load(run, transcript),
            lambda: list(
                run.tool_calls.order_by("id").values_list(*PriorCalls.FIELDS)  # type: ignore[attr-defined]
            ),
        ),
        "ticket number": (in_transaction(_take_number), orm_take_number),
    }


def measure(calls: int) -> dict:
    sys.path.insert(0, str(BASE_DIR))
    os.environ["DATABASE_URL"] = POSTGRES_URL
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ["TEST_DB_SUFFIX"] = "_bench_ab"
    os.environ["LOG_LEVEL"] = "WARNING"
    import django

    django.setup()
    from django.db import connection

    from desk.demo import seed_demo

    test_db = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        seed_demo()
        results = {}
        for name, (direct, orm) in pairs().items():
            times: dict[str, list[float]] = {"config.db": [], "orm": []}
            for _ in range(20):  # warm-up: prepared statements, caches
                direct(), orm()
            for index in range(calls * 2):
                label, call = ("config.db", direct) if index % 2 == 0 else ("orm", orm)
                started = time.perf_counter()
                call()
                times[label].append((time.perf_counter() - started) * 1e6)
            direct_us = statistics.median(times["config.db"])
            orm_us = statistics.median(times["orm"])
            results[name] = {
                "config_db_us": round(direct_us),
                "orm_us": round(orm_us),
                "saved_us": round(orm_us - direct_us),
                "per_step": PER_STEP[name],
                "saved_per_step_us": round((orm_us - direct_us) * PER_STEP[name]),
            }
        return results
    finally:
        connection.close()
        connection.creation.destroy_test_db(test_db, verbosity=0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    print(f"Timing {len(PER_STEP)} places, {args.calls} calls each way...", file=sys.stderr)
    results = measure(args.calls)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"{'place':40} {'config.db':>10} {'ORM':>8} {'saved':>8} {'/step':>6} {'saved/step':>11}")
    for name, row in results.items():
        print(
            f"{name:40} {row['config_db_us']:>8}µs {row['orm_us']:>6}µs {row['saved_us']:>6}µs"
            f" {row['per_step']:>6} {row['saved_per_step_us']:>9}µs"
        )
    total = sum(row["saved_per_step_us"] for row in results.values())
    print(f"config.db saves {total / 1000:.2f} ms of a tool step in all (medians, PostgreSQL).")


if __name__ == "__main__":
    main()
