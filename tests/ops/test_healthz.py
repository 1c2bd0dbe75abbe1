"""GET /healthz: ok with everything up, degraded when background work stalls, 503 when this
process cannot reach its database or broker."""

import json
import time

import pytest
from django.db import connection
from django.test import Client

from config.celery import app as celery_app
from ops.health import (
    close_probe_connection,
    periodic_sweeps,
    record_sweep,
    record_worker_heartbeat,
)
from tests.conftest import TEST_QUEUE
from tests.ops.conftest import healthz_in_another_process
from tests.services import WorkerProcess, database_url_for_subprocess, wait_for

pytestmark = pytest.mark.django_db


def healthz() -> tuple[int, dict]:
    response = Client().get("/healthz")  # no login
    assert response["Content-Type"] == "application/json"
    assert "no-store" in response["Cache-Control"]
    return response.status_code, response.json()


def record_every_sweep(now: float) -> None:
    for task, _period in periodic_sweeps().values():
        record_sweep(task, now=now)


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_it_is_ok_while_a_real_worker_beats_and_every_sweep_ran(ops_store, settings):
    # Given a worker that beats every second, and every periodic sweep run through it
    settings.WORKER_HEARTBEAT_S = 1
    worker = WorkerProcess(
        TEST_QUEUE, extra_env={"WORKER_HEARTBEAT_S": "1"}, log_name="ops-heartbeat"
    ).start()
    try:
        sent = [celery_app.send_task(task) for task, _ in periodic_sweeps().values()]
        for task in sent:
            wait_for(lambda task=task: worker.finished(task), what="a sweep", worker=worker)

        # Then /healthz answers ok, check by check
        status, body = healthz()
        assert (status, body["status"]) == (200, "ok"), body
        assert {name: check["status"] for name, check in body["checks"].items()} == {
            "database": "ok",
            "broker": "ok",
            "worker": "ok",
            "beat": "ok",
        }
        assert set(body["checks"]["beat"]["sweeps"]) == set(periodic_sweeps())

        # And still after more than three intervals: the worker keeps beating
        time.sleep(3.5)
        status, body = healthz()
        assert body["checks"]["worker"]["status"] == "ok", body
        assert body["checks"]["worker"]["last_heartbeat_age_s"] < 3
    finally:
        worker.stop()

    # When the worker is gone for three intervals, the desk is degraded, not down
    time.sleep(3.5)
    status, body = healthz()
    assert (status, body["status"], body["checks"]["worker"]["status"]) == (
        200,
        "degraded",
        "stale",
    )


def test_it_is_degraded_when_a_sweep_is_late_by_three_periods(ops_store):
    now = time.time()
    record_worker_heartbeat(now=now)
    record_every_sweep(now=now)
    # Late, but by less than three periods: still ok
    record_sweep("refunds.tasks.reconcile_refunds", now=now - 2.5 * 60)
    status, body = healthz()
    assert (status, body["status"]) == (200, "ok"), body

    # More than three periods late
    record_sweep("refunds.tasks.reconcile_refunds", now=now - 3.5 * 60)

    status, body = healthz()
    assert (status, body["status"]) == (200, "degraded")
    beat = body["checks"]["beat"]
    assert beat["status"] == "stale"
    assert beat["sweeps"]["reconcile-refunds"]["status"] == "stale"
    assert beat["sweeps"]["reconcile-refunds"]["stale_after_s"] == 180
    assert beat["sweeps"]["reconcile-refunds"]["last_run_age_s"] >= 210
    assert beat["sweeps"]["expire-confirmations"]["status"] == "ok"
    assert body["checks"]["worker"]["status"] == "ok"


def test_it_is_degraded_before_any_worker_or_sweep_has_run(ops_store):
    status, body = healthz()

    assert (status, body["status"]) == (200, "degraded")
    assert body["checks"]["worker"] == {
        "status": "stale",
        "last_heartbeat_age_s": None,
        "stale_after_s": 30.0,
    }
    sweeps = body["checks"]["beat"]["sweeps"]
    # A daily sweep runs first a day after beat starts: until then it is pending, not late.
    assert {name for name, sweep in sweeps.items() if sweep["status"] == "pending"} == {
        "purge-data"
    }
    assert {sweep["status"] for name, sweep in sweeps.items() if name != "purge-data"} == {"stale"}


def sessions_started() -> int:
    """Sessions PostgreSQL has started on the test database so far, once the count is still
    (a closed session's count may reach the statistics a moment after it ended)."""

    def count() -> int:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_stat_clear_snapshot()")
            cursor.execute(
                "SELECT sessions FROM pg_stat_database WHERE datname = current_database()"
            )
            return cursor.fetchone()[0]

    last = count()
    for _ in range(20):
        time.sleep(0.25)
        if (now := count()) == last:
            return now
        last = now
    return last


@pytest.mark.services
def test_it_opens_at_most_one_database_session_for_fifty_probes(postgres, ops_store):
    # Given a process whose database check has not connected yet
    close_probe_connection()
    before = sessions_started()

    # When fifty anonymous probes ask
    answers = [healthz()[0] for _ in range(50)]

    # Then each was answered, and all of them made one new session at most
    assert answers == [200] * 50
    assert sessions_started() - before <= 1


@pytest.mark.services
def test_it_reconnects_when_the_kept_connection_was_dropped(postgres, ops_store):
    # Given a probe's connection, kept, then terminated by the server (a restart, a failover)
    assert healthz()[1]["checks"]["database"]["status"] == "ok"
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            " AND state = 'idle' AND query = 'SELECT 1'"
        )
        assert cursor.fetchone()[0] >= 1

    # When the next probe asks
    status, body = healthz()

    # Then the database is reported up, on a new connection
    assert (status, body["checks"]["database"]["status"]) == (200, "ok")


def test_it_answers_503_when_the_database_cannot_be_reached():
    # Nothing listens on port 1.
    status, body = healthz_in_another_process(
        DATABASE_URL="postgres://desk:hunter2@127.0.0.1:1/refund_desk_o1"
    )

    assert (status, body["status"]) == (503, "down")
    assert body["checks"]["database"] == {"status": "down", "error": "OperationalError"}
    assert body["checks"]["broker"]["status"] == "ok"
    # Nothing about where the database is or who connects to it
    text = json.dumps(body)
    assert [secret for secret in ("hunter2", "127.0.0.1", "refund_desk_o1") if secret in text] == []


@pytest.mark.parametrize(
    "broker",
    [
        # Redis on a port nothing listens on
        {"REDIS_URL": "redis://127.0.0.1:1/0"},
        # The embedded broker, in a folder nobody may write to
        {"REDIS_URL": "", "CELERY_FILESYSTEM_DIR": "/proc/refund-desk-broker"},
    ],
    ids=["redis", "filesystem"],
)
def test_it_answers_503_when_the_broker_cannot_be_reached(broker):
    status, body = healthz_in_another_process(DATABASE_URL=database_url_for_subprocess(), **broker)

    assert (status, body["status"]) == (503, "down")
    assert body["checks"]["database"]["status"] == "ok"
    assert body["checks"]["broker"]["status"] == "down"
