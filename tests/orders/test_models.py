from decimal import Decimal

import pytest
from django.db import DataError, IntegrityError, transaction

from tests.factories import OrderFactory, OrderLineFactory, TicketFactory

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("order_id", ["1234567", "123456789012345678901", "12345678a", ""])
def test_it_rejects_an_order_id_that_is_not_8_to_20_digits(order_id):
    # PostgreSQL refuses 21 characters by the column's length (DataError) before the check.
    with pytest.raises((IntegrityError, DataError)), transaction.atomic():
        OrderFactory(order_id=order_id)


@pytest.mark.parametrize("order_id", ["12345678", "12345678901234567890"])
def test_it_accepts_order_ids_at_the_bounds(order_id):
    assert OrderFactory(order_id=order_id).order_id == order_id


def test_it_rejects_a_negative_amount_paid():
    with pytest.raises(IntegrityError), transaction.atomic():
        OrderFactory(amount_paid=Decimal("-0.01"))


def test_it_rejects_a_duplicate_order_id():
    OrderFactory(order_id="20261011008700")
    with pytest.raises(IntegrityError), transaction.atomic():
        OrderFactory(order_id="20261011008700")


def test_it_rejects_a_zero_quantity_line():
    with pytest.raises(IntegrityError), transaction.atomic():
        OrderLineFactory(quantity=0)


def test_it_rejects_a_duplicate_ticket_reference():
    TicketFactory(reference="TCK-9001")
    with pytest.raises(IntegrityError), transaction.atomic():
        TicketFactory(reference="TCK-9001")


def test_it_rejects_a_malformed_ticket_reference():
    with pytest.raises(IntegrityError), transaction.atomic():
        TicketFactory(reference="ticket 1")


def test_money_keeps_two_places():
    order = OrderFactory(amount_paid=Decimal("129.00"))
    order.refresh_from_db()
    assert order.amount_paid == Decimal("129.00")
    assert str(order.amount_paid) == "129.00"
