"""GET /healthz: can this desk do its work? For load balancers and orchestrators.

Four checks, each bounded by HEALTHZ_TIMEOUT_S, none of them cached (a cached answer would
hide an outage for as long as it lived):

* database  SELECT 1 on a connection of its own, with a short connect timeout, kept for the
            next probe (one session per process, not one per probe)
* broker    Redis answers PING; or the filesystem broker's folder takes a file
* worker    some worker connected to the broker recorded a heartbeat within three
            WORKER_HEARTBEAT_S (ops/worker.py records one when its consumer starts and
            every interval after, from the worker's timer)
* beat      every periodic sweep of CELERY_BEAT_SCHEDULE succeeded within three of its
            periods (ops/worker.py records each success)

"down" (HTTP 503) when the database or the broker is down: nothing this process serves can
work, take it out of rotation. "degraded" (200) when no worker beats or a sweep is late: pages
still work and work still queues, but nothing runs it. "ok" (200) otherwise.

Heartbeats and sweep times live in the "ops" cache (settings): Redis when there is one, else
files beside the embedded broker's. Either is shared by every process, which the worker's
in-process state or a per-process cache would not be; and neither needs a broadcast, which
the filesystem transport cannot do (so no `celery inspect ping`).

Why not django-health-check (read at 4.8): its view answers {"<check repr>": "OK" or the
error's text} with 500 on any failure, not this JSON, "degraded" or 503; and none of its
checks does what these do without changing what they answer:

* database  its Database runs SELECT 1 on Django's own connection
            (temporary_connection): in a web process that takes one of the pool's, or else
            opens a session a probe (the leak docs/security.md records); it waits out the
            connect timeout of the settings; and it answers the driver's text up to its
            first colon, which may name the host, where this names only the error's class
* broker    its Redis could PING (with timeouts from a client factory), but answers
            ServiceUnavailable or "unknown error" for every failure, not the error's class;
            its Storage tests a Django storage in a subfolder of its own, not that the
            folder publishers write to takes a file named as a staged message (ops/broker.py)
* worker    its Celery Ping is a broadcast (`control.ping`), which the filesystem transport
            cannot do, and it reports no heartbeat age
* beat      it has no check of Celery beat's sweeps (its crontask Scheduler looks for
            django-crontask's lock), nor of a daily sweep that is pending until its first run
* the ops cache  its Cache could set and get a key there, but worker and beat read that
            store already and answer "unknown" (naming the error's class) when it fails;
            a check of its own would be a fifth entry in "checks"
"""

import contextlib
import math
import os
import threading
import time
import uuid
from collections.abc import Callable
from datetime import timedelta

import psycopg
import redis
from django.conf import settings
from django.core.cache import caches
from django.db import connection
from django.http import JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe
from kombu import Connection

from ops.broker import STAGING_SUFFIX

OPS_CACHE = "ops"
HEARTBEAT_KEY = "worker-heartbeat"
SWEEP_KEY_PREFIX = "sweep:"
# Late by more than this many periods is stale: one missed beat is noise, three is an outage.
STALE_AFTER_PERIODS = 3

OK, DOWN, STALE, UNKNOWN = "ok", "down", "stale", "unknown"
PENDING = "pending"
# A sweep that runs this rarely or less is "pending" until its first run (check_beat).
PENDING_PERIOD_S = 3600.0


# --- What workers record -------------------------------------------------------------------


def record_worker_heartbeat(now: float | None = None) -> None:
    caches[OPS_CACHE].set(HEARTBEAT_KEY, now or time.time(), timeout=None)


def record_sweep(task_name: str, now: float | None = None) -> None:
    caches[OPS_CACHE].set(SWEEP_KEY_PREFIX + task_name, now or time.time(), timeout=None)


def schedule_seconds(schedule) -> float | None:
    """A beat entry's period; None for a schedule without a fixed one (a crontab)."""
    if isinstance(schedule, int | float):
        return float(schedule)
    if isinstance(schedule, timedelta):
        return schedule.total_seconds()
    run_every = getattr(schedule, "run_every", None)
    return run_every.total_seconds() if isinstance(run_every, timedelta) else None


def periodic_sweeps() -> dict[str, tuple[str, float | None]]:
    """Beat entry name -> (its task's name, its period in seconds)."""
    return {
        name: (str(entry["task"]), schedule_seconds(entry["schedule"]))
        for name, entry in settings.CELERY_BEAT_SCHEDULE.items()
    }


def sweep_task_names() -> set[str]:
    return {task for task, _ in periodic_sweeps().values()}


def recorded_times() -> tuple[float | None, dict[str, float]]:
    """The last worker heartbeat and each sweep task's last success (epoch seconds), in one
    round trip to the store. Raises if the store cannot be read."""
    keys = [HEARTBEAT_KEY, *(SWEEP_KEY_PREFIX + task for task in sweep_task_names())]
    found = caches[OPS_CACHE].get_many(keys)
    sweeps = {
        key.removeprefix(SWEEP_KEY_PREFIX): value
        for key, value in found.items()
        if key.startswith(SWEEP_KEY_PREFIX)
    }
    return found.get(HEARTBEAT_KEY), sweeps


def forget_recorded_times() -> None:
    """For tests: as if no worker had ever run. Only our keys: the store may be the broker's
    Redis database, which a clear() would empty."""
    caches[OPS_CACHE].delete_many(
        [HEARTBEAT_KEY, *(SWEEP_KEY_PREFIX + task for task in sweep_task_names())]
    )


# --- Checks --------------------------------------------------------------------------------


def _probe(reach: Callable[[], object]) -> dict:
    """Run `reach`; "ok" with how long it took, or "down" naming only the error's class (its
    text may hold host names and users: not for an unauthenticated page)."""
    started = time.perf_counter()
    try:
        reach()
    except Exception as exc:
        return {"status": DOWN, "error": type(exc).__name__}
    return {"status": OK, "latency_ms": round((time.perf_counter() - started) * 1000, 1)}


def _connect_probe():
    """A new connection with the request's settings but a short timeout: Django's own would
    wait out the TCP timeout for a server that vanished, and a failure on it would leave the
    request's connection broken."""
    timeout = settings.HEALTHZ_TIMEOUT_S
    params = connection.get_connection_params()
    if connection.vendor == "postgresql":
        params["connect_timeout"] = max(2, math.ceil(timeout))  # libpq's minimum is 2 s
        params.setdefault("options", f"-c statement_timeout={int(timeout * 1000)}")
        # Kept between probes: no transaction may stay open on it.
        params["autocommit"] = True
        # Not get_new_connection: in a web process that would take one of the pool's.
        return psycopg.connect(**params)
    if connection.vendor == "sqlite":
        params["timeout"] = timeout
    return connection.get_new_connection(params)


def _select_one_on(raw) -> None:
    cursor = raw.cursor()
    try:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    finally:
        cursor.close()


class _ProbeConnection:
    """The database check's connection, kept from one probe to the next: load balancers probe
    every few seconds each, and a session per probe is a backend process started and ended on
    the server every time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._raw = None

    def select_one(self) -> None:
        if not self._lock.acquire(timeout=settings.HEALTHZ_TIMEOUT_S):
            raise TimeoutError("an earlier probe is still waiting for the database")
        try:
            if self._raw is not None:
                try:
                    return _select_one_on(self._raw)
                except Exception:
                    # Dropped since the last probe (a restart, a failover): try a new one.
                    self._drop()
            self._raw = _connect_probe()
            try:
                _select_one_on(self._raw)
            except Exception:
                self._drop()
                raise
        finally:
            self._lock.release()

    def close(self) -> None:
        with self._lock:
            self._drop()

    def _drop(self) -> None:
        raw, self._raw = self._raw, None
        if raw is not None:
            with contextlib.suppress(Exception):  # it is gone either way
                raw.close()


_probe_connection = _ProbeConnection()


def close_probe_connection() -> None:
    """Close the database check's connection (before a test database is dropped: PostgreSQL
    refuses while it is connected)."""
    _probe_connection.close()


def _reach_broker() -> None:
    url = settings.CELERY_BROKER_URL
    timeout = settings.HEALTHZ_TIMEOUT_S
    if url.startswith(("redis://", "rediss://")):
        client = redis.Redis.from_url(url, socket_connect_timeout=timeout, socket_timeout=timeout)
        try:
            client.ping()
        finally:
            client.close()
    elif url.startswith("filesystem://"):
        _write_probe_file(settings.CELERY_BROKER_TRANSPORT_OPTIONS["data_folder_out"])
    else:
        with Connection(url, connect_timeout=timeout) as broker:
            broker.ensure_connection(max_retries=1)


def _write_probe_file(folder: str) -> None:
    """The folder publishers write messages to takes a file. The name ends like a message
    being staged (ops/broker.py), so no consumer ever takes it."""
    os.makedirs(folder, exist_ok=True)
    probe = os.path.join(folder, f"healthz-{uuid.uuid4().hex}{STAGING_SUFFIX}")
    with open(probe, "xb") as file:
        file.write(b"{}")
    os.remove(probe)


def check_database() -> dict:
    return _probe(_probe_connection.select_one)


def check_broker() -> dict:
    return _probe(_reach_broker)


def _age(then: float | None, now: float) -> float | None:
    return None if then is None else round(max(0.0, now - then), 1)


def check_worker(heartbeat: float | None, now: float) -> dict:
    stale_after = STALE_AFTER_PERIODS * settings.WORKER_HEARTBEAT_S
    age = _age(heartbeat, now)
    return {
        "status": OK if age is not None and age <= stale_after else STALE,
        "last_heartbeat_age_s": age,
        "stale_after_s": stale_after,
    }


def check_beat(last_runs: dict[str, float], now: float) -> dict:
    sweeps = {}
    for name, (task, period) in sorted(periodic_sweeps().items()):
        age = _age(last_runs.get(task), now)
        stale_after = None if period is None else STALE_AFTER_PERIODS * period
        late = age is None or (stale_after is not None and age > stale_after)
        # Beat runs a sweep first one period after it starts: a daily one (purge_data) that
        # has not run yet is pending, not late, for the desk's first day.
        pending = age is None and period is not None and period >= PENDING_PERIOD_S
        sweeps[name] = {
            "status": PENDING if pending else STALE if late else OK,
            "last_run_age_s": age,
            "stale_after_s": stale_after,
        }
    stale = any(sweep["status"] == STALE for sweep in sweeps.values())
    return {"status": STALE if stale else OK, "sweeps": sweeps}


def background_checks(now: float | None = None) -> tuple[dict, dict]:
    """The worker and beat checks; both "unknown" when the store cannot be read."""
    now = now or time.time()
    try:
        heartbeat, last_runs = recorded_times()
    except Exception as exc:
        unknown = {"status": UNKNOWN, "error": type(exc).__name__}
        return unknown, dict(unknown)
    return check_worker(heartbeat, now), check_beat(last_runs, now)


def overall_status(checks: dict) -> str:
    if any(checks[name]["status"] != OK for name in ("database", "broker")):
        return "down"
    if any(check["status"] != OK for check in checks.values()):
        return "degraded"
    return "ok"


@require_safe
@never_cache
def healthz(request):
    """No login: a load balancer has none, and the answer names no host, user or secret."""
    worker, beat = background_checks()
    checks = {
        "database": check_database(),
        "broker": check_broker(),
        "worker": worker,
        "beat": beat,
    }
    status = overall_status(checks)
    return JsonResponse(
        {"status": status, "checks": checks}, status=503 if status == "down" else 200
    )
