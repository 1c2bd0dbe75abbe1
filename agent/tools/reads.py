"""The read tools' handlers: an order, the customer's orders, policy clauses, the refund
status of an order. Each sees only the customer the context was bound to.
"""

import base64
import binascii
from datetime import UTC, datetime

from django.conf import settings

from agent.context import RunContext, ToolContext
from agent.errors import ErrorCode, NextAction, ToolError
from agent.tools.guards import agent_words
from agent.vocabulary import policy_keywords
from config.money import money_str
from orders.models import Order
from orders.selectors import (
    customer_order,
    customer_order_summary,
    customer_orders,
    orders_after,
    refundable_after,
    refundable_balance,
    refunded_total,
)
from policies.selectors import search_clauses
from refunds.selectors import order_refund_requests


def _iso(moment: datetime | None) -> str | None:
    return moment.astimezone(UTC).isoformat(timespec="seconds") if moment else None


def order_not_found() -> ToolError:
    # Byte for byte the same whether the order is missing or belongs to another customer:
    # the answer must not reveal that an order number exists elsewhere.
    return ToolError(
        ErrorCode.NOT_FOUND,
        "This ticket's customer has no order with that number. Check the number "
        "with the user, or use list_customer_orders to see their orders.",
        next_actions=["list_customer_orders", NextAction.ASK_CUSTOMER],
    )


def _scoped_order(ctx: ToolContext, order_id: str) -> Order:
    order = customer_order(customer=ctx.customer, order_id=order_id)
    if order is None:
        raise order_not_found()
    return order


def get_order(ctx: ToolContext, args: dict) -> dict:
    summary = customer_order_summary(customer=ctx.customer, order_id=args["order_id"])
    if summary is None:
        raise order_not_found()
    order = summary.order
    return {
        "order_id": order.order_id,
        "status": order.status,
        "status_label": order.get_status_display(),
        "currency": order.currency,
        "amount_paid": money_str(order.amount_paid),
        "refunded": money_str(summary.refunded),
        "refundable_balance": money_str(summary.refundable),
        "placed_at": _iso(order.placed_at),
        "shipped_at": _iso(order.shipped_at),
        "delivered_at": _iso(order.delivered_at),
        "days_since_delivery": summary.days_since_delivery,
        "lines": [
            {
                "sku": line.sku,
                "name": line.name,
                "category": line.category,
                "quantity": line.quantity,
                "unit_price": money_str(line.unit_price),
            }
            for line in summary.lines
        ],
        "note": {"untrusted_customer_text": order.note} if order.note else None,
    }


def _encode_cursor(order: Order) -> str:
    raw = f"{order.placed_at.isoformat()}|{order.pk}"
    return base64.urlsafe_b64encode(raw.encode()).decode()


def _decode_cursor(cursor: str) -> tuple[datetime, int]:
    try:
        placed_at, pk = base64.urlsafe_b64decode(cursor.encode()).decode().split("|")
        moment = datetime.fromisoformat(placed_at)
        position = (moment, int(pk))
    except (binascii.Error, UnicodeError, ValueError) as exc:
        raise ToolError(
            ErrorCode.INVALID_ARGUMENTS,
            "The cursor is not one this tool gave out.",
            next_actions=["list_customer_orders"],
            extra={
                "field_errors": {
                    "cursor": "pass next_cursor from the previous page, "
                    "or leave it out for the first page"
                }
            },
        ) from exc
    if moment.tzinfo is None:
        raise ToolError(
            ErrorCode.INVALID_ARGUMENTS,
            "The cursor is not one this tool gave out.",
            next_actions=["list_customer_orders"],
            extra={"field_errors": {"cursor": "unknown cursor"}},
        )
    return position


def list_customer_orders(ctx: ToolContext, args: dict) -> dict:
    orders = customer_orders(customer=ctx.customer, status=args["status"])
    total = orders.count()
    if args["cursor"]:
        orders = orders_after(orders, position=_decode_cursor(args["cursor"]))
    page = list(orders.prefetch_related("lines")[: args["limit"] + 1])
    has_more = len(page) > args["limit"]
    page = page[: args["limit"]]
    return {
        "orders": [
            {
                "order_id": order.order_id,
                "status": order.status,
                "currency": order.currency,
                "amount_paid": money_str(order.amount_paid),
                "refundable_balance": money_str(refundable_balance(order)),
                "placed_at": _iso(order.placed_at),
                "delivered_at": _iso(order.delivered_at),
                "items": [line.name for line in order.lines.all()],
            }
            for order in page
        ],
        "total": total,
        "next_cursor": _encode_cursor(page[-1]) if has_more else None,
    }


def search_policies(ctx: ToolContext, args: dict) -> dict:
    clauses = search_clauses(args["query"], limit=args["limit"])
    # Small-model mode's "search" piece (agent/runtime/small_model.py), read from the settings:
    # the tools do not depend on the runtime.
    if (
        isinstance(ctx, RunContext)
        and settings.AGENT_SMALL_MODEL
        and "search" in settings.AGENT_SMALL_MODEL_PIECES
    ):
        # A small model's keywords are often the example's, not the question's: the clause
        # that the topics of the support agent's own words match best comes first.
        words = agent_words(ctx)
        asked = search_clauses(policy_keywords(words) or words, limit=1)
        clauses = asked + [clause for clause in clauses if clause not in asked]
    return {"query": args["query"], "clauses": clauses}


def get_refund_status(ctx: ToolContext, args: dict) -> dict:
    order = _scoped_order(ctx, args["order_id"])
    refunds = []
    for refund in order_refund_requests(order=order):
        confirmations = sorted(refund.confirmations.all(), key=lambda c: c.version)
        latest = confirmations[-1] if confirmations else None
        refunds.append(
            {
                "request_id": refund.request_id,
                "status": refund.status,
                "amount": money_str(refund.amount),
                "currency": refund.currency,
                "reason": refund.reason,
                "latest_confirmation": {
                    "version": latest.version,
                    "status": latest.status,
                    "expires_at": _iso(latest.expires_at),
                }
                if latest
                else None,
                "provider_refund_id": refund.provider_refund_id or None,
                "created_at": _iso(refund.created_at),
                "updated_at": _iso(refund.updated_at),
            }
        )
    refunded = refunded_total(order)
    return {
        "order_id": order.order_id,
        "currency": order.currency,
        "amount_paid": money_str(order.amount_paid),
        "refunded": money_str(refunded),
        "refundable_balance": money_str(refundable_after(order, refunded)),
        "refund_requests": refunds,
    }


# create_refund: a proposal only, never an execution. What the model gets back names the
# request and its version but never the fingerprint: only a reviewer, who sees the fingerprint
# in the queue, can approve (DESIGN §1, invariant 1).
