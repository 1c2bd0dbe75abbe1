"""The web process takes its database connections from a bounded pool (DATABASE_POOL_MAX_SIZE):
a burst of requests to a real uvicorn serving config.asgi holds at most that many, and the
requests that wait for a free one are answered, not failed."""

import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.contrib.auth import get_user_model
from django.db import connection

from tests.factories import api_token_key
from tests.services import BASE_DIR, backends, database_url_named, wait_for

POOL_SIZE = 4
REQUESTS = 200


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Uvicorn:
    """`uvicorn config.asgi:application`, as in production, on the test database; its
    connections are named `application_name` in pg_stat_activity."""

    def __init__(self, application_name: str, log_path, **environment: str):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path
        env = {
            **os.environ,
            "DATABASE_URL": database_url_named(application_name),
            "DJANGO_DEBUG": "false",
            **environment,
        }
        with log_path.open("w") as log:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "uvicorn",
                    "config.asgi:application",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(self.port),
                    "--no-access-log",
                    "--lifespan",
                    "off",
                ],
                cwd=BASE_DIR,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        wait_for(self.answers, what=f"uvicorn answering:\n{log_path.read_text()}")

    def answers(self) -> bool:
        assert self.process.poll() is None, self.log_path.read_text()
        try:
            with urllib.request.urlopen(f"{self.url}/healthz", timeout=2):
                return True
        except urllib.error.HTTPError:
            return True
        except OSError:
            return False

    def get(self, path: str, token: str) -> int:
        request = urllib.request.Request(
            f"{self.url}{path}", headers={"Authorization": f"Token {token}"}
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                response.read()
                return response.status
        except urllib.error.HTTPError as error:
            return error.code

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=15)


class PeakConnections:
    """Samples, on a thread of its own, how many connections named `application_name` the
    test database has beyond those it had at the start (the health check's)."""

    def __init__(self, application_name: str):
        self.application_name = application_name
        self.before = backends(application_name)
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample)

    def _sample(self) -> None:
        try:
            while not self._stop.is_set():
                now = backends(self.application_name) - self.before
                self.peak = max(self.peak, len(now))
                time.sleep(0.005)
        finally:
            connection.close()

    def __enter__(self) -> "PeakConnections":
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._stop.set()
        self._thread.join()


def connection_settings(code: str) -> str:
    """CONN_MAX_AGE and the pool's options in a process that runs `code` first (which loads
    the settings), for a PostgreSQL DATABASE_URL (nothing connects)."""
    show = (
        "from django.conf import settings; db = settings.DATABASES['default']; "
        "print(db['CONN_MAX_AGE'], db['OPTIONS'].get('pool'))"
    )
    completed = subprocess.run(
        [sys.executable, "-c", f"{code}; {show}"],
        cwd=BASE_DIR,
        env={
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DATABASE_URL": "postgres://desk@127.0.0.1:5432/refund_desk",
            "DATABASE_POOL_MAX_SIZE": "7",
        },
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return completed.stdout.strip().splitlines()[-1]


@pytest.mark.parametrize(
    "code",
    [
        "import config.asgi",
        "import config.wsgi",
        "import sys; sys.argv = ['manage.py', 'runserver']",
    ],
    ids=["asgi", "wsgi", "runserver"],
)
def test_a_web_process_takes_its_connections_from_a_pool(code):
    assert connection_settings(code) == "0 {'min_size': 1, 'max_size': 7, 'timeout': 10.0}"


def test_a_worker_keeps_its_connections_without_a_pool():
    # What `celery -A config worker` loads the settings through.
    assert connection_settings("import django, config.celery; django.setup()") == "300 None"


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_two_hundred_concurrent_requests_hold_at_most_the_pools_connections(
    postgres, demo, tmp_path
):
    # Given the web process as in production, with a pool of four connections
    name = f"web-pool-{uuid.uuid4().hex[:8]}"
    token = api_token_key(get_user_model().objects.get(username="agent"))
    server = Uvicorn(name, tmp_path / "uvicorn.log", DATABASE_POOL_MAX_SIZE=str(POOL_SIZE))
    try:
        # When two hundred API requests arrive at once
        all_sent = threading.Barrier(REQUESTS)

        def request(_: int) -> int:
            all_sent.wait()
            return server.get("/api/tickets/", token)

        with PeakConnections(name) as connections, ThreadPoolExecutor(REQUESTS) as clients:
            statuses = list(clients.map(request, range(REQUESTS)))
    finally:
        server.stop()

    # Then every one is answered, over at most the pool's four connections at any moment
    assert statuses == [200] * REQUESTS, (tmp_path / "uvicorn.log").read_text()[-3000:]
    assert 1 <= connections.peak <= POOL_SIZE
