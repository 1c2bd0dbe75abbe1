"""A transaction the database gave up on because of another one, run again as a whole.

PostgreSQL ends one of two transactions that wait on each other (a deadlock, SQLSTATE 40P01)
and, under stricter isolation, one it cannot serialise (40001). Django raises either as the
OperationalError it also raises for a database that cannot be reached, with psycopg's error as
its cause; the cause's SQLSTATE tells them apart. Nothing is wrong with the request: the
transaction is run again a few times, after a short random pause so the two do not meet again
in step, and if it still cannot finish the caller is told to try again (TryAgain, a 409), never
that the database is down (503). SQLite's "database is locked" has no SQLSTATE and is left as
it is.
"""

import functools
import logging
import random
import time
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from django.db import OperationalError, transaction

from config.errors import TryAgain

logger = logging.getLogger(__name__)

P = ParamSpec("P")
R = TypeVar("R")

DEADLOCK_DETECTED = "40P01"
SERIALIZATION_FAILURE = "40001"
ATTEMPTS = 3
# The first pause is up to this long, the next up to twice as long.
FIRST_PAUSE_S = 0.05


def is_lock_conflict(error: BaseException) -> bool:
    """Whether `error` is the database ending a transaction for another one's sake."""
    sqlstate = getattr(error.__cause__, "sqlstate", None)
    return isinstance(error, OperationalError) and sqlstate in (
        DEADLOCK_DETECTED,
        SERIALIZATION_FAILURE,
    )


def atomic_retried(function: Callable[P, R]) -> Callable[P, R]:
    """`transaction.atomic`, whose whole block runs again (up to ATTEMPTS times) when the
    database ends it as a deadlock's victim or for a serialisation failure; then TryAgain.

    The block must be safe to run again: it reads what it needs afresh (its locks first) and
    changes nothing outside the database before it commits (on_commit callbacks of an attempt
    that rolled back are dropped). Inside a caller's transaction it is plain atomic: only the
    outermost transaction can start over, so the error is the caller's to handle.
    """

    @functools.wraps(function)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        if transaction.get_connection().in_atomic_block:
            with transaction.atomic():
                return function(*args, **kwargs)
        attempt = 1
        while True:
            try:
                with transaction.atomic():
                    return function(*args, **kwargs)
            except OperationalError as error:
                if not is_lock_conflict(error):
                    raise
                logger.warning(
                    "%s: attempt %d of %d ended by the database (%s)",
                    function.__qualname__,
                    attempt,
                    ATTEMPTS,
                    error.__cause__.sqlstate,  # type: ignore[union-attr]
                )
                if attempt == ATTEMPTS:
                    raise TryAgain() from error
            time.sleep(random.uniform(0, FIRST_PAUSE_S * 2 ** (attempt - 1)))
            attempt += 1

    return run
