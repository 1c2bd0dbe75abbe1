"""Real services for the tests: PostgreSQL, Redis, a Celery worker process, a browser.

With REQUIRE_SERVICES=1 (CI) a missing service fails the test instead of skipping it.
"""

import os
import shutil
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection, connections

BASE_DIR = Path(settings.BASE_DIR)
CHROMIUM = "/usr/bin/chromium"


def services_required() -> bool:
    return os.environ.get("REQUIRE_SERVICES", "") == "1"


def missing(what: str) -> None:
    """Skip locally, fail in CI: a suite that silently skips its real-service tests lies."""
    if services_required():
        pytest.fail(f"{what} is required (REQUIRE_SERVICES=1) but not available")
    pytest.skip(f"{what} not available")


def require_postgres() -> None:
    if connection.vendor != "postgresql":
        missing("PostgreSQL (set DATABASE_URL)")


def require_redis() -> None:
    if not settings.REDIS_URL:
        missing("Redis (set REDIS_URL)")


def require_chromium() -> None:
    if not shutil.which(CHROMIUM):
        missing(f"Debian chromium at {CHROMIUM}")


def database_url_for_subprocess() -> str:
    """A DATABASE_URL for another process that points at the test database."""
    db = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{db['NAME']}"
    user = db.get("USER") or ""
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    host = db.get("HOST") or "127.0.0.1"
    port = db.get("PORT") or 5432
    return f"postgres://{user}{password}@{host}:{port}/{db['NAME']}"


def database_url_named(application_name: str) -> str:
    """database_url_for_subprocess for a PostgreSQL client whose connections pg_stat_activity
    shows under `application_name` (see `backends`)."""
    return f"{database_url_for_subprocess()}?application_name={application_name}"


def backends(application_name: str) -> set[tuple]:
    """(pid, start) of the test database's connections named `application_name`."""
    with connection.cursor() as cursor:
        # Activity is snapshotted once per transaction: the caller may be inside one.
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute(
            "SELECT pid, backend_start FROM pg_stat_activity"
            " WHERE application_name = %s AND datname = current_database()",
            [application_name],
        )
        return set(cursor.fetchall())


def terminate_backends(application_name: str) -> int:
    """Drop the test database's connections named `application_name`; how many there were."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE application_name = %s AND datname = current_database() "
            "AND pid <> pg_backend_pid()",
            [application_name],
        )
        return cursor.fetchone()[0]


def purge_queue(queue: str) -> int:
    """Drop what earlier tests left in `queue`: tasks for rows their flush already deleted,
    which a new worker would otherwise work through first."""
    from config.celery import app

    with app.connection_for_write() as connection:
        return connection.default_channel.queue_purge(queue) or 0


class WorkerProcess:
    """A real `celery worker` subprocess consuming this test session's private queue."""

    def __init__(
        self,
        queue: str,
        extra_env: dict | None = None,
        log_name: str = "worker",
        extra_args: list[str] | None = None,
        application_name: str = "",
        concurrency: int = 1,
    ):
        self.queue = queue
        # Above 1 the worker keeps a read pending on the broker while a task runs, as
        # `make worker` does; `finished` then no longer implies that earlier tasks ran.
        self.concurrency = concurrency
        self.extra_env = extra_env or {}
        # Its connections' name in pg_stat_activity (`backends`), when given: PostgreSQL only.
        self.application_name = application_name
        if application_name:
            self.extra_env["DATABASE_URL"] = database_url_named(application_name)
        # e.g. ["--include", "tests.agent.worker_tools"]: test-only modules for the worker
        self.extra_args = extra_args or []
        self.log_path = BASE_DIR / "var" / f"test-{log_name}-{uuid.uuid4().hex[:8]}.log"
        self.process: subprocess.Popen | None = None

    def start(self, timeout: float = 30.0) -> "WorkerProcess":
        purge_queue(self.queue)
        env = {**os.environ, "DATABASE_URL": database_url_for_subprocess(), **self.extra_env}
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = self.log_path.open("w")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "config",
                "worker",
                "-Q",
                self.queue,
                f"--concurrency={self.concurrency}",
                "--pool=prefork",
                "--loglevel=INFO",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
                "-n",
                f"test-{uuid.uuid4().hex[:6]}@%h",
                *self.extra_args,
            ],
            cwd=BASE_DIR,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"worker exited early:\n{self.log()}")
            if "ready." in self.log():
                return self
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"worker not ready after {timeout}s:\n{self.log()}")

    def log(self) -> str:
        return self.log_path.read_text() if self.log_path.exists() else ""

    def finished(self, sent) -> bool:
        """Whether this worker has run the task `sent` (what `.delay()` returned) to the end.
        It takes one task at a time, in order: every task sent before it has run too."""
        return f"[{sent.id}] succeeded" in self.log()

    def kill(self) -> None:
        """SIGKILL the whole worker (main process and its pool children)."""
        if self.process and self.process.poll() is None:
            subprocess.run(["pkill", "-KILL", "-P", str(self.process.pid)], check=False)
            self.process.kill()
            self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()
        if getattr(self, "_log", None):
            self._log.close()


def wait_for(
    predicate,
    *,
    timeout: float = 30.0,
    what: str = "condition",
    worker: WorkerProcess | None = None,
):
    """Poll `predicate` until it returns something truthy (and return that), or fail after
    `timeout` seconds naming `what`, with the worker's log when one is given."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    log = f"\nworker log:\n{worker.log()[-4000:]}" if worker else ""
    raise AssertionError(f"timed out after {timeout}s waiting for {what}{log}")


def run_in_threads(count: int, work) -> list:
    """Start `count` threads at once (released together by a barrier); return what each
    `work(index)` returned or raised. Each thread closes its own database connections."""
    barrier = threading.Barrier(count)
    outcomes: list = [None] * count

    def target(index: int) -> None:
        try:
            barrier.wait(timeout=10)
            outcomes[index] = work(index)
        except Exception as error:  # the outcome is what the test inspects
            outcomes[index] = error
        finally:
            connections.close_all()

    threads = [threading.Thread(target=target, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return outcomes
