"""orders.selectors.customer_order_summary: what get_order tells of an order, in one query."""

from decimal import Decimal

import pytest

from orders.selectors import customer_order_summary, order_lines, refunded_total
from tests.factories import (
    CustomerFactory,
    OrderFactory,
    OrderLineFactory,
    RefundRequestFactory,
    TicketFactory,
)

pytestmark = pytest.mark.django_db


def refund(order, amount: str, status: str):
    ticket = TicketFactory(customer=order.customer, order=order)
    return RefundRequestFactory(ticket=ticket, amount=Decimal(amount), status=status)


def test_it_reads_the_order_its_lines_and_its_refunds_in_one_query(django_assert_num_queries):
    order = OrderFactory(amount_paid=Decimal("100.00"))
    second = OrderLineFactory(order=order, sku="B", unit_price=Decimal("60.00"))
    first = OrderLineFactory(order=order, sku="A", unit_price=Decimal("40.00"))
    refund(order, "0.10", "succeeded")
    refund(order, "0.20", "approved")
    refund(order, "50.00", "rejected")
    refund(order, "30.00", "pending_approval")

    with django_assert_num_queries(1):
        summary = customer_order_summary(customer=order.customer, order_id=order.order_id)

    assert summary is not None
    assert summary.order == order
    assert summary.order.amount_paid == Decimal("100.00")
    assert summary.order.delivered_at == order.delivered_at
    assert [line.pk for line in summary.lines] == [second.pk, first.pk]
    assert [line.unit_price for line in summary.lines] == [Decimal("60.00"), Decimal("40.00")]
    # Exactly what the three separate reads give, to the cent on every backend.
    assert summary.lines == order_lines(order)
    assert summary.refunded == refunded_total(order) == Decimal("0.30")
    assert summary.refundable == Decimal("99.70")
    assert summary.days_since_delivery == 5


def test_an_order_without_lines_or_refunds_is_found_with_none():
    order = OrderFactory(amount_paid=Decimal("12.50"))

    summary = customer_order_summary(customer=order.customer, order_id=order.order_id)

    assert summary is not None
    assert (summary.order, summary.lines) == (order, [])
    assert (summary.refunded, summary.refundable) == (Decimal("0.00"), Decimal("12.50"))


def test_another_customers_order_is_not_found():
    order = OrderLineFactory().order

    assert customer_order_summary(customer=CustomerFactory(), order_id=order.order_id) is None
    assert customer_order_summary(customer=order.customer, order_id="209999999999") is None
