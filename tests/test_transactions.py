"""config/transactions.py: a transaction PostgreSQL ends for another one's sake runs again, a
few times, then answers 409; any other database error is left as it is."""

import threading
from typing import cast

import pytest
from django.db import OperationalError, connection, transaction
from rest_framework.test import APIRequestFactory

from config.api_errors import api_exception_handler
from config.errors import TryAgain
from config.transactions import ATTEMPTS, atomic_retried, is_lock_conflict
from orders.models import Order
from tests.factories import OrderFactory
from tests.services import run_in_threads

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]


def raise_from_the_database(sqlstate: str) -> None:
    """The database itself raises the error `sqlstate` names, as it would for a real one."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"DO $$ BEGIN RAISE EXCEPTION 'raised for the test' USING ERRCODE = '{sqlstate}'; "
            "END $$"
        )


def test_it_runs_a_block_ended_as_a_deadlock_victim_again_until_it_commits(postgres):
    # Given a block that takes two rows' locks, in the opposite order to another
    first, second = cast(Order, OrderFactory()), cast(Order, OrderFactory())
    both_hold_one = threading.Barrier(2)
    attempts: list[int] = []

    @atomic_retried
    def lock_both(index: int) -> int:
        attempts.append(index)
        order = [first, second] if index == 0 else [second, first]
        Order.objects.select_for_update().get(pk=order[0].pk)
        if len(attempts) <= 2:  # the first try of each meets the other
            both_hold_one.wait(timeout=10)
        Order.objects.select_for_update().get(pk=order[1].pk)
        Order.objects.filter(pk=order[0].pk).update(note=f"by {index}")
        return index

    # When both run at once, and PostgreSQL ends one of them as a deadlock's victim
    outcomes = run_in_threads(2, lock_both)

    # Then the victim ran again after the other committed: both committed
    assert outcomes == [0, 1]
    assert sorted(attempts) == [0, 0, 1] or sorted(attempts) == [0, 1, 1]


@pytest.mark.parametrize("sqlstate", ["40P01", "40001"])
def test_it_gives_up_after_a_few_attempts_with_a_conflict_that_changed_nothing(postgres, sqlstate):
    order = cast(Order, OrderFactory(note="before"))
    attempts = []

    @atomic_retried
    def always_ended():
        attempts.append(1)
        Order.objects.filter(pk=order.pk).update(note="changed")
        raise_from_the_database(sqlstate)

    with pytest.raises(TryAgain) as conflict:
        always_ended()

    assert len(attempts) == ATTEMPTS
    assert (conflict.value.status_code, conflict.value.code) == (409, "conflict_try_again")
    cause = conflict.value.__cause__
    assert cause is not None and is_lock_conflict(cause)
    assert Order.objects.get(pk=order.pk).note == "before"


def test_it_leaves_any_other_database_error_as_it_is(postgres):
    attempts = []

    @atomic_retried
    def unreachable():
        attempts.append(1)
        raise_from_the_database("08006")  # connection_failure: an outage, not a conflict

    with pytest.raises(OperationalError) as error:
        unreachable()

    assert len(attempts) == 1
    assert not is_lock_conflict(error.value)


def test_it_leaves_the_retry_to_the_callers_transaction_when_there_is_one(postgres):
    attempts = []

    @atomic_retried
    def ended():
        attempts.append(1)
        raise_from_the_database("40P01")

    with pytest.raises(OperationalError) as error, transaction.atomic():
        ended()

    assert len(attempts) == 1
    assert is_lock_conflict(error.value)


def test_the_api_answers_a_lock_conflict_409_with_the_error_body(postgres):
    try:
        with transaction.atomic():
            raise_from_the_database("40P01")
    except OperationalError as error:
        conflict = error
    request = APIRequestFactory().post("/api/refunds/x/approve/")

    response = api_exception_handler(conflict, {"request": request})

    assert response.status_code == 409
    assert response.data == {
        "message": "Another change to the same records got in the way; try again.",
        "code": "conflict_try_again",
        "extra": {},
    }
