"""Wakes the live event streams of runs when new events are committed (issue 14): a run's
streams follow the run's id as their key in config/live.py, which holds the machinery (one
subscription per event loop, Redis pub/sub or PostgreSQL LISTEN/NOTIFY, polling without)."""

import uuid

from config.live import Hub, hub, parse_announcement, redis_channel, wake_up_kind
from config.live import announce as _announce
from config.live import pg_notify_sql as _pg_notify_sql

__all__ = [
    "Hub",
    "announce_events",
    "hub",
    "parse_announcement",
    "pg_notify_sql",
    "redis_channel",
    "wake_up_kind",
]


def announce_events(*, run_id: uuid.UUID | str, seq: int) -> None:
    """Inside the transaction that wrote events of run `run_id` up to `seq`: tell the web
    processes once it commits (config.live.announce)."""
    _announce(key=run_id, seq=seq)


def pg_notify_sql(*, run_id: uuid.UUID | str, seq_sql: str) -> tuple[str, list] | None:
    """config.live.pg_notify_sql for the run's events."""
    return _pg_notify_sql(key=run_id, seq_sql=seq_sql)
