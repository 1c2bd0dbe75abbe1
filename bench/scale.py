"""The desk's pages and periodic sweeps at 100,000 tickets: query counts and p95 latency.

    .venv/bin/python bench/scale.py                # full size (minutes, most of it seeding)
    .venv/bin/python bench/scale.py --scale 0.1    # a tenth of every count, for a quick look
    .venv/bin/python bench/scale.py --json         # the figures as JSON on stdout
    .venv/bin/python bench/scale.py --explain      # also each sweep's EXPLAIN (ANALYZE) plans
    .venv/bin/python bench/scale.py --keep         # leave the seeded database for psql

PostgreSQL only (BENCH_POSTGRES_URL, default postgres://postgres@127.0.0.1:5432/
refund_desk_scale_bench): the bench makes a throwaway database the way the tests do
(`test_refund_desk_scale_bench`), migrates it, seeds the demo and then the bulk with COPY, and
drops it at the end. It seeds a tenth of the rows, measures, seeds the rest and measures
again: a page or sweep whose query count differs between the two sizes does work per row.

At full size: 100,000 tickets (two messages and one event each), 100,000 orders with a line
each, 100,000 refund requests with a confirmation each (2,000 pending approval), 100,000
assistant runs and 1,000,000 tool-call rows; the demo's TCK-1001 gets a 200-message
conversation. Pages are requested through Django's test client, signed in as the demo user
who works them. Each sweep is timed idle (nothing due) and with DUE_ITEMS items due, made due
and rolled back around every call so that each call finds the same work. API throttling is
off: it would measure the cache, not the database.

The table gives, at each size: the queries of one request or call, then over --requests
more (30 by default) the median time spent in the database (round trips included) and the
median and p95 of the whole request or call. The machine's other work shows in the p95 first:
compare the sizes side by side.
"""

import argparse
import json
import os
import platform
import random
import re
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

BASE_DIR = Path(__file__).resolve().parent.parent
POSTGRES_URL = os.environ.get(
    "BENCH_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/refund_desk_scale_bench"
)
FULL_TICKETS = 100_000
FULL_PENDING = 2_000
TOOL_CALLS_PER_TICKET = 10  # 1,000,000 tool-call rows at full size
FIRST_SIZE_FRACTION = 0.1
TICKETS_PER_CUSTOMER = 10
THREAD_TICKET = "TCK-1001"
THREAD_MESSAGES = 200
DUE_ITEMS = 10
COPY_BATCH = 20_000
PAGE_BUDGET_MS = 100
SWEEP_BUDGET_MS = 200
# A word in one ticket in twenty (its matches grow with the desk), and one order's number.
SEARCH_WORD = "blender"
SEARCH_ORDER = "5000000042"
AMOUNT = Decimal("129.00")

ITEMS = [
    "mug", "headphones", "rain jacket", "desk lamp", "blender", "phone case", "laptop",
    "kettle", "backpack", "monitor", "keyboard", "sneakers", "toaster", "umbrella", "watch",
    "camera", "speaker", "tent", "vase", "chair",
]  # fmt: skip
PROBLEMS = [
    "arrived broken", "never arrived", "is the wrong colour", "stopped working",
    "was missing a part", "arrived late", "is not what I ordered", "was damaged in transit",
]  # fmt: skip
TOOLS = ["get_order", "search_policies", "get_customer_orders", "get_refund_status"]
TICKET_STATUSES = ["open", "pending", "solved", "closed", "closed", "closed"]
# What the requests that are not pending ended as (one in ten is not a success).
SETTLED = ["succeeded"] * 9 + ["rejected"]
CONFIRMATION_FOR = {
    "pending_approval": "pending",
    "succeeded": "approved",
    "rejected": "rejected",
}


def setup_django() -> None:
    """Point Django at the bench's own database before anything imports the models."""
    sys.path.insert(0, str(BASE_DIR))
    os.environ["DATABASE_URL"] = POSTGRES_URL
    os.environ.pop("REDIS_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    os.environ.setdefault("CELERY_FILESYSTEM_DIR", str(BASE_DIR / "var" / "broker_scale_bench"))
    os.environ["API_THROTTLE_USER"] = ""
    os.environ["API_THROTTLE_ANON"] = ""
    import django

    django.setup()


def log(message: str) -> None:
    """Progress goes to stderr, so that `--json` leaves stdout to the figures."""
    print(message, file=sys.stderr, flush=True)


def now() -> datetime:
    from django.utils import timezone

    return timezone.now()


# --- seeding ------------------------------------------------------------------------------


def copy_rows(model, rows: Iterable[dict]) -> int:
    """COPY `rows` (dicts keyed by attname) into `model`'s table. A field a row leaves out
    gets the field's default, so a column added to a model later does not break the bench."""
    from django.db import connection, models

    fields = model._meta.concrete_fields
    columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)
    sql = f"COPY {connection.ops.quote_name(model._meta.db_table)} ({columns}) FROM STDIN"
    count = 0
    with connection.cursor() as cursor, cursor.cursor.copy(sql) as copy:
        for row in rows:
            values = [row[f.attname] if f.attname in row else f.get_default() for f in fields]
            copy.write_row(
                [
                    json.dumps(v) if isinstance(f, models.JSONField) and v is not None else v
                    for f, v in zip(fields, values, strict=True)
                ]
            )
            count += 1
    return count


def first_free_id(model) -> int:
    from django.db.models import Max

    return (model.objects.aggregate(top=Max("pk"))["top"] or 0) + 1


def reset_sequences(models: list) -> None:
    """COPY wrote the ids itself: move each table's sequence past them."""
    from django.core.management.color import no_style
    from django.db import connection

    with connection.cursor() as cursor:
        for statement in connection.ops.sequence_reset_sql(no_style(), models):
            cursor.execute(statement)


@dataclass
class Ids:
    """The first id of each table in one batch."""

    customer: int
    order: int
    line: int
    ticket: int
    message: int
    event: int
    refund: int
    confirmation: int
    tool_call: int


@dataclass(frozen=True)
class TicketSpec:
    """One seeded ticket and everything hanging off it, as rows."""

    index: int
    ids: Ids
    offset: int  # the ticket's position in its batch
    created: datetime
    updated: datetime
    agent_id: int
    reviewer_id: int
    assignee_id: int | None
    status: str  # its refund request's
    run_id: uuid.UUID

    @property
    def item(self) -> str:
        return ITEMS[self.index % len(ITEMS)]

    @property
    def customer_id(self) -> int:
        return self.ids.customer + self.offset // TICKETS_PER_CUSTOMER

    @property
    def order_pk(self) -> int:
        return self.ids.order + self.offset

    @property
    def ticket_pk(self) -> int:
        return self.ids.ticket + self.offset

    @property
    def refund_pk(self) -> int:
        return self.ids.refund + self.offset

    @property
    def order_number(self) -> str:
        return str(5_000_000_000 + self.index)

    @property
    def reference(self) -> str:
        return f"TCK-{200_000 + self.index}"

    def customer_row(self) -> dict:
        from orders.addresses import email_key

        number = self.index // TICKETS_PER_CUSTOMER
        email = f"customer{number}@scale.example"
        return {
            "id": self.customer_id,
            "name": f"Customer {number}",
            "email": email,
            "email_key": email_key(email),
        }

    def order_row(self) -> dict:
        return {
            "id": self.order_pk,
            "order_id": self.order_number,
            "customer_id": self.customer_id,
            "status": "delivered",
            "amount_paid": AMOUNT,
            "placed_at": self.created - timedelta(days=6),
            "shipped_at": self.created - timedelta(days=4),
            "delivered_at": self.created - timedelta(days=1),
            "payment_reference": f"pay_{self.index}",
        }

    def line_row(self) -> dict:
        return {
            "id": self.ids.line + self.offset,
            "order_id": self.order_pk,
            "sku": f"SKU-{self.index % len(ITEMS)}",
            "name": self.item,
            "category": "home",
            "unit_price": AMOUNT,
        }

    def ticket_row(self) -> dict:
        problem = PROBLEMS[self.index % len(PROBLEMS)]
        return {
            "id": self.ticket_pk,
            "reference": self.reference,
            "customer_id": self.customer_id,
            "subject": f"My {self.item} {problem}",
            "status": TICKET_STATUSES[self.index % len(TICKET_STATUSES)],
            "assignee_id": self.assignee_id,
            "escalated": self.index % 50 == 7,
            "order_id": self.order_pk,
            "created_at": self.created,
            "updated_at": self.updated,
        }

    def message_rows(self) -> list[dict]:
        """The customer's message and the agent's emailed reply."""
        common = {"ticket_id": self.ticket_pk, "visibility": "public"}
        return [
            {
                **common,
                "id": self.ids.message + 2 * self.offset,
                "author_kind": "customer",
                "body": f"Hello, the {self.item} from order {self.order_number} "
                f"{PROBLEMS[self.index % len(PROBLEMS)]}. Can I get my money back?",
                "created_at": self.created,
            },
            {
                **common,
                "id": self.ids.message + 2 * self.offset + 1,
                "author_kind": "agent",
                "author_id": self.agent_id,
                "body": "Sorry to hear that: we are looking into it and will refund you.",
                "delivery": "sent",
                "message_id": f"<reply-{self.index}@scale.example>",
                "delivery_attempts": 1,
                "sent_at": self.updated,
                "created_at": self.updated,
            },
        ]

    def event_row(self) -> dict:
        return {
            "id": self.ids.event + self.offset,
            "ticket_id": self.ticket_pk,
            "type": "created",
            "data": {"via": "email"},
            "created_at": self.created,
        }

    def refund_row(self) -> dict:
        from refunds.identity import derive_request_id

        return {
            "id": self.refund_pk,
            "request_id": derive_request_id(
                ticket_reference=self.reference, order_id=self.order_number, n=0
            ),
            "ticket_id": self.ticket_pk,
            "order_id": self.order_pk,
            "amount": AMOUNT,
            "currency": "CNY",
            "reason": "damaged",
            "explanation": f"The {self.item} arrived damaged.",
            "status": self.status,
            "requested_by_id": self.agent_id,
            "run_id": self.run_id,
            "policy_evaluation": [{"clause": "R-1", "outcome": "pass", "detail": "in window"}],
            "provider_refund_id": f"sim_re_{self.index}" if self.status == "succeeded" else "",
            "created_at": self.created,
            "updated_at": self.updated,
        }

    def confirmation_row(self) -> dict:
        from refunds.identity import fingerprint

        refund = self.refund_row()
        params = {
            "request_id": refund["request_id"],
            "order_id": self.order_number,
            "customer_id": self.customer_id,
            "payment_reference": f"pay_{self.index}",
            "amount": f"{AMOUNT:.2f}",
            "currency": "CNY",
            "reason": "damaged",
            "requested_by_id": self.agent_id,
        }
        status = CONFIRMATION_FOR[self.status]
        decided = status != "pending"
        return {
            "id": self.ids.confirmation + self.offset,
            "refund_request_id": self.refund_pk,
            "version": 1,
            "fingerprint": fingerprint(params),
            "params": params,
            "status": status,
            # A pending version is still valid: the idle expiry sweep has nothing to do.
            "expires_at": self.created + timedelta(days=400 if status == "pending" else 1),
            "decided_by_id": self.reviewer_id if decided else None,
            "decided_at": self.updated if decided else None,
            "proposed_by_id": self.agent_id,
            "created_at": self.created,
        }

    def run_row(self) -> dict:
        return {
            "id": self.run_id,
            "ticket_id": self.ticket_pk,
            "started_by_id": self.agent_id,
            "customer_id": self.customer_id,
            "actor_role": "agent",
            "status": "completed",
            "stop_reason": "final_answer",
            "step_count": 3,
            "model": "offline",
            "tokens_in": 1200,
            "tokens_out": 180,
            "final_answer": "I proposed a refund; a reviewer will look at it.",
            "created_at": self.created,
            "updated_at": self.created + timedelta(seconds=20),
        }

    def tool_call_row(self, call_pk: int, n: int) -> dict:
        arguments = {"order_id": self.order_number}
        return {
            "id": call_pk,
            "run_id": self.run_id,
            "ticket_id": self.ticket_pk,
            "tool_call_id": f"call_{n}",
            "tool_name": TOOLS[n % len(TOOLS)],
            "arguments": arguments,
            "arguments_raw": json.dumps(arguments),
            "ok": True,
            "result": {"ok": True, "data": {"order_id": self.order_number, "status": "delivered"}},
            "actor_id": self.agent_id,
            "actor_role": "agent",
            "elapsed_ms": 12,
            "created_at": self.created + timedelta(seconds=n),
        }


@dataclass
class SeedLog:
    rows: int = 0
    seconds: float = 0.0
    tables: dict[str, int] = field(default_factory=dict)

    @property
    def rows_per_s(self) -> float:
        return self.rows / self.seconds if self.seconds else 0.0


class Seeder:
    """Grows the desk to a number of tickets, each with what a worked ticket has."""

    def __init__(self, *, pending_every: int) -> None:
        from django.contrib.auth import get_user_model

        users = {u.username: u.pk for u in get_user_model().objects.all()}
        self.agent_id = users["agent"]
        self.reviewer_id = users["reviewer"]
        self.assignees = [users["agent"], users["agent2"], users["supervisor"], None]
        self.pending_every = pending_every
        self.tickets = 0
        self.log = SeedLog()
        self.random = random.Random(13)
        self.now = now()

    def grow_to(self, tickets: int) -> None:
        while self.tickets < tickets:
            high = min(self.tickets + COPY_BATCH, tickets)
            self._batch(range(self.tickets, high))
            self.tickets = high
            log(
                f"  {high:>7,} tickets seeded: {self.log.rows:>10,} rows in "
                f"{self.log.seconds:6.1f} s, {self.log.rows_per_s:>8,.0f} rows/s"
            )

    def _batch(self, indexes: range) -> None:
        from django.db import transaction

        started = time.perf_counter()
        with transaction.atomic():
            for model, rows in self._tables(indexes):
                count = copy_rows(model, rows)
                self.log.tables[model._meta.label] = self.log.tables.get(model._meta.label, 0)
                self.log.tables[model._meta.label] += count
                self.log.rows += count
        self.log.seconds += time.perf_counter() - started

    def _tables(self, indexes: range) -> Iterator[tuple]:
        from agent.models import AgentRun, ToolCallLog
        from orders.models import Customer, Order, OrderLine
        from refunds.models import RefundConfirmation, RefundRequest
        from tickets.models import Ticket, TicketEvent, TicketMessage

        ids = Ids(
            *(
                first_free_id(model)
                for model in (
                    Customer,
                    Order,
                    OrderLine,
                    Ticket,
                    TicketMessage,
                    TicketEvent,
                    RefundRequest,
                    RefundConfirmation,
                    ToolCallLog,
                )
            )
        )
        specs = [self._spec(index, ids, index - indexes.start) for index in indexes]
        yield Customer, (s.customer_row() for s in specs if s.offset % TICKETS_PER_CUSTOMER == 0)
        yield Order, (s.order_row() for s in specs)
        yield OrderLine, (s.line_row() for s in specs)
        yield Ticket, (s.ticket_row() for s in specs)
        yield TicketMessage, (row for s in specs for row in s.message_rows())
        yield TicketEvent, (s.event_row() for s in specs)
        yield RefundRequest, (s.refund_row() for s in specs)
        yield RefundConfirmation, (s.confirmation_row() for s in specs)
        yield AgentRun, (s.run_row() for s in specs)
        yield (
            ToolCallLog,
            (
                s.tool_call_row(ids.tool_call + TOOL_CALLS_PER_TICKET * s.offset + n, n)
                for s in specs
                for n in range(TOOL_CALLS_PER_TICKET)
            ),
        )

    def _spec(self, index: int, ids: Ids, offset: int) -> TicketSpec:
        created = self.now - timedelta(days=365 * self.random.random())
        pending = index % self.pending_every == 0
        return TicketSpec(
            index=index,
            ids=ids,
            offset=offset,
            created=created,
            updated=min(created + timedelta(days=3 * self.random.random()), self.now),
            agent_id=self.agent_id,
            reviewer_id=self.reviewer_id,
            assignee_id=self.assignees[index % len(self.assignees)],
            status="pending_approval" if pending else SETTLED[index % len(SETTLED)],
            run_id=uuid.uuid4(),
        )

    def finish(self) -> None:
        """Sequences past the copied ids, and fresh planner statistics, as autovacuum would
        leave a table that grew this much."""
        from django.apps import apps
        from django.db import connection

        reset_sequences(list(apps.get_models()))
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE")


def seed_thread(ticket_reference: str, count: int) -> None:
    """Grow one ticket's conversation to `count` messages: customer mail, emailed replies
    and the assistant's internal notes, in turn."""
    from django.contrib.auth import get_user_model

    from tickets.models import Ticket, TicketMessage

    ticket = Ticket.objects.get(reference=ticket_reference)
    agent = get_user_model().objects.get(username="agent")
    kinds: list[dict[str, Any]] = [
        {"author_kind": "customer", "visibility": "public"},
        {"author_kind": "agent", "author": agent, "visibility": "public", "delivery": "sent"},
        {"author_kind": "assistant", "visibility": "internal"},
    ]
    missing = count - ticket.messages.count()
    TicketMessage.objects.bulk_create(
        TicketMessage(ticket=ticket, body=f"Message {n} about the broken mug.", **kinds[n % 3])
        for n in range(missing)
    )


# --- measuring ----------------------------------------------------------------------------


@dataclass
class Measurement:
    queries: int
    sql_ms: float  # median time in the database per request or call, round trips included
    median_ms: float
    p95_ms: float


@dataclass
class Subject:
    """A page or sweep, and what it measured at each size (tickets → measurement)."""

    name: str
    kind: str  # "page" or "sweep"
    budget_ms: int
    sizes: dict[int, Measurement] = field(default_factory=dict)


def p95(timings: list[float]) -> float:
    return statistics.quantiles(timings, n=20)[18]


def capturing_queries():
    """Django's CaptureQueriesContext on an emptied query log. The log keeps the last 9,000
    queries: a sweep timed forty times fills it, and a full log counts nothing more."""
    from django.db import connection, reset_queries
    from django.test.utils import CaptureQueriesContext

    reset_queries()
    return CaptureQueriesContext(connection)


class DatabaseTimer:
    """An execute wrapper: how long the queries it saw took, round trips included."""

    def __init__(self) -> None:
        self.seconds = 0.0

    def __call__(self, execute, sql, params, many, context):
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            self.seconds += time.perf_counter() - started

    @property
    def ms(self) -> float:
        return self.seconds * 1000


def measure_page(
    client, url: str, requests: int, before_each: Callable[[], None] | None = None
) -> Measurement:
    from django.db import connection

    before_each = before_each or (lambda: None)
    assert client.get(url).status_code == 200, url  # warm: templates, the session, caches
    before_each()
    with capturing_queries() as captured:
        client.get(url)
    # Counted now: the next request clears the connection's query log the capture reads.
    queries = len(captured)
    timings, in_database = [], []
    for _ in range(requests):
        before_each()
        timer = DatabaseTimer()
        with connection.execute_wrapper(timer):
            started = time.perf_counter()
            response = client.get(url)
            timings.append((time.perf_counter() - started) * 1000)
        in_database.append(timer.ms)
        assert response.status_code == 200, (url, response.status_code)
    return measurement(queries, in_database, timings)


def measurement(queries: int, in_database: list[float], timings: list[float]) -> Measurement:
    return Measurement(
        queries, statistics.median(in_database), statistics.median(timings), p95(timings)
    )


def forget_counted_rows() -> None:
    from ops.metrics import TALLIES

    for tally in TALLIES:
        tally.forget()


def pages() -> list[tuple[str, str, str, Callable[[], None] | None]]:
    """(name, url, the demo user who opens it, what to do before each request, untimed)."""
    thread = f"/tickets/{THREAD_TICKET}/"
    refunds_pending = "/api/refunds/?status=pending_approval"
    return [
        ("/tickets/", "/tickets/", "agent", None),
        (f"/tickets/?q={SEARCH_WORD}", f"/tickets/?q={SEARCH_WORD}", "agent", None),
        (f"/tickets/?q={SEARCH_ORDER}", f"/tickets/?q={SEARCH_ORDER}", "agent", None),
        ("/review/", "/review/", "reviewer", None),
        (refunds_pending, refunds_pending, "reviewer", None),
        (f"ticket with {THREAD_MESSAGES} messages", thread, "agent", None),
        ("/metrics (a scrape)", "/metrics", "reviewer", None),
        # What every scrape cost before a process kept its counts of the settled rows.
        ("/metrics (first of a process)", "/metrics", "reviewer", forget_counted_rows),
    ]


def signed_in_clients() -> dict:
    from django.contrib.auth import get_user_model
    from django.test import Client

    clients = {}
    for username in ("agent", "reviewer"):
        client = Client()
        client.force_login(get_user_model().objects.get(username=username))
        clients[username] = client
    return clients


# Each sweep's "due" maker turns DUE_ITEMS rows into work for it (inside the transaction the
# bench rolls back). Rows are picked by primary key, so the same rows at every size.


def make_refunds_due(count: int) -> None:
    """Half lost their provider answer long ago, half were approved and their task lost."""
    from refunds.models import RefundRequest

    stale = now() - timedelta(hours=1)
    picked = list(
        RefundRequest.objects.filter(status="succeeded")
        .order_by("pk")[:count]
        .values_list("pk", flat=True)
    )
    half = count // 2
    RefundRequest.objects.filter(pk__in=picked[:half]).update(
        status="outcome_unknown", provider_refund_id="", updated_at=stale
    )
    RefundRequest.objects.filter(pk__in=picked[half:]).update(
        status="approved", provider_refund_id="", updated_at=stale
    )


def make_confirmations_due(count: int) -> None:
    from refunds.models import RefundConfirmation

    picked = RefundConfirmation.objects.filter(status="pending").order_by("pk")[:count]
    RefundConfirmation.objects.filter(pk__in=list(picked.values_list("pk", flat=True))).update(
        expires_at=now() - timedelta(minutes=1)
    )


def make_runs_stalled(count: int) -> None:
    """Running runs whose worker died: the lease ran out five minutes ago."""
    from agent.models import AgentRun

    picked = list(AgentRun.objects.order_by("pk")[:count].values_list("pk", flat=True))
    AgentRun.objects.filter(pk__in=picked).update(
        status="running",
        stop_reason="",
        lease_owner="gone-worker",
        lease_expires_at=now() - timedelta(minutes=5),
    )


def make_replies_stalled(count: int) -> None:
    """Replies queued an hour ago whose send task never ran."""
    from tickets.models import TicketMessage

    picked = TicketMessage.objects.filter(delivery="sent").order_by("pk")[:count]
    TicketMessage.objects.filter(pk__in=list(picked.values_list("pk", flat=True))).update(
        delivery="queued", next_attempt_at=None, created_at=now() - timedelta(hours=1)
    )


def sweeps() -> list[tuple[str, Callable, Callable[[int], None]]]:
    """(name, the beat task, what makes work for it)."""
    from agent.tasks import resume_stalled_runs
    from refunds.tasks import expire_confirmations, reconcile_refunds
    from tickets.tasks import resend_stalled_replies

    return [
        ("reconcile_refunds", reconcile_refunds, make_refunds_due),
        ("expire_confirmations", expire_confirmations, make_confirmations_due),
        ("resume_stalled_runs", resume_stalled_runs, make_runs_stalled),
        ("resend_stalled_replies", resend_stalled_replies, make_replies_stalled),
    ]


def keep_tasks_local() -> None:
    """The sweeps enqueue the work they find; here nothing may reach a broker."""
    from agent import tasks as agent_tasks
    from refunds import tasks as refund_tasks
    from tickets import tasks as ticket_tasks

    for task in (agent_tasks.advance_run, ticket_tasks.send_reply, refund_tasks.execute_refund):
        task.delay = lambda *args, **kwargs: None


def measure_sweep(name: str, task: Callable, make_due: Callable[[int], None] | None, calls: int):
    """Time `calls` runs of the sweep, each in a transaction that is rolled back, so each
    finds the same `DUE_ITEMS` rows due (or none without `make_due`); the first, which is not
    timed, must report that it handled them."""
    from django.db import connection, transaction

    timings, in_database, queries = [], [], 0
    for call in range(calls + 1):
        with transaction.atomic():
            if make_due:
                make_due(DUE_ITEMS)
            if call == 0:  # the first call is counted and warms up, not timed
                with capturing_queries() as captured:
                    found = items_handled(task())
                queries = len(captured)
                expected = DUE_ITEMS if make_due else 0
                if found != expected:
                    raise SystemExit(
                        f"{name} handled {found} items where {expected} were due: "
                        "its figures would not measure the work they claim to"
                    )
            else:
                timer = DatabaseTimer()
                with connection.execute_wrapper(timer):
                    started = time.perf_counter()
                    task()
                    timings.append((time.perf_counter() - started) * 1000)
                in_database.append(timer.ms)
            transaction.set_rollback(True)
    return measurement(queries, in_database, timings)


def items_handled(result: int | str) -> int:
    """How many items a sweep's return value says it handled: a count, or reconcile's
    summary ("outcome_unknown: 5 succeeded; provider_pending: none; ...")."""
    if isinstance(result, int):
        return result
    return sum(int(count) for count in re.findall(r"(\d+) \w", result))


def measure_all(subjects: dict[str, Subject], size: int, requests: int) -> None:
    clients = signed_in_clients()
    # The seed wrote rows dated up to a year back, under the marks of the last size's scrapes
    # (ops.metrics.Tally): scrape as a process started on this data does.
    forget_counted_rows()
    for name, url, username, before_each in pages():
        subject = subjects.setdefault(name, Subject(name, "page", PAGE_BUDGET_MS))
        subject.sizes[size] = measure_page(clients[username], url, requests, before_each)
        log(f"  {name}: {subject.sizes[size]}")
    for name, task, make_due in sweeps():
        for label, maker in (("idle", None), (f"{DUE_ITEMS} due", make_due)):
            key = f"{name} ({label})"
            subject = subjects.setdefault(key, Subject(key, "sweep", SWEEP_BUDGET_MS))
            subject.sizes[size] = measure_sweep(name, task, maker, requests)
            log(f"  {key}: {subject.sizes[size]}")


def explain_sweeps() -> dict[str, list[str]]:
    """Each idle sweep's queries, as PostgreSQL runs them: EXPLAIN (ANALYZE) of every SELECT."""
    from django.db import connection, transaction

    plans: dict[str, list[str]] = {}
    for name, task, _ in sweeps():
        with transaction.atomic(), capturing_queries() as captured:
            task()
            transaction.set_rollback(True)
        plans[name] = []
        with connection.cursor() as cursor:
            for query in captured.captured_queries:
                if not query["sql"].lstrip().upper().startswith("SELECT"):
                    continue
                cursor.execute(f"EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) {query['sql']}")
                plan = "\n".join(row[0] for row in cursor.fetchall())
                plans[name].append(f"{query['sql']}\n{plan}")
    return plans


# --- the run ------------------------------------------------------------------------------


def cpu_model() -> str:
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def machine() -> dict:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        server = cursor.fetchone()[0]
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "postgresql": server,
    }


# (Measurement attribute, title, width of one size's figure, decimals)
COLUMNS = [
    ("queries", "queries", 8, 0),
    ("sql_ms", "sql ms", 8, 1),
    ("median_ms", "median ms", 9, 1),
    ("p95_ms", "p95 ms", 8, 1),
]


def table(subjects: dict[str, Subject], sizes: list[int]) -> str:
    """One row per page or sweep: each column at every size, side by side."""
    head = f"{'':<40}" + "".join(f"{title:>{width * len(sizes)}}" for _, title, width, _ in COLUMNS)
    tickets = f"{'tickets':<40}" + "".join(
        f"{f'{size:,}':>{width}}" for _, _, width, _ in COLUMNS for size in sizes
    )
    lines = [f"{head}{'budget':>8}", tickets]
    for subject in subjects.values():
        row = f"{subject.name:<40}"
        for attribute, _, width, decimals in COLUMNS:
            row += "".join(
                f"{getattr(subject.sizes[s], attribute):>{width}.{decimals}f}" for s in sizes
            )
        worst = max(subject.sizes[s].p95_ms for s in sizes)
        flat = len({subject.sizes[s].queries for s in sizes}) == 1
        verdict = (
            "" if flat and worst < subject.budget_ms else "  <- over" if flat else "  <- grows"
        )
        lines.append(f"{row}{subject.budget_ms:>8}{verdict}")
    return "\n".join(lines)


def run(scale: float, requests: int, explain: bool) -> dict:
    from django.conf import settings
    from django.db import connection

    from desk.demo import seed_demo

    # The test client's host, without the rest of the test environment: its instrumented
    # template rendering would add to every page's time.
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
    # Whole customers at both sizes: a batch starts on a customer's first ticket.
    full = max(100, int(FULL_TICKETS * scale) // 100 * 100)
    first = int(full * FIRST_SIZE_FRACTION)
    sizes = [first, full]
    keep_tasks_local()
    seed_demo()
    seed_thread(THREAD_TICKET, THREAD_MESSAGES)
    # 2% pending, as at full size; more in a small quick run, so that DUE_ITEMS can lapse.
    seeder = Seeder(pending_every=max(1, min(FULL_TICKETS // FULL_PENDING, first // DUE_ITEMS)))
    subjects: dict[str, Subject] = {}
    for size in sizes:
        log(f"Seeding to {size:,} tickets ({TOOL_CALLS_PER_TICKET} tool calls each)")
        seeder.grow_to(size)
        seeder.finish()
        log(f"Measuring at {size:,} tickets ({requests} requests or calls each)")
        measure_all(subjects, size, requests)
    return {
        "machine": machine(),
        "database": connection.settings_dict["NAME"],
        "sizes": sizes,
        "seeding": {
            "rows": seeder.log.rows,
            "seconds": round(seeder.log.seconds, 1),
            "rows_per_s": round(seeder.log.rows_per_s),
            "tables": seeder.log.tables,
        },
        "subjects": subjects,
        "explain": explain_sweeps() if explain else {},
    }


def as_json(result: dict) -> str:
    subjects = [
        {
            "name": s.name,
            "kind": s.kind,
            "budget_ms": s.budget_ms,
            "sizes": {
                str(size): {
                    "queries": m.queries,
                    "sql_ms": round(m.sql_ms, 2),
                    "median_ms": round(m.median_ms, 2),
                    "p95_ms": round(m.p95_ms, 2),
                }
                for size, m in s.sizes.items()
            },
        }
        for s in result["subjects"].values()
    ]
    return json.dumps({**result, "subjects": subjects}, indent=2)


def report(result: dict) -> str:
    seeding = result["seeding"]
    lines = [
        f"Machine: {result['machine']}",
        f"Seeded {seeding['rows']:,} rows in {seeding['seconds']} s "
        f"({seeding['rows_per_s']:,} rows/s, COPY)",
        "",
        table(result["subjects"], result["sizes"]),
    ]
    for name, plans in result["explain"].items():
        lines += ["", f"== EXPLAIN {name} =="]
        lines += plans
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of the full counts")
    parser.add_argument("--requests", type=int, default=30, help="timed requests per page")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--explain", action="store_true", help="print the sweeps' plans")
    parser.add_argument(
        "--keep", action="store_true", help="keep the seeded database (drop it with dropdb)"
    )
    args = parser.parse_args()
    setup_django()
    from django.db import connection

    test_db = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        result = run(args.scale, args.requests, args.explain)
    finally:
        if args.keep:
            log(f"Kept the database {test_db}")
        else:
            connection.creation.destroy_test_db(test_db, verbosity=0)
    print(as_json(result) if args.json else report(result))


if __name__ == "__main__":
    main()
