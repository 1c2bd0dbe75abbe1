"""Wakes the live event streams (runs' and tickets') when new events are committed (issues 14,
33).

Every stream follows a *key*: a run's id, `ticket:<pk>` for a ticket's changes, `user:<pk>`
for a user's notifications. A write that appends events announces "key X has events up to
seq N". A run's events (`announce`) are published on Redis (`REDIS_URL`) after the commit, or
on PostgreSQL without Redis by a `pg_notify` in the writing transaction, which PostgreSQL
delivers only if that commits. A ticket's changes and notifications
(`announce_in_transaction`) take `pg_notify` whenever the database is PostgreSQL: they are
written by requests and tasks of every kind, and a notification that rides with the commit
adds no after-commit step to them (Redis is their way only on another database). Otherwise
nothing is sent and streams poll.

A web process under ASGI keeps one subscription of each kind it may hear from per event loop
(one per process under uvicorn), held by a `Hub`, which wakes the streams that watch the key.
An announcement only says "read again": a stream always reads its events from the database,
and re-reads on a slow timer as well, so a lost announcement (Redis restarted, the subscription
reconnecting) delays events by at most that timer and never loses one.
"""

import asyncio
import contextlib
import logging
import re
import uuid
import weakref
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache

import psycopg
import redis
import redis.asyncio
from django.conf import settings
from django.db import connection, transaction

logger = logging.getLogger(__name__)

# Keys other than a run's id: a word, a colon and a number or word (`ticket:12`, `user:3`).
NAMED_KEY = re.compile(r"^[a-z]+:[0-9a-z]+$")
# PostgreSQL scopes LISTEN/NOTIFY to one database already.
POSTGRES_CHANNEL = "desk_live_events"
# How long a subscription that failed waits before trying again, at most.
RECONNECT_MAX_S = 10.0
# Redis answers a publish in well under a millisecond: a Redis that does not answer in this
# long is down, and a worker's step must not wait on it (streams fall back to their timer).
PUBLISH_TIMEOUT_S = 0.5


def redis_channel() -> str:
    """Redis pub/sub ignores the database number: channels are named after the database the
    events live in, so desks sharing a Redis server (or test sessions) do not wake each
    other's streams."""
    return f"desk:{connection.settings_dict['NAME']}:live-events"


def wake_up_kind() -> str:
    """How streams are woken here: "redis", "postgres" or "polling"."""
    if settings.REDIS_URL:
        return "redis"
    if connection.vendor == "postgresql":
        return "postgres"
    return "polling"


def announce(*, key: uuid.UUID | str, seq: int) -> None:
    """Inside the transaction that wrote events of `key` up to `seq`: tell the web processes
    once it commits (nothing is announced if it rolls back). Costs the transaction at most one
    statement (`pg_notify`); the Redis publish happens after the commit."""
    message = f"{key} {seq}"
    kind = wake_up_kind()
    if kind == "redis":
        channel = redis_channel()
        transaction.on_commit(lambda: _publish(channel, message))
    elif kind == "postgres":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_notify(%s, %s)", [POSTGRES_CHANNEL, message])


def announce_in_transaction(*, key: str, seq: int) -> None:
    """`announce` for writes outside runs: a `pg_notify` in the transaction on PostgreSQL
    (delivered only if it commits), a Redis publish after the commit elsewhere."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_notify(%s, %s)", [POSTGRES_CHANNEL, f"{key} {seq}"])
    elif settings.REDIS_URL:
        channel, message = redis_channel(), f"{key} {seq}"
        transaction.on_commit(lambda: _publish(channel, message))


def notify_in_transaction_sql(*, key: str, seq_sql: str) -> tuple[str, list] | None:
    """`announce_in_transaction` for a statement that numbers the events itself (as
    `pg_notify_sql`): the `pg_notify` to select in it on PostgreSQL, else None, and the caller
    announces the seq the statement returns."""
    if connection.vendor != "postgresql":
        return None
    return f"pg_notify(%s, %s || {seq_sql})", [POSTGRES_CHANNEL, f"{key} "]


def pg_notify_sql(*, key: uuid.UUID | str, seq_sql: str) -> tuple[str, list] | None:
    """`announce` for a statement that numbers the events itself: the `pg_notify` to select
    in it, `seq_sql` being its SQL for the last seq, when streams are woken that way; else
    None, and the caller announces the seq the statement returns."""
    if wake_up_kind() != "postgres":
        return None
    # Names the same "<key> <seq>" message as announce.
    return f"pg_notify(%s, %s || {seq_sql})", [POSTGRES_CHANNEL, f"{key} "]


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
        logger.warning("Could not announce live events on Redis: %s", error.__class__.__name__)


def parse_announcement(message: str | bytes) -> tuple[str, int] | None:
    """(key, seq) of an announcement (a run's key is its id in canonical form), None for
    anything else on the channel."""
    if isinstance(message, bytes):
        message = message.decode(errors="replace")
    key, _, seq = message.partition(" ")
    try:
        number = int(seq)
        return (key if NAMED_KEY.match(key) else str(uuid.UUID(key))), number
    except ValueError:
        return None


@dataclass(frozen=True)
class Line:
    """What one subscription of a hub reports to it: announcements, and whether it is up."""

    hub: "Hub"
    index: int

    def announced(self, message: str | bytes) -> None:
        self.hub.announced(message)

    def set_connected(self, connected: bool) -> None:
        self.hub.set_connected(self.index, connected)


Subscription = Callable[[Line], Awaitable[None]]


class Hub:
    """The streams of one event loop waiting for their keys' events, and the subscriptions
    that wake them. `connected` says whether announcements arrive right now (every
    subscription is up): while they do not, streams re-read at the polling interval."""

    def __init__(self, subscriptions: Sequence[Subscription] = ()):
        self._watchers: dict[str, set[asyncio.Event]] = {}
        self._subscriptions = list(subscriptions)
        self._listeners: list[asyncio.Task] = []
        self._up: set[int] = set()

    @property
    def connected(self) -> bool:
        return bool(self._subscriptions) and len(self._up) == len(self._subscriptions)

    @contextlib.contextmanager
    def watching(self, *keys: uuid.UUID | str) -> Iterator[asyncio.Event]:
        """An event set whenever one of `keys` announces new events. The caller clears it
        before each read, so an announcement that lands during a read is not missed."""
        self._start_listener()
        names = {str(key) for key in keys}
        woken = asyncio.Event()
        for name in names:
            self._watchers.setdefault(name, set()).add(woken)
        try:
            yield woken
        finally:
            for name in names:
                watchers = self._watchers.get(name, set())
                watchers.discard(woken)
                if not watchers:
                    self._watchers.pop(name, None)

    def watched(self) -> int:
        return len({woken for watchers in self._watchers.values() for woken in watchers})

    def wake(self, key: str) -> None:
        for woken in self._watchers.get(key, ()):
            woken.set()

    def wake_all(self) -> None:
        for watchers in self._watchers.values():
            for woken in watchers:
                woken.set()

    def announced(self, message: str | bytes) -> None:
        parsed = parse_announcement(message)
        if parsed is not None:
            self.wake(parsed[0])

    def set_connected(self, index: int, connected: bool) -> None:
        """Streams re-read whenever a subscription comes or goes: what was announced while
        it was down is never heard, and streams must learn to poll (or stop polling)."""
        if connected:
            self._up.add(index)
        else:
            self._up.discard(index)
        self.wake_all()

    def _start_listener(self) -> None:
        if self._subscriptions and not self._listeners:
            loop = asyncio.get_running_loop()
            self._listeners = [
                loop.create_task(self._listen_forever(Line(self, index), subscribe))
                for index, subscribe in enumerate(self._subscriptions)
            ]

    async def _listen_forever(self, line: Line, subscribe: Subscription) -> None:
        delay = 0.5
        while True:
            try:
                await subscribe(line)
            except asyncio.CancelledError:
                raise
            except Exception as error:
                logger.warning(
                    "Live event subscription lost (%s); retrying in %.1fs",
                    error.__class__.__name__,
                    delay,
                )
            line.set_connected(False)
            await asyncio.sleep(delay)
            delay = min(delay * 2, RECONNECT_MAX_S)

    async def close(self) -> None:
        for listener in self._listeners:
            # redis-py may swallow a cancel that lands while it connects: ask until it ends.
            while not listener.done():
                listener.cancel()
                await asyncio.wait({listener}, timeout=0.1)
        self._listeners = []
        self._up.clear()


async def subscribe_redis(line: Line, *, url: str, channel: str) -> None:
    """Listen on Redis until the connection fails. Idle connections are PINGed, so a Redis
    that vanished without closing the socket is noticed too."""
    client = redis.asyncio.Redis.from_url(url, socket_connect_timeout=2, health_check_interval=15)
    try:
        async with client.pubsub(ignore_subscribe_messages=True) as pubsub:
            await pubsub.subscribe(channel)
            line.set_connected(True)
            while True:
                message = await pubsub.get_message(timeout=5.0)
                if message is not None and message["type"] == "message":
                    line.announced(message["data"])
    finally:
        await client.aclose()


async def subscribe_postgres(line: Line, *, params: dict) -> None:
    """LISTEN on a connection of its own until it fails."""
    async with await psycopg.AsyncConnection.connect(**params, autocommit=True) as listener:
        await listener.execute(f"LISTEN {POSTGRES_CHANNEL}")
        line.set_connected(True)
        async for notify in listener.notifies():
            line.announced(notify.payload)


def _subscriptions() -> list[Subscription]:
    """Redis's when there is one (runs announce there), PostgreSQL's when the database is
    PostgreSQL (tickets and notifications announce there)."""
    subscriptions: list[Subscription] = []
    if settings.REDIS_URL:
        url, channel = settings.REDIS_URL, redis_channel()
        subscriptions.append(lambda line: subscribe_redis(line, url=url, channel=channel))
    if connection.vendor == "postgresql":
        db = connection.settings_dict
        params = {
            "dbname": db["NAME"],
            "user": db.get("USER") or None,
            "password": db.get("PASSWORD") or None,
            "host": db.get("HOST") or None,
            "port": db.get("PORT") or None,
        }
        given = {key: value for key, value in params.items() if value}
        subscriptions.append(lambda line: subscribe_postgres(line, params=given))
    return subscriptions


_hubs: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Hub]" = weakref.WeakKeyDictionary()


def hub() -> Hub:
    """The running event loop's hub, made (with its subscription) on first use."""
    loop = asyncio.get_running_loop()
    if loop not in _hubs:
        _hubs[loop] = Hub(_subscriptions())
    return _hubs[loop]
