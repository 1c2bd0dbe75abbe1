"""Run event streams under ASGI (issue 14): served by config.asgi's application as uvicorn
serves it, from an async generator that waits for the run's announcements (agent/live.py)
instead of holding a thread; woken through Redis, PostgreSQL LISTEN/NOTIFY, or polling when
neither is there. The WSGI stream is tested in tests/agent/test_run_api.py."""

import asyncio
import json
import queue
import statistics
import threading
import time
import uuid
from urllib.parse import urlsplit

import pytest
import redis
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import F

from agent import api, live, services
from agent.models import AgentRun, RunEvent
from config.asgi import application
from tests.agent.runs import start_run
from tests.factories import api_token_key

pytestmark = pytest.mark.django_db(transaction=True)

ENDED = object()


class AsgiStream:
    """A GET of `path` through config.asgi's application, on an event loop in a thread of its
    own, as an ASGI server serves it. Server-sent frames are parsed as they arrive, each with
    the monotonic time it came in; `close()` disconnects like a browser closing the page."""

    def __init__(self, path: str, headers: dict[str, str]):
        self.path = path
        self.headers = headers
        self.status: int | None = None
        self.response_headers: dict[str, str] = {}
        self.body = ""
        self.frames: queue.Queue = queue.Queue()
        self.watched_after_close: int | None = None
        self._started = threading.Event()
        self._buffer = ""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._disconnect: asyncio.Event | None = None
        self._thread = threading.Thread(target=asyncio.run, args=(self._serve(),), daemon=True)

    def open(self) -> "AsgiStream":
        self._thread.start()
        assert self._started.wait(10), "no response within 10 s"
        return self

    def next_frame(self, timeout: float = 5.0) -> dict:
        frame = self.frames.get(timeout=timeout)
        assert frame is not ENDED, "the stream ended"
        return frame

    def rest(self, timeout: float = 5.0) -> list[dict]:
        """The frames still to come, until the server ends the stream."""
        frames = []
        while (frame := self.frames.get(timeout=timeout)) is not ENDED:
            frames.append(frame)
        return frames

    def close(self) -> None:
        if self._loop is not None and self._disconnect is not None:
            self._loop.call_soon_threadsafe(self._disconnect.set)
        # Seconds on a quiet machine; more where a model and a test suite share two cores.
        self._thread.join(30)
        assert not self._thread.is_alive(), "the stream did not stop after the disconnect"

    def json(self) -> dict:
        self._thread.join(10)
        return json.loads(self.body)

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._disconnect = asyncio.Event()
        parts = urlsplit(self.path)
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "GET",
            "scheme": "http",
            "path": parts.path,
            "raw_path": parts.path.encode(),
            "query_string": parts.query.encode(),
            "root_path": "",
            "headers": [(b"host", b"testserver")]
            + [(name.lower().encode(), value.encode()) for name, value in self.headers.items()],
            "client": ("127.0.0.1", 50000),
            "server": ("testserver", 80),
        }
        requested = False

        async def receive() -> dict:
            nonlocal requested
            if not requested:
                requested = True
                return {"type": "http.request", "body": b"", "more_body": False}
            assert self._disconnect is not None
            await self._disconnect.wait()
            return {"type": "http.disconnect"}

        try:
            await application(scope, receive, self._send)
        finally:
            hub = live.hub()
            self.watched_after_close = hub.watched()
            await hub.close()
            self._started.set()
            self.frames.put(ENDED)

    async def _send(self, message: dict) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
            self.response_headers = {
                name.decode().lower(): value.decode() for name, value in message["headers"]
            }
            self._started.set()
            return
        text = message.get("body", b"").decode()
        self.body += text
        self._buffer += text
        while "\n\n" in self._buffer:
            block, self._buffer = self._buffer.split("\n\n", 1)
            fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
            if "event" in fields:
                self.frames.put(
                    {
                        "id": int(fields["id"]),
                        "event": fields["event"],
                        "data": json.loads(fields["data"]),
                        "at": time.monotonic(),
                    }
                )


def token_for(username: str) -> dict[str, str]:
    user = get_user_model().objects.get(username=username)
    return {"Authorization": f"Token {api_token_key(user)}"}


def stream_of(run, username: str = "agent", *, query: str = "", **headers) -> AsgiStream:
    path = f"/api/runs/{run.pk}/events/stream/{query}"
    return AsgiStream(path, {**token_for(username), **headers}).open()


@pytest.fixture(autouse=True)
def stream_threads_give_back_their_connections():
    yield
    api.close_stream_reader_connections()


@pytest.fixture
def polling_only(settings):
    """The embedded desk: SQLite and the filesystem broker, nothing that carries news."""
    if settings.DATABASES["default"]["ENGINE"] != "config.sqlite":
        pytest.skip("the polling fallback is what SQLite gets")
    settings.REDIS_URL = ""


@pytest.fixture
def on_redis(redis_broker):
    """Announcements through Redis; the timers so slow that only they can deliver in time."""


@pytest.fixture
def on_postgres_without_redis(postgres, settings):
    settings.REDIS_URL = ""


@pytest.fixture
def slow_timers(monkeypatch):
    monkeypatch.setattr(api, "STREAM_POLL_S", 30.0)
    monkeypatch.setattr(api, "STREAM_RECHECK_S", 30.0)


def append_events_and_time_their_arrival(stream: AsgiStream, run, count: int) -> list[float]:
    """Write `count` events one after another, each once the previous one arrived; the
    seconds from starting each write (its commit included) to its frame."""
    latencies = []
    for number in range(count):
        started = time.monotonic()
        event = services.run_event_append(run=run, type="message.delta", data={"text": f"{number}"})
        frame = stream.next_frame(timeout=10)
        assert (frame["id"], frame["event"], frame["data"]["data"]) == (
            event.seq,
            "message.delta",
            {"text": f"{number}"},
        )
        latencies.append(frame["at"] - started)
    return latencies


def test_an_asgi_stream_is_woken_through_redis_well_under_the_poll_interval(
    demo, on_redis, slow_timers
):
    # Given a run followed over ASGI, with every timer at 30 s
    run = start_run()
    stream = stream_of(run)
    assert stream.next_frame()["event"] == "run.started"

    # When the worker writes five events, one at a time
    latencies = append_events_and_time_their_arrival(stream, run, 5)
    stream.close()

    # Then each arrived because it was announced, typically in a few milliseconds
    assert stream.status == 200
    assert stream.response_headers["content-type"] == "text/event-stream"
    assert max(latencies) < 5.0
    assert statistics.median(latencies) < 0.25
    # and the closed stream stopped watching its run
    assert stream.watched_after_close == 0


def test_a_step_batch_of_events_wakes_an_asgi_stream_once_with_all_of_them(
    demo, on_redis, slow_timers
):
    run = start_run()
    run = services.run_acquire_lease(run_id=run.pk, owner="step-1")
    assert run is not None
    stream = stream_of(run, query="?after=1")

    services.run_step_save(
        run=run,
        owner="step-1",
        write=services.StepWrite(events=[("model.started", {"step": 1}), ("tool.started", {})]),
    )

    frames = [stream.next_frame(timeout=5), stream.next_frame(timeout=5)]
    stream.close()
    assert [(f["id"], f["event"]) for f in frames] == [(2, "model.started"), (3, "tool.started")]


def test_an_asgi_stream_is_woken_through_postgres_notify_without_redis(
    demo, on_postgres_without_redis, slow_timers
):
    run = start_run()
    stream = stream_of(run)
    assert stream.next_frame()["event"] == "run.started"

    latencies = append_events_and_time_their_arrival(stream, run, 5)
    stream.close()

    assert max(latencies) < 5.0
    assert statistics.median(latencies) < 0.25


def test_an_event_whose_announcement_was_lost_still_arrives_on_the_recheck(
    demo, on_redis, monkeypatch
):
    # Given a stream woken through Redis, re-reading every 0.3 s, never polling
    monkeypatch.setattr(api, "STREAM_RECHECK_S", 0.3)
    monkeypatch.setattr(api, "STREAM_POLL_S", 30.0)
    run = start_run()
    stream = stream_of(run)
    assert stream.next_frame()["event"] == "run.started"

    # When an event is committed that nobody announces
    with transaction.atomic():
        AgentRun.objects.filter(pk=run.pk).update(last_event_seq=F("last_event_seq") + 1)
        seq = AgentRun.objects.values_list("last_event_seq", flat=True).get(pk=run.pk)
        RunEvent.objects.create(run=run, seq=seq, type="message", data={"content": "quiet"})

    # Then the stream still finds it in the database
    frame = stream.next_frame(timeout=5)
    stream.close()
    assert (frame["id"], frame["data"]["data"]) == (seq, {"content": "quiet"})


def test_without_redis_or_postgres_an_asgi_stream_polls(demo, polling_only, monkeypatch):
    monkeypatch.setattr(api, "STREAM_POLL_S", 0.2)
    run = start_run()
    stream = stream_of(run)
    assert stream.next_frame()["event"] == "run.started"

    latencies = append_events_and_time_their_arrival(stream, run, 2)
    stream.close()

    assert max(latencies) < 3.0
    assert stream.watched_after_close == 0


def test_an_asgi_stream_resumes_after_last_event_id_and_ends_with_the_run(demo):
    # Given a run that has already completed
    run = start_run()
    services.run_event_append(run=run, type="model.started", data={"step": 1})
    services.run_event_append(run=run, type="message", data={"content": "hi"})
    services.run_acquire_lease(run_id=run.pk, owner="t")
    services.run_finish(run=run, owner="t", stop_reason="final_answer", final_answer="hi")

    # When a browser reconnects after event 2
    stream = stream_of(run, **{"Last-Event-ID": "2"})

    # Then it gets what came after, and the stream ends on run.completed
    frames = stream.rest()
    assert [(f["id"], f["event"]) for f in frames] == [(3, "message"), (4, "run.completed")]
    assert frames[1]["data"]["data"] == {"stop_reason": "final_answer", "final_answer": "hi"}
    assert stream.body.startswith("retry: 2000\n\n")
    assert stream.watched_after_close == 0


def test_an_open_asgi_stream_ends_when_the_run_completes(demo, slow_timers):
    run = start_run()
    services.run_acquire_lease(run_id=run.pk, owner="t")
    stream = stream_of(run, query="?after=1")

    services.run_finish(run=run, owner="t", stop_reason="final_answer", final_answer="done")

    frames = stream.rest(timeout=35)
    assert [f["event"] for f in frames] == ["run.completed"]


def test_an_asgi_stream_answers_the_same_errors_as_before(demo, outsider):
    run = start_run()

    anonymous = AsgiStream(f"/api/runs/{run.pk}/events/stream/", {}).open()
    assert (anonymous.status, anonymous.json()["code"]) == (401, "not_authenticated")

    not_staff = stream_of(run, outsider.username)
    assert (not_staff.status, not_staff.json()["code"]) == (403, "permission_denied")

    unknown = stream_of(run, query="?after=x")
    assert (unknown.status, unknown.json()["code"]) == (400, "invalid")

    missing = AsgiStream(f"/api/runs/{uuid.uuid4()}/events/stream/", token_for("agent")).open()
    assert (missing.status, missing.json()["code"]) == (404, "not_found")
    assert missing.watched_after_close == 0


def test_redis_announcements_carry_the_run_and_its_last_seq(demo, on_redis):
    # Given a subscription on the channel the desk announces on
    subscriber = redis.Redis.from_url(settings.REDIS_URL).pubsub(ignore_subscribe_messages=True)
    subscriber.subscribe(live.redis_channel())
    run = start_run()

    # When an event is written in a transaction that rolls back, then one that commits
    with pytest.raises(RuntimeError), transaction.atomic():
        services.run_event_append(run=run, type="message", data={})
        raise RuntimeError("rolled back")
    event = services.run_event_append(run=run, type="message", data={})

    # Then only the committed one was announced
    messages = []
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and len(messages) < 2:
        message = subscriber.get_message(timeout=0.2)
        if message:
            messages.append(live.parse_announcement(message["data"]))
    subscriber.close()
    assert messages == [(str(run.pk), 1), (str(run.pk), event.seq)]
