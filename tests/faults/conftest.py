"""Fixtures for fault tests: a private Redis the test may stop, a provider that lands late."""

import shutil
import signal
import socket
import subprocess
import time
from contextlib import contextmanager

import pytest
import redis
from django.conf import settings

from config.celery import app as celery_app
from tests import services
from tests.fakes.stripe_server import FakeStripe
from tests.refunds.conftest import make_refund

__all__ = ["make_refund"]

REDIS_SERVER = "redis-server"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class PrivateRedis:
    """A redis-server subprocess of this test alone: stopping it disturbs nobody else."""

    def __init__(self, log_path):
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.log_path = log_path
        self.process: subprocess.Popen | None = None

    def start(self, timeout: float = 10.0) -> "PrivateRedis":
        log = self.log_path.open("a")
        self.process = subprocess.Popen(
            [
                REDIS_SERVER,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"redis-server exited:\n{self.log_path.read_text()}")
            if self.ping():
                return self
            time.sleep(0.1)
        raise RuntimeError(f"redis-server not answering on {self.port}")

    def ping(self) -> bool:
        try:
            return bool(redis.Redis.from_url(self.url, socket_timeout=0.5).ping())
        except redis.RedisError:
            return False

    def kill(self) -> None:
        """SIGKILL the server, as a crash or the OOM killer would: its clients get no goodbye."""
        self.process.kill()
        self.process.wait(timeout=10)
        self.process = None

    def hang(self) -> None:
        """Freeze the server: connections stay open and nothing answers."""
        self.process.send_signal(signal.SIGSTOP)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)
            self.process.terminate()
            self.process.wait(timeout=10)
        self.process = None


def _reset_publisher_pools() -> None:
    """Make the next publish look its pools up again, for the URL configured now.

    Not closed: kombu keeps one pool per broker URL for the whole process, so the session's
    own pool is found again (open) when the URL is restored.
    """
    celery_app._pool = None
    celery_app.amqp._producer_pool = None


@contextmanager
def celery_publishing_to(url: str, transport: str, transport_options: dict):
    conf = celery_app.conf
    saved = (conf.broker_url, conf.broker_transport, conf.broker_transport_options)
    _reset_publisher_pools()
    conf.broker_url, conf.broker_transport, conf.broker_transport_options = (
        url,
        transport,
        transport_options,
    )
    try:
        yield
    finally:
        _reset_publisher_pools()
        conf.broker_url, conf.broker_transport, conf.broker_transport_options = saved


@pytest.fixture
def private_redis(tmp_path):
    """A running private Redis that this process's Celery app publishes to.

    Needs only the redis-server binary, so it runs on SQLite too; missing, it fails under
    REQUIRE_SERVICES=1 and skips otherwise.
    """
    if shutil.which(REDIS_SERVER) is None:
        services.missing(f"{REDIS_SERVER} on PATH (a private Redis to stop and restart)")
    server = PrivateRedis(tmp_path / "redis.log").start()
    try:
        # With the transport and options a REDIS_URL deployment gets.
        with celery_publishing_to(
            server.url, settings.REDIS_BROKER_TRANSPORT, settings.REDIS_BROKER_TRANSPORT_OPTIONS
        ):
            yield server
    finally:
        server.stop()


class LateStripe(FakeStripe):
    """The fake Stripe API, plus a provider that is slow *before* it acts.

    `land_late_next(seconds)`: the next refund is created only `seconds` after the request
    arrived (the client has long given up); `fail_after_work_next()`: the next refund is
    created, then answered with a 500.
    """

    def __post_init__(self) -> None:
        super().__post_init__()
        self.late: list[float] = []
        self.fail_after_work = 0

    def land_late_next(self, seconds: float) -> None:
        with self.lock:
            self.late.append(seconds)

    def fail_after_work_next(self) -> None:
        with self.lock:
            self.fail_after_work += 1

    def _create(self, params: dict, key: str | None) -> tuple[int, dict]:
        with self.lock:
            delay = self.late.pop(0) if self.late else 0.0
            fail = self.fail_after_work > 0
            self.fail_after_work -= int(fail)
        time.sleep(delay)
        status, body = super()._create(params, key)
        if fail:
            return 500, {
                "error": {"type": "api_error", "message": "Something went wrong on Stripe's end."}
            }
        return status, body


@pytest.fixture
def late_stripe(settings):
    fake = LateStripe().start()
    settings.REFUND_ADAPTER = "stripe"
    settings.STRIPE_API_KEY = fake.api_key
    settings.STRIPE_API_BASE = fake.url
    yield fake
    fake.stop()
