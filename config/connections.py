"""A read that is its own connection check.

With CONN_HEALTH_CHECKS, the first query after a connection was left alone (between two
requests, two tasks) waits for a "SELECT 1" of its own: a round trip, on every task, to find
out whether the database dropped the connection meanwhile. A read can find that out itself:
sent without the check, it either answers or fails on the dead connection, and then it is
sent once more on a new one. Nothing is lost by sending a read twice. A write keeps Django's
check: one that failed mid-way may have committed.
"""

from collections.abc import Callable
from typing import TypeVar

from django.db import DEFAULT_DB_ALIAS, InterfaceError, OperationalError, connections

T = TypeVar("T")

# What a query raises on a connection the database dropped (a restart, a failover, an idle
# connection terminated).
DISCONNECTS = (OperationalError, InterfaceError)


def read_checking_connection(read: Callable[[], T]) -> T:
    """`read()`, a read outside a transaction, as the check of a connection due one: if the
    connection turns out to be gone, it is replaced and `read()` runs once more. An error of
    the read itself, on a connection that still works, is raised as it is."""
    db = connections[DEFAULT_DB_ALIAS]
    due = (
        db.connection is not None
        and db.health_check_enabled  # type: ignore[attr-defined]
        and not db.health_check_done  # type: ignore[attr-defined]
        and not db.in_atomic_block
    )
    if not due:
        return read()
    # Django's flag for "checked since the last request" (not in the stubs).
    db.health_check_done = True  # type: ignore[attr-defined]
    try:
        return read()
    except DISCONNECTS:
        # Django marked the connection as having failed: this checks it (the SELECT 1 that
        # was skipped, sent only now) and closes it if it is gone.
        db.close_if_unusable_or_obsolete()
        if db.connection is not None:
            raise
    return read()
