"""The embedded broker (ops/broker.py): Kombu's filesystem transport, safe under load."""

import json
import logging
import os
import subprocess
import sys
import threading
import uuid
from contextlib import contextmanager
from pathlib import Path
from queue import Empty

import pytest
from kombu import Connection
from kombu.transport import filesystem

from config.celery import app as celery_app
from ops.broker import AtomicFilesystemTransport
from tests.services import BASE_DIR, WorkerProcess, wait_for

FOLDERS = ("out", "processed", "control", "quarantine")


def new_queue_name() -> str:
    """Kombu keeps the filesystem transport's bindings per process, not per folder: a queue
    name already bound for another test's folder would not be bound in this one."""
    return f"orders-{uuid.uuid4().hex[:8]}"


@contextmanager
def broker_connection(folder: Path, transport):
    """A connection to a private filesystem broker in `folder`, laid out as the settings do."""
    for name in FOLDERS:
        (folder / name).mkdir(parents=True, exist_ok=True)
    options = {
        "data_folder_in": str(folder / "out"),
        "data_folder_out": str(folder / "out"),
        "processed_folder": str(folder / "processed"),
        "control_folder": str(folder / "control"),
        "quarantine_folder": str(folder / "quarantine"),
    }
    with Connection("filesystem://", transport=transport, transport_options=options) as conn:
        yield conn


class HeldSerialization:
    """A message header whose JSON encoding waits until released: holds a publisher in the
    middle of writing a message file."""

    def __init__(self):
        self.reached = threading.Event()
        self.released = threading.Event()

    def __json__(self):
        self.reached.set()
        assert self.released.wait(timeout=10)
        return "released"


@contextmanager
def publisher_held_mid_write(connection: Connection, queue: str, body: dict):
    held = HeldSerialization()
    simple_queue = connection.SimpleQueue(queue)
    publisher = threading.Thread(
        target=simple_queue.put, args=(body,), kwargs={"headers": {"held": held}}
    )
    publisher.start()
    try:
        assert held.reached.wait(timeout=10)
        yield
    finally:
        held.released.set()
        publisher.join(timeout=10)
        simple_queue.close()


def test_it_is_the_broker_without_redis(settings):
    if settings.REDIS_URL:
        pytest.skip("REDIS_URL is set: the broker is Redis")

    with celery_app.connection_for_write() as connection:
        assert type(connection.transport) is AtomicFilesystemTransport


def test_it_is_needed_because_kombus_transport_reads_a_message_still_being_written(tmp_path):
    # Kombu's publisher creates the file under its final name, then writes it
    with (
        broker_connection(tmp_path, filesystem.Transport) as publisher,
        broker_connection(tmp_path, filesystem.Transport) as consumer,
    ):
        queue = new_queue_name()
        reader = consumer.SimpleQueue(queue)
        with (
            publisher_held_mid_write(publisher, queue, {"n": 1}),
            pytest.raises(json.JSONDecodeError),
        ):
            reader.get(block=False)
        reader.close()


def test_it_never_shows_a_consumer_a_message_still_being_written(tmp_path):
    with (
        broker_connection(tmp_path, AtomicFilesystemTransport) as publisher,
        broker_connection(tmp_path, AtomicFilesystemTransport) as consumer,
    ):
        queue = new_queue_name()
        reader = consumer.SimpleQueue(queue)

        # While a publisher is in the middle of writing a message
        with publisher_held_mid_write(publisher, queue, {"n": 1}):
            # the consumer neither counts nor takes it
            [staged] = os.listdir(tmp_path / "out")
            assert staged.endswith(f".{queue}.msg.tmp")
            assert reader.qsize() == 0
            with pytest.raises(Empty):
                reader.get(block=False)

        # and once written, takes it whole
        message = reader.get(block=False)
        message.ack()
        assert message.payload == {"n": 1}
        assert message.headers == {"held": "released"}
        assert os.listdir(tmp_path / "out") == []
        assert os.listdir(tmp_path / "processed") == []
        reader.close()


@pytest.mark.parametrize(
    "content",
    [
        pytest.param(b"", id="empty"),
        pytest.param(b'{"body": "eyJuIjog', id="truncated"),
        pytest.param(b"\x00\xff\xfe\x80", id="binary"),
        pytest.param(b'{"__type__": "pickle", "__value__": "gASVAA=="}', id="unknown-type"),
        pytest.param(b'["not", "a", "message"]', id="not-a-message"),
        pytest.param(b'{"body": "e30=", "properties": {}}', id="no-delivery-tag"),
    ],
)
def test_it_quarantines_a_file_that_is_not_a_message_and_delivers_the_next(
    tmp_path, caplog, content
):
    with broker_connection(tmp_path, AtomicFilesystemTransport) as connection:
        queue = new_queue_name()
        reader = connection.SimpleQueue(queue)
        # Given an undecodable file that sorts before a good message
        bad_name = f"0_{uuid.uuid4()}.{queue}.msg"
        (tmp_path / "out" / bad_name).write_bytes(content)
        reader.put({"n": 2})

        # When the consumer takes the next message
        with caplog.at_level(logging.ERROR, logger="ops.broker"):
            message = reader.get(block=False)
        message.ack()

        # Then it got the good one, and the bad file waits in quarantine, logged
        assert message.payload == {"n": 2}
        assert (tmp_path / "quarantine" / bad_name).read_bytes() == content
        assert os.listdir(tmp_path / "out") == []
        assert os.listdir(tmp_path / "processed") == []
        [logged] = [record.getMessage() for record in caplog.records]
        assert logged.startswith(f"Broker message {bad_name} ")
        assert logged.endswith(f"; moved to {tmp_path / 'quarantine' / bad_name}")
        with pytest.raises(Empty):
            reader.get(block=False)
        reader.close()


PUBLISHERS = 2
THREADS_PER_PUBLISHER = 3
MESSAGES_PER_PUBLISHER = 300


@pytest.mark.timeout(120)
def test_it_delivers_every_concurrently_published_message_exactly_once(tmp_path):
    # Given a worker on a private broker on the filesystem transport, whatever this session's
    # broker is, and publisher processes started alongside it
    broker_env = {
        "CELERY_FILESYSTEM_DIR": str(tmp_path / "broker"),
        "REDIS_URL": "",
        "DELIVERY_LOG": str(tmp_path / "deliveries"),
    }
    queue = f"broker-load-{uuid.uuid4().hex[:8]}"
    total = PUBLISHERS * MESSAGES_PER_PUBLISHER
    go = tmp_path / "go"
    publishers = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.broker_load",
                queue,
                str(n * MESSAGES_PER_PUBLISHER),
                str(MESSAGES_PER_PUBLISHER),
                str(THREADS_PER_PUBLISHER),
                str(go),
            ],
            cwd=BASE_DIR,
            env={**os.environ, **broker_env},
        )
        for n in range(PUBLISHERS)
    ]
    # A deep prefetch keeps the consumer listing the folder while the publishers write (with
    # one message at a time it would sleep a polling interval after each).
    worker = WorkerProcess(
        queue,
        extra_env=broker_env,
        log_name="broker-load",
        extra_args=["--include", "tests.broker_load", "--prefetch-multiplier", "100"],
    )

    def delivered() -> list[int]:
        return [int(line) for line in (tmp_path / "deliveries").read_text().split()]

    try:
        worker.start()
        # When they all publish at once while the worker consumes
        go.touch()
        assert [p.wait(timeout=60) for p in publishers] == [0] * PUBLISHERS
        wait_for(
            lambda: len(delivered()) >= total or worker.process.poll() is not None,
            timeout=60,
            what=f"{total} deliveries",
            worker=worker,
        )
        worker_alive = worker.process.poll() is None
    finally:
        go.touch()
        for publisher in publishers:
            if publisher.poll() is None:
                publisher.kill()
        worker.stop()

    # Then every message ran exactly once, and the worker never choked on a file
    log = worker.log()
    assert worker_alive, log[-4000:]
    assert sorted(delivered()) == list(range(total))
    assert "JSONDecodeError" not in log
    assert "Unrecoverable error" not in log
    assert not (tmp_path / "broker" / "quarantine").exists()  # made on the first quarantine
    assert os.listdir(tmp_path / "broker" / "out") == []
