"""Counts what a piece of code costs the database, on every thread's connection: statements,
commits that wrote something and waited for the disk, commits that wrote something without
waiting for it (PostgreSQL's synchronous_commit off), and connections opened.

    with DatabaseCost() as cost:
        ...
    cost.queries, cost.statements, cost.commits, cost.async_commits, cost.connections

It patches Django's cursor wrapper, the backend's commit and its health check (the "SELECT 1"
of CONN_HEALTH_CHECKS, which bypasses the cursor wrapper: counted as a statement) for the
duration, so the calls of threads that connected before it started count too.
"""

import re
import threading
from typing import Any

from django.db import connections
from django.db.backends.signals import connection_created
from django.db.backends.utils import CursorWrapper as _CursorWrapper

from config.db import NO_WAIT

WRITES = ("INSERT", "UPDATE", "DELETE")
# What `statements` lists for a connection's health check.
HEALTH_CHECK = "SELECT 1 -- health check"
# Patched by name: their private hooks are not in the type stubs.
CursorWrapper: Any = _CursorWrapper


class DatabaseCost:
    def __init__(self):
        self.queries = 0
        self.commits = 0
        self.async_commits = 0
        self.connections = 0
        self.statements: list[str] = []
        self._lock = threading.Lock()
        self._dirty: set[int] = set()
        self._no_wait: set[int] = set()
        self._backend: Any = None

    def __enter__(self) -> "DatabaseCost":
        self._backend = type(connections["default"])
        self._execute = CursorWrapper._execute_with_wrappers
        self._commit = self._backend._commit
        self._is_usable = self._backend.is_usable
        cost = self

        def counted_execute(wrapper, sql, params, many, executor):
            cost._statement(wrapper.db, sql)
            return cost._execute(wrapper, sql, params, many, executor)

        def counted_commit(db):
            cost._committing(db)
            return cost._commit(db)

        def counted_health_check(db):
            cost._statement(db, HEALTH_CHECK)
            return cost._is_usable(db)

        CursorWrapper._execute_with_wrappers = counted_execute
        self._backend._commit = counted_commit
        self._backend.is_usable = counted_health_check
        connection_created.connect(self._opened)
        return self

    def __exit__(self, *exc) -> None:
        connection_created.disconnect(self._opened)
        CursorWrapper._execute_with_wrappers = self._execute
        self._backend._commit = self._commit
        self._backend.is_usable = self._is_usable

    def _opened(self, sender, connection, **kwargs) -> None:
        with self._lock:
            self.connections += 1

    def _statement(self, db, sql: str) -> None:
        statement = sql.strip().upper()
        with self._lock:
            self.queries += 1
            self.statements.append(sql)
            if _writes(statement):
                self._dirty.add(id(db))
                # A write that sets its transaction's commit not to wait (config.db.NO_WAIT).
                if NO_WAIT.upper() in statement:
                    self._no_wait.add(id(db))
                if not db.in_atomic_block:
                    # Autocommit: the statement is its own transaction.
                    self._ended(db, committed=True)

    def _committing(self, db) -> None:
        with self._lock:
            self._ended(db, committed=True)

    def _ended(self, db, *, committed: bool) -> None:
        if committed and id(db) in self._dirty:
            if id(db) in self._no_wait:
                self.async_commits += 1
            else:
                self.commits += 1
        self._dirty.discard(id(db))
        self._no_wait.discard(id(db))


def _writes(statement: str) -> bool:
    """Whether an upper-cased statement writes: a write, or a WITH whose parts write."""
    if statement.startswith(WRITES):
        return True
    return (
        statement.startswith("WITH")
        and re.search(r"\((INSERT|UPDATE|DELETE) ", statement) is not None
    )
