from datetime import datetime

from django.db.models import Q, QuerySet

from orders.models import Customer, Order
from refunds.models import RefundRequest

# --- Tool-facing reads ------------------------------------------------------------------------
# Every read a tool makes is scoped by the run's customer, passed in by the handler from the
# RunContext; none of these take a customer from tool arguments.


def customer_order(*, customer: Customer, order_id: str) -> Order | None:
    return Order.objects.filter(customer=customer, order_id=order_id).first()


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


def order_refund_requests(*, order: Order) -> QuerySet[RefundRequest]:
    return (RefundRequest.objects.filter(order=order)
            .prefetch_related("confirmations").order_by("created_at", "id"))
