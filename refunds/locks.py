"""The row locks of every write to a refund request, in one place and in one order: the order
row first, then the request row. A request's confirmations are changed only by whoever holds
the request, and the ticket's rows (messages, changes, notifications) come after both.

Both are taken FOR NO KEY UPDATE, not FOR UPDATE. Writes to one order's refunds are serialised
just the same (the mode conflicts with itself), but a foreign-key check on the order row, which
PostgreSQL makes FOR KEY SHARE, never waits on them. Such checks come from writes the refunds
app does not order: a row inserted with a key to the order, and any row referencing it that is
updated a second time in one transaction (PostgreSQL checks the foreign keys of a row its own
transaction wrote on every later update), as the ticket row is by a note and its change
counter. A ticket write holding the ticket while its check waited on the order, and a decision
holding the order while it waited on the ticket, deadlocked (issue 43). Nothing here changes a
key column of the rows it locks; order_edit, which may change an order number, upgrades its
lock by its UPDATE.
"""

from orders.models import Order
from refunds.models import RefundRequest


def lock_order(*, order_pk: int, skip_locked: bool = False) -> Order | None:
    """The order, locked; None only when `skip_locked` and another transaction holds it."""
    return (
        Order.objects.select_for_update(no_key=True, skip_locked=skip_locked)
        .filter(pk=order_pk)
        .first()
    )


def lock_request(
    *,
    refund_pk: int,
    related: tuple[str, ...] = ("order", "ticket"),
    skip_locked: bool = False,
    **conditions: object,
) -> RefundRequest | None:
    """Lock the request's order and then the request, and read the request with its `related`
    rows (the order as it is under its lock). None when no request matches `conditions`, or,
    with `skip_locked`, when another transaction holds either row."""
    # A request's order never changes (an order edit rebinds its versions, not the key), so
    # it can be read before anything is locked.
    order_pk = RefundRequest.objects.filter(pk=refund_pk).values_list("order_id", flat=True).first()
    if order_pk is None or lock_order(order_pk=order_pk, skip_locked=skip_locked) is None:
        return None
    return (
        RefundRequest.objects.select_for_update(no_key=True, of=("self",), skip_locked=skip_locked)
        .select_related(*related)
        .filter(pk=refund_pk, **conditions)
        .first()
    )
