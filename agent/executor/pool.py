"""Threads that run model and tool calls for a step, kept between steps with their database
connections, so a step opens none (a tool's thread would otherwise connect and disconnect on
every call).

The step waits for a call with a timeout (tool timeouts, lease heartbeats): a call it stopped
waiting for keeps its thread until it returns on its own. That thread is not handed out
meanwhile; a new one is started whenever no thread is idle, so a stuck call never blocks the
next step. Threads beyond IDLE_THREADS that fall idle close their connections and exit.

Before each call a thread takes the care Django takes between requests: a connection that
broke or outlived CONN_MAX_AGE is replaced. Django's health check (CONN_HEALTH_CHECKS) would
then make the call's first query wait for a "SELECT 1" of its own: a thread whose connection
answered a query less than RECHECK_AFTER_S ago skips it.
"""

import contextvars
import logging
import os
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future

from django.db import DEFAULT_DB_ALIAS, close_old_connections, connections

logger = logging.getLogger(__name__)

IDLE_THREADS = 4
RECHECK_AFTER_S = 1.0
_STOP = object()


class CallThreads:
    def __init__(self, idle_threads: int = IDLE_THREADS):
        self.idle_threads = idle_threads
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0
        # Bumped by close_idle: a thread that was busy then drops its connections before its
        # next call (they may point at a database that is gone).
        self._generation = 0

    def submit(self, fn: Callable, *args) -> Future:
        """Run `fn(*args)` on an idle thread (or a new one), in the caller's context (its log
        fields); the Future holds the result or the exception."""
        future: Future = Future()
        job = (future, contextvars.copy_context(), fn, args)
        with self._lock:
            if self._idle:
                self._idle -= 1  # that thread takes the job off the queue
                self._jobs.put(job)
                return future
            thread = threading.Thread(
                target=self._serve, args=(job,), name="agent-call", daemon=True
            )
        thread.start()
        return future

    def _serve(self, job) -> None:
        generation = self._generation
        stopped: threading.Event | None = None
        answered_at = float("-inf")  # when this thread's connection last answered a query
        try:
            while True:
                if job[0] is _STOP:
                    stopped = job[1]
                    break
                if generation != self._generation:
                    connections.close_all()
                    generation = self._generation
                refresh_connections(
                    answered_just_now=time.monotonic() - answered_at < RECHECK_AFTER_S
                )
                if self._run(job):
                    answered_at = time.monotonic()
                with self._lock:
                    if self._idle >= self.idle_threads:
                        break
                    self._idle += 1
                job = self._jobs.get()
        finally:
            connections.close_all()
            if stopped is not None:
                stopped.set()

    @staticmethod
    def _run(job) -> bool:
        """Run the job; returns whether it queried the database."""
        future, context, fn, args = job
        if not future.set_running_or_notify_cancel():
            return False
        queried = False

        def noting_queries(execute, *query):
            nonlocal queried
            queried = True
            return execute(*query)

        try:
            with connections[DEFAULT_DB_ALIAS].execute_wrapper(noting_queries):
                result = context.run(fn, *args)
        except BaseException as exc:
            future.set_exception(exc)
        else:
            future.set_result(result)
        return queried

    def close_idle(self, timeout: float = 5.0) -> None:
        """Let every idle thread close its connections and exit (before a test database is
        dropped, or the process moves to another database). A thread busy with a call that was
        given up on is not waited for: it drops its connections once that call returns."""
        with self._lock:
            idle, self._idle = self._idle, 0
            self._generation += 1
        stopped = [threading.Event() for _ in range(idle)]
        for event in stopped:
            self._jobs.put((_STOP, event))
        for event in stopped:
            event.wait(timeout)


def refresh_connections(*, answered_just_now: bool) -> None:
    """This thread's connections as Django leaves them between requests, before a call; when
    they `answered_just_now`, without the health check of the next query."""
    close_old_connections()
    if answered_just_now:
        for connection in connections.all(initialized_only=True):
            if connection.connection is not None:
                # Django's flag for "checked since the last request" (not in the stubs).
                connection.health_check_done = True  # type: ignore[attr-defined]


_pool: CallThreads | None = None
_pool_pid = 0
_pool_lock = threading.Lock()


def call_threads() -> CallThreads:
    """This process's threads (a forked worker child starts its own: threads do not survive
    a fork)."""
    global _pool, _pool_pid
    with _pool_lock:
        if _pool is None or _pool_pid != os.getpid():
            _pool, _pool_pid = CallThreads(), os.getpid()
        return _pool


def close_idle_threads() -> None:
    if _pool is not None and _pool_pid == os.getpid():
        _pool.close_idle()
