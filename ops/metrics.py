"""Prometheus metrics at GET /metrics, for staff sessions or `Authorization: Bearer
<METRICS_TOKEN>` (README "Operations").

Web and worker are separate processes, often on separate machines, and prometheus-client
keeps a metric in the memory of the process that counts it. So each metric comes from where
the truth is:

* What the database records is read from it at scrape time, and so is right whatever
  process (or host, or restart) did the work: tool calls by tool and error code (ToolCallLog:
  one row per call, a replayed call counted once), runs by stop reason, refunds by status
  (rows older than a few minutes are read once per process: Tally), the oldest refund
  waiting for review. Sweep lag and the worker's heartbeat age come from the "ops" store
  /healthz reads (ops/health.py).
* What only the step sees as it happens (each step's outcome, how long the model took, why a
  model call failed) is counted in the worker (agent/metrics.py) with prometheus-client's
  multiprocess mode: every process writes its values to a file of its own in
  PROMETHEUS_MULTIPROC_DIR (a memory-mapped write, no query, no network) and the scrape adds
  the files up. The folder is per host: a worker on another machine is scraped there (or
  shares nothing), see README.

Staying cheap on the step path is the point of that split: recording costs the step no query.
"""

import collections
import hmac
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

from django.apps import apps
from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count, Min, Q
from django.http import HttpResponse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe
from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from agent.metrics import known_series
from agent.providers.breaker import breaker_metrics
from agent.tools.registry import tool_names
from ops.health import periodic_sweeps, recorded_times
from tickets.satisfaction import ratings_by_value
from tickets.sla import breached_by_priority

# --- What the database and the ops store say, read at scrape time --------------------------


# Rows written longer ago than this are counted once per process (Tally).
SETTLED_AFTER = timedelta(minutes=10)
# Keys of rows that closed since the last scrape, read at a time: bound parameters.
KEYS_PER_READ = 500


@contextmanager
def one_snapshot() -> Iterator[None]:
    """Reads that see the database as it was at one moment: a row that changed between two
    of a Tally's reads would be counted twice or not at all. A transaction is one on SQLite;
    on PostgreSQL it takes REPEATABLE READ. Inside a caller's transaction (a test's), that
    transaction decides."""
    if connection.in_atomic_block:
        yield
        return
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        yield


class Tally:
    """A table's rows counted by `fields` for every scrape without reading the whole table
    every time (at a million tool calls that took 0.4 s a scrape).

    Rows written more than SETTLED_AFTER ago are read once, up to the newest of them by
    `order` (the mark), and their counts kept. Only those still open (`still_open(model)`, a
    filter with an index of its own: a run going, a refund not settled; None: a row is final
    once written) can change: each scrape reads them, and then only the rows that were open
    at the last scrape and are not now. Rows above the mark are counted at every scrape. So a
    scrape reads the last minutes' rows and the open ones, and the first scrape of a process
    reads them all, once. `order` is a column that grows as rows are written, with an index.

    A scrape reads from one snapshot (one_snapshot). A row would be missed only if its
    transaction stayed open longer than SETTLED_AFTER (it falls under the mark before it
    commits); no transaction of the desk comes near it. Rows
    deleted under the mark stay counted, as a counter of what happened should, until the
    row at the mark is deleted too: then the counts start over."""

    def __init__(
        self,
        model: str,
        fields: tuple[str, ...],
        *,
        order: str = "pk",
        still_open: Callable[[Any], Q] | None = None,
    ):
        self.model = model
        self.fields = fields
        self.order = order
        self.still_open = still_open
        self.lock = threading.Lock()
        self.forget()

    def forget(self) -> None:
        self.mark: Any = None  # `order` of the newest row read once; None: none yet
        self.mark_pk: Any = None
        self.counts: collections.Counter = collections.Counter()  # of the final rows to it
        self.open_pks: set = set()  # rows under the mark that were open at the last scrape

    def counts_now(self) -> collections.Counter:
        model = apps.get_model(self.model)
        rows = model.objects.order_by()
        settled_before = timezone.now() - SETTLED_AFTER
        # A snapshot begins with its first read, here inside the lock: so each scrape reads a
        # database at least as new as the one the kept counts came from (an older one would
        # count again what closed since).
        with self.lock, one_snapshot():
            if self.mark_pk is not None and not rows.filter(pk=self.mark_pk).exists():
                self.forget()  # what it counted was deleted
            newest_settled = (
                rows.filter(created_at__lt=settled_before)
                .order_by(f"-{self.order}")
                .values_list(self.order, "pk")
                .first()
            )
            if newest_settled and (self.mark is None or newest_settled[0] > self.mark):
                up_to_it = self.above_mark(rows).filter(**{f"{self.order}__lte": newest_settled[0]})
                if self.still_open is not None:
                    up_to_it = up_to_it.exclude(self.still_open(model))
                self.counts += self.grouped(up_to_it)
                self.mark, self.mark_pk = newest_settled
            return (
                self.counts
                + self.open_under_mark(model, rows)
                + self.grouped(self.above_mark(rows))
            )

    def open_under_mark(self, model, rows) -> collections.Counter:
        """The open rows under the mark, counted as they are now; the rows that were open at
        the last scrape and are final now join the kept counts."""
        if self.still_open is None or self.mark is None:
            return collections.Counter()
        under_mark = rows.filter(**{f"{self.order}__lte": self.mark})
        open_rows = list(under_mark.filter(self.still_open(model)).values_list("pk", *self.fields))
        open_pks = {pk for pk, *_ in open_rows}
        closed = list(self.open_pks - open_pks)
        for start in range(0, len(closed), KEYS_PER_READ):
            self.counts += self.grouped(rows.filter(pk__in=closed[start : start + KEYS_PER_READ]))
        self.open_pks = open_pks
        return collections.Counter(tuple(key) for _, *key in open_rows)

    def above_mark(self, rows):
        return rows if self.mark is None else rows.filter(**{f"{self.order}__gt": self.mark})

    def grouped(self, rows) -> collections.Counter:
        return collections.Counter(
            {tuple(key): n for *key, n in rows.values_list(*self.fields).annotate(n=Count("pk"))}
        )


TOOL_CALLS = Tally("agent.ToolCallLog", ("tool_name", "error_code"))
# Runs' keys are random (UUIDs). Both filters are those of the tables' partial indexes.
RUNS = Tally(
    "agent.AgentRun",
    ("stop_reason",),
    order="created_at",
    still_open=lambda model: Q(status__in=[model.Status.QUEUED, model.Status.RUNNING]),
)
REFUNDS = Tally(
    "refunds.RefundRequest",
    ("status",),
    still_open=lambda model: ~Q(status__in=model.SETTLED_STATUSES),
)
TALLIES = (TOOL_CALLS, RUNS, REFUNDS)


def _refunds_by_status() -> Metric:
    refund_request = apps.get_model("refunds", "RefundRequest")
    family = GaugeMetricFamily(
        "desk_refund_requests", "Refund requests by status, now.", labels=["status"]
    )
    counts = REFUNDS.counts_now()
    for status in refund_request.Status.values:
        family.add_metric([status], counts[(status,)])
    return family


def _oldest_pending_review() -> Metric:
    refund_request = apps.get_model("refunds", "RefundRequest")
    oldest = refund_request.objects.filter(status=refund_request.Status.PENDING_APPROVAL).aggregate(
        oldest=Min("created_at")
    )["oldest"]
    age = 0.0 if oldest is None else max(0.0, (timezone.now() - oldest).total_seconds())
    return GaugeMetricFamily(
        "desk_review_oldest_pending_seconds",
        "How long the oldest refund waiting for a reviewer has waited (0 when none waits).",
        value=age,
    )


def _runs_by_stop_reason() -> Metric:
    agent_run = apps.get_model("agent", "AgentRun")
    family = CounterMetricFamily(
        "desk_agent_runs", "Assistant runs that ended, by stop reason.", labels=["stop_reason"]
    )
    counts = {reason: n for (reason,), n in RUNS.counts_now().items() if reason}
    for reason in sorted({*agent_run.StopReason.values, *counts}):
        family.add_metric([reason], counts.get(reason, 0))
    return family


def _tool_calls() -> Metric:
    family = CounterMetricFamily(
        "desk_tool_calls",
        "Tool calls (assistant runs and MCP sessions) by tool and error code (none: it succeeded).",
        labels=["tool", "error_code"],
    )
    counts: collections.Counter = collections.Counter()
    for (tool, error_code), n in TOOL_CALLS.counts_now().items():
        # A model may name any tool; one label for all the names that are not ours keeps the
        # series countable.
        tool = "(unknown)" if error_code == "UNKNOWN_TOOL" else tool
        counts[(tool, error_code or "none")] += n
    for (tool, error_code), n in sorted(counts.items()):
        family.add_metric([tool, error_code], n)
    return family


def _sla_breached() -> Metric:
    """DESIGN §15: tickets with a running SLA target past due now, by priority."""
    family = GaugeMetricFamily(
        "desk_tickets_sla_breached",
        "Tickets with a running SLA target (first response or resolution) past due, by priority.",
        labels=["priority"],
    )
    for priority, count in breached_by_priority().items():
        family.add_metric([priority], count)
    return family


def _satisfaction_ratings() -> Metric:
    """DESIGN §19: every rating customers gave, by value (one per answered survey)."""
    family = CounterMetricFamily(
        "desk_satisfaction_ratings",
        "Customer satisfaction ratings given (one per answered survey), by rating.",
        labels=["rating"],
    )
    for rating, count in ratings_by_value().items():
        family.add_metric([rating], count)
    return family


def _background() -> Iterator[Metric]:
    """Sweep lag (+Inf for a sweep that never ran) and the newest worker heartbeat's age;
    nothing when the store cannot be read (an absent series, not a made-up number)."""
    try:
        heartbeat, last_runs = recorded_times()
    except Exception:
        return
    now = time.time()
    lag = GaugeMetricFamily(
        "desk_sweep_lag_seconds",
        "Seconds since each periodic sweep last succeeded (+Inf: never).",
        labels=["sweep"],
    )
    for name, (task, _period) in sorted(periodic_sweeps().items()):
        ran = last_runs.get(task)
        lag.add_metric([name], float("inf") if ran is None else max(0.0, now - ran))
    yield lag
    yield GaugeMetricFamily(
        "desk_worker_heartbeat_age_seconds",
        "Seconds since a worker last recorded its heartbeat (+Inf: never).",
        value=float("inf") if heartbeat is None else max(0.0, now - heartbeat),
    )


class DeskCollector(Collector):
    def collect(self) -> Iterator[Metric]:
        yield _refunds_by_status()
        yield _oldest_pending_review()
        yield _runs_by_stop_reason()
        yield _tool_calls()
        yield _sla_breached()
        yield _satisfaction_ratings()
        yield from _background()
        yield from breaker_metrics()

    def describe(self) -> list[Metric]:
        return []  # nothing to check for clashes: the registry is made per scrape


def exposition() -> bytes:
    known_series(tools=tool_names())
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=settings.PROMETHEUS_MULTIPROC_DIR)
    registry.register(DeskCollector())
    return generate_latest(registry)


# --- The page ------------------------------------------------------------------------------


def _bearer_token(request) -> str | None:
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else None


def _refusal(request) -> HttpResponse | None:
    """None when the caller may scrape: a staff session, or the METRICS_TOKEN bearer token
    (compared in constant time). 401 without credentials or with a wrong token, 403 for a
    signed-in user who is not staff."""
    token = _bearer_token(request)
    expected = settings.METRICS_TOKEN
    if token is not None:
        if expected and hmac.compare_digest(token.encode(), expected.encode()):
            return None
        return _unauthorized("invalid token")
    user = request.user
    if user.is_authenticated and user.is_staff:
        return None
    if user.is_authenticated:
        return HttpResponse("Staff only.\n", status=403, content_type="text/plain")
    return _unauthorized("")


def _unauthorized(error: str) -> HttpResponse:
    response = HttpResponse("Authentication required.\n", status=401, content_type="text/plain")
    challenge = 'Bearer realm="metrics"'
    response["WWW-Authenticate"] = f'{challenge}, error="{error}"' if error else challenge
    return response


@require_safe
@never_cache
def metrics(request):
    refusal = _refusal(request)
    if refusal is not None:
        return refusal
    # The classic text format, which every Prometheus version reads (the names need no escaping).
    return HttpResponse(exposition(), content_type=CONTENT_TYPE_PLAIN_0_0_4)
