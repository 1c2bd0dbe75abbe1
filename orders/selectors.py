from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from functools import cache

from django.db import connection
from django.db.models import Q, QuerySet
from django.utils import timezone

from config import refund_statuses
from config.db import column, instance_from_row, row_columns, table
from config.money import to_cents
from orders.models import Customer, Order, OrderLine


def refunded_total(order: Order) -> Decimal:
    """Refunded so far: succeeded refunds plus those in flight (derived, never stored)."""
    # Added up here, not by the database: SQLite sums a decimal column as a float.
    committed = order.refund_requests.filter(status__in=refund_statuses.COMMITTED)
    return to_cents(sum(committed.values_list("amount", flat=True), Decimal(0)))


def refund_in_flight(order: Order) -> bool:
    return order.refund_requests.filter(status__in=refund_statuses.IN_FLIGHT).exists()


def refundable_balance(order: Order) -> Decimal:
    return refundable_after(order, refunded_total(order))


def refundable_after(order: Order, refunded: Decimal) -> Decimal:
    """What can still be refunded on `order` once `refunded` has been (never below zero)."""
    return max(order.amount_paid - refunded, Decimal("0.00"))


def days_since(moment: datetime | None, now: datetime | None = None) -> int | None:
    if moment is None:
        return None
    return ((now or timezone.now()) - moment).days


@dataclass(frozen=True)
class OrderSummary:
    order: Order
    lines: list[OrderLine]
    refunded: Decimal
    refundable: Decimal
    days_since_delivery: int | None


def order_lines(order: Order) -> list[OrderLine]:
    """The order's lines by id (Meta.ordering; those prefetched with it, on a page of tickets)."""
    return list(order.lines.all())


def order_summary(order: Order) -> OrderSummary:
    return _summary(order, order_lines(order), refunded_total(order))


def _summary(order: Order, lines: list[OrderLine], refunded: Decimal) -> OrderSummary:
    return OrderSummary(
        order=order,
        lines=lines,
        refunded=refunded,
        refundable=refundable_after(order, refunded),
        days_since_delivery=days_since(order.delivered_at),
    )


# --- One customer's orders --------------------------------------------------------------------
# The assistant's tools pass the run's customer (from the RunContext), never one from tool
# arguments.


def customer_order(*, customer: Customer, order_id: str) -> Order | None:
    return Order.objects.filter(customer=customer, order_id=order_id).first()


def customer_order_summary(*, customer: Customer, order_id: str) -> OrderSummary | None:
    """`order_summary` of the customer's order `order_id` (None: they have no order by that
    number), read in one query: every get_order asks for it, and the order, its lines and its
    refunds one after the other cost three round trips."""
    with connection.cursor() as cursor:
        cursor.execute(_summary_sql(), [*refund_statuses.COMMITTED, customer.pk, order_id])
        rows = cursor.fetchall()
    if not rows:
        return None
    order_width = len(row_columns(Order, "o"))
    order = instance_from_row(Order, rows[0][:order_width])
    lines = [
        instance_from_row(OrderLine, row[order_width:-1])
        for row in rows
        if row[order_width] is not None  # the LEFT JOIN of an order without lines
    ]
    # SQLite sums a decimal column as a float, as the ORM's Sum does there: back to cents.
    total = rows[0][-1]
    refunded = to_cents(Decimal(str(total)) if total is not None else Decimal(0))
    return _summary(order, lines, refunded)


@cache
def _summary_sql() -> str:
    """The order with one row per line (by id), each with the sum `refunded_total` makes."""
    refund = Order._meta.get_field("refund_requests").related_model
    columns = ", ".join([*row_columns(Order, "o"), *row_columns(OrderLine, "l")])
    statuses = ", ".join(["%s"] * len(refund_statuses.COMMITTED))
    # Names from the models' metadata, quoted; every value is a parameter.
    return (
        f"SELECT {columns}, (SELECT SUM({column(refund, 'amount', 'r')})"  # noqa: S608
        f" FROM {table(refund)} r WHERE {column(refund, 'order', 'r')} = {column(Order, 'id', 'o')}"
        f" AND {column(refund, 'status', 'r')} IN ({statuses}))"
        f" FROM {table(Order)} o LEFT OUTER JOIN {table(OrderLine)} l"
        f" ON {column(OrderLine, 'order', 'l')} = {column(Order, 'id', 'o')}"
        f" WHERE {column(Order, 'customer', 'o')} = %s AND {column(Order, 'order_id', 'o')} = %s"
        f" ORDER BY {column(OrderLine, 'id', 'l')}"
    )


def customer_orders(*, customer: Customer, status: str | None = None) -> QuerySet[Order]:
    """Newest first; `id` breaks ties so pagination by cursor is stable."""
    orders = Order.objects.filter(customer=customer)
    if status:
        orders = orders.filter(status=status)
    return orders.order_by("-placed_at", "-id")


def orders_after(orders: QuerySet[Order], *, position: tuple[datetime, int]) -> QuerySet[Order]:
    """The orders that follow `position` (placed_at, id) in `customer_orders` order."""
    placed_at, pk = position
    return orders.filter(Q(placed_at__lt=placed_at) | Q(placed_at=placed_at, id__lt=pk))
