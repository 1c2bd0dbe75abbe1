"""Wakes the live event streams of runs when new events are committed (issue 14).

A write that appends events announces "run X has events up to seq N" (`announce_events`):
on Redis (`REDIS_URL`) it is published after the commit; on PostgreSQL without Redis it is a
`pg_notify` in the writing transaction, which PostgreSQL delivers only if that commits;
otherwise nothing is sent and streams poll.

A web process under ASGI keeps one subscription per event loop (one per process under
uvicorn), held by a `Hub`, which wakes the streams that watch the run. An announcement only
says "read again": a stream always reads its events from the database by seq, and re-reads
on a slow timer as well, so a lost announcement (Redis restarted, the subscription
reconnecting) delays events by at most that timer and never loses one.
"""

import asyncio
import contextlib
import logging
import uuid
import weakref
from collections.abc import Awaitable, Callable, Iterator
from functools import cache

import psycopg
import redis
import redis.asyncio
from django.conf import settings
from django.db import connection, transaction

logger = logging.getLogger(__name__)

# PostgreSQL scopes LISTEN/NOTIFY to one database already.
POSTGRES_CHANNEL = "desk_run_events"
# How long a subscription that failed waits before trying again, at most.
RECONNECT_MAX_S = 10.0
# Redis answers a publish in well under a millisecond: a Redis that does not answer in this
# long is down, and a worker's step must not wait on it (streams fall back to their timer).
PUBLISH_TIMEOUT_S = 0.5


def redis_channel() -> str:
    """Redis pub/sub ignores the database number: channels are named after the database the
    events live in, so desks sharing a Redis server (or test sessions) do not wake each
    other's streams."""
    return f"desk:{connection.settings_dict['NAME']}:run-events"


def wake_up_kind() -> str:
    """How streams are woken here: "redis", "postgres" or "polling"."""
    if settings.REDIS_URL:
        return "redis"
    if connection.vendor == "postgresql":
        return "postgres"
    return "polling"


def announce_events(*, run_id: uuid.UUID | str, seq: int) -> None:
    """Inside the transaction that wrote events of run `run_id` up to `seq`: tell the web
    processes once it commits (nothing is announced if it rolls back). Costs the transaction
    at most one statement (`pg_notify`); the Redis publish happens after the commit."""
    message = f"{run_id} {seq}"
    kind = wake_up_kind()
    if kind == "redis":
        channel = redis_channel()
        transaction.on_commit(lambda: _publish(channel, message))
    elif kind == "postgres":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_notify(%s, %s)", [POSTGRES_CHANNEL, message])


def pg_notify_sql(*, run_id: uuid.UUID | str, seq_sql: str) -> tuple[str, list] | None:
    """`announce_events` for a statement that numbers the events itself: the `pg_notify` to
    select in it, `seq_sql` being its SQL for the last seq, when streams are woken that way;
    else None, and the caller announces the seq the statement returns."""
    if wake_up_kind() != "postgres":
        return None
    # Names the same "<run> <seq>" message as announce_events.
    return f"pg_notify(%s, %s || {seq_sql})", [POSTGRES_CHANNEL, f"{run_id} "]


@cache
def _publisher(url: str) -> redis.Redis:
    return redis.Redis.from_url(
        url, socket_connect_timeout=PUBLISH_TIMEOUT_S, socket_timeout=PUBLISH_TIMEOUT_S
    )


def _publish(channel: str, message: str) -> None:
    try:
        _publisher(settings.REDIS_URL).publish(channel, message)
    except redis.RedisError as error:
        # The events are committed; streams find them on their next timed re-read.
        logger.warning("Could not announce run events on Redis: %s", error.__class__.__name__)


def parse_announcement(message: str | bytes) -> tuple[str, int] | None:
    """(run id, seq) of an announcement, None for anything else on the channel."""
    if isinstance(message, bytes):
        message = message.decode(errors="replace")
    run_id, _, seq = message.partition(" ")
    try:
        return str(uuid.UUID(run_id)), int(seq)
    except ValueError:
        return None


class Hub:
    """The streams of one event loop waiting for their runs' events, and the one subscription
    that wakes them. `connected` says whether announcements arrive right now: while they do
    not, streams re-read at the polling interval."""

    def __init__(self, subscribe: "Callable[[Hub], Awaitable[None]] | None"):
        self._watchers: dict[str, set[asyncio.Event]] = {}
        self._subscribe = subscribe
        self._listener: asyncio.Task | None = None
        self.connected = False

    @contextlib.contextmanager
    def watching(self, run_id: uuid.UUID | str) -> Iterator[asyncio.Event]:
        """An event set whenever run `run_id` announces new events. The caller clears it
        before each read, so an announcement that lands during a read is not missed."""
        self._start_listener()
        key = str(run_id)
        woken = asyncio.Event()
        self._watchers.setdefault(key, set()).add(woken)
        try:
            yield woken
        finally:
            watchers = self._watchers.get(key, set())
            watchers.discard(woken)
            if not watchers:
                self._watchers.pop(key, None)

    def watched(self) -> int:
        return sum(len(watchers) for watchers in self._watchers.values())

    def wake(self, run_id: str) -> None:
        for woken in self._watchers.get(run_id, ()):
            woken.set()

    def wake_all(self) -> None:
        for watchers in self._watchers.values():
            for woken in watchers:
                woken.set()

    def announced(self, message: str | bytes) -> None:
        parsed = parse_announcement(message)
        if parsed is not None:
            self.wake(parsed[0])

    def set_connected(self, connected: bool) -> None:
        """Streams re-read whenever the subscription comes or goes: what was announced while
        it was down is never heard, and streams must learn to poll (or stop polling)."""
        self.connected = connected
        self.wake_all()

    def _start_listener(self) -> None:
        if self._subscribe is not None and self._listener is None:
            self._listener = asyncio.get_running_loop().create_task(self._listen_forever())

    async def _listen_forever(self) -> None:
        assert self._subscribe is not None
        delay = 0.5
        while True:
            try:
                await self._subscribe(self)
            except asyncio.CancelledError:
                raise
            except Exception as error:
                logger.warning(
                    "Run event subscription lost (%s); retrying in %.1fs",
                    error.__class__.__name__,
                    delay,
                )
            self.set_connected(False)
            await asyncio.sleep(delay)
            delay = min(delay * 2, RECONNECT_MAX_S)

    async def close(self) -> None:
        if self._listener is not None:
            # redis-py may swallow a cancel that lands while it connects: ask until it ends.
            while not self._listener.done():
                self._listener.cancel()
                await asyncio.wait({self._listener}, timeout=0.1)
            self._listener = None
        self.connected = False


async def subscribe_redis(hub: Hub, *, url: str, channel: str) -> None:
    """Listen on Redis until the connection fails. Idle connections are PINGed, so a Redis
    that vanished without closing the socket is noticed too."""
    client = redis.asyncio.Redis.from_url(url, socket_connect_timeout=2, health_check_interval=15)
    try:
        async with client.pubsub(ignore_subscribe_messages=True) as pubsub:
            await pubsub.subscribe(channel)
            hub.set_connected(True)
            while True:
                message = await pubsub.get_message(timeout=5.0)
                if message is not None and message["type"] == "message":
                    hub.announced(message["data"])
    finally:
        await client.aclose()


async def subscribe_postgres(hub: Hub, *, params: dict) -> None:
    """LISTEN on a connection of its own until it fails."""
    async with await psycopg.AsyncConnection.connect(**params, autocommit=True) as listener:
        await listener.execute(f"LISTEN {POSTGRES_CHANNEL}")
        hub.set_connected(True)
        async for notify in listener.notifies():
            hub.announced(notify.payload)


def _subscription() -> "Callable[[Hub], Awaitable[None]] | None":
    kind = wake_up_kind()
    if kind == "redis":
        url, channel = settings.REDIS_URL, redis_channel()
        return lambda hub: subscribe_redis(hub, url=url, channel=channel)
    if kind == "postgres":
        db = connection.settings_dict
        params = {
            "dbname": db["NAME"],
            "user": db.get("USER") or None,
            "password": db.get("PASSWORD") or None,
            "host": db.get("HOST") or None,
            "port": db.get("PORT") or None,
        }
        return lambda hub: subscribe_postgres(
            hub, params={key: value for key, value in params.items() if value}
        )
    return None


_hubs: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Hub]" = weakref.WeakKeyDictionary()


def hub() -> Hub:
    """The running event loop's hub, made (with its subscription) on first use."""
    loop = asyncio.get_running_loop()
    if loop not in _hubs:
        _hubs[loop] = Hub(_subscription())
    return _hubs[loop]
