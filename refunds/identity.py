"""How a refund intent and a set of refund parameters are named (DESIGN §4, invariants 6, 7)."""

import hashlib

from config.canonical import canonical_json


def derive_request_id(*, ticket_reference: str, order_id: str, n: int) -> str:
    """The id of the n-th intent of a ticket on an order, n counting its settled intents.

    Derived by the server, never by the model: retries and concurrent identical proposals
    compute the same id, and the unique `request_id` makes them one request.
    """
    digest = hashlib.sha256(f"{ticket_reference}|{order_id}|{n}".encode()).hexdigest()
    return "rf_" + digest[:24]


def fingerprint_params(refund) -> dict:
    """The exact parameters an approval is bound to, read from the request row."""
    return {
        "request_id": refund.request_id,
        "order_id": refund.order.order_id,
        "customer_id": refund.order.customer_id,
        "payment_reference": refund.order.payment_reference,
        "amount": f"{refund.amount:.2f}",
        "currency": refund.currency,
        "reason": refund.reason,
        "requested_by_id": refund.requested_by_id,
    }


def fingerprint(params: dict) -> str:
    return hashlib.sha256(canonical_json(params).encode()).hexdigest()
