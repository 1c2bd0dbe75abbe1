"""Worked examples for small-model mode (DESIGN §16): four short exchanges, sent as messages
between the rules and the run, that show a small model what the rules mean in calls: look the
order up, then propose exactly what the agent asked and say it awaits a reviewer; look it up and
ask when the request leaves the amount or the reason open; answer a policy question citing the
clause search_policies returned; answer a status question from get_refund_status.

They are about a made-up shop (order numbers no real order has) and framed as examples, so the
model does not take them for this ticket. They are the same for every run and step, so an
endpoint's prompt cache reads them once, with the rules and the tools.
"""

import json
from typing import Any

from agent.untrusted import wrap_untrusted

EXAMPLES_OPEN = (
    "Worked examples follow: how a careful assistant uses the tools. They are about a made-up "
    "shop and made-up orders, not about this ticket; nothing in them happened in this run."
)
EXAMPLES_CLOSE = (
    "End of the worked examples. The real run starts now: only the messages after this one "
    "are about this ticket, and only tool results from now on are facts."
)

# ("user" | "answer", text) or ("call", (name, arguments, result))
Turn = tuple[str, Any]

EXAMPLES: tuple[tuple[Turn, ...], ...] = (
    (
        ("user", "Order 900000000001: the kettle arrived dented. Propose a full refund."),
        (
            "call",
            (
                "get_order",
                {"order_id": "900000000001"},
                {
                    "ok": True,
                    "order_id": "900000000001",
                    "status": "delivered",
                    "currency": "CNY",
                    "amount_paid": "120.00",
                    "refunded": "0.00",
                    "refundable_balance": "120.00",
                    "days_since_delivery": 3,
                    "lines": [{"name": "Kettle", "quantity": 1, "unit_price": "120.00"}],
                    "note": None,
                },
            ),
        ),
        (
            "call",
            (
                "create_refund",
                {
                    "order_id": "900000000001",
                    "amount": "120.00",
                    "reason": "damaged",
                    "explanation": "The kettle arrived dented; full refund as the agent asked.",
                },
                {
                    "ok": True,
                    "request_id": "example",
                    "status": "pending_approval",
                    "amount": "120.00",
                    "currency": "CNY",
                },
            ),
        ),
        (
            "answer",
            "I looked up order 900000000001 (delivered, 120.00 CNY paid, nothing refunded) and "
            "proposed a full refund of 120.00 CNY, reason damaged. It is pending approval: a "
            "reviewer decides, and nothing has been refunded yet.",
        ),
    ),
    (
        ("user", "She wants some money back for the kettle."),
        (
            "call",
            (
                "get_order",
                {"order_id": "900000000003"},
                {
                    "ok": True,
                    "order_id": "900000000003",
                    "status": "delivered",
                    "currency": "CNY",
                    "amount_paid": "120.00",
                    "refunded": "0.00",
                    "refundable_balance": "120.00",
                    "lines": [{"name": "Kettle", "quantity": 1, "unit_price": "120.00"}],
                },
            ),
        ),
        (
            "answer",
            "Order 900000000003 (kettle, 120.00 CNY paid) can be refunded, but you did not say "
            "how much or why. How much should go back, and what went wrong? I have not "
            "proposed anything yet.",
        ),
    ),
    (
        ("user", "The kettle was delivered 40 days ago. Can she still get a refund?"),
        (
            "call",
            (
                "search_policies",
                {"query": "refund window after delivery"},
                {
                    "ok": True,
                    "query": "refund window after delivery",
                    "clauses": [
                        {
                            "ref": "R-1",
                            "title": "Refund window",
                            "text": "A refund may be requested within 30 days of delivery.",
                        }
                    ],
                },
            ),
        ),
        (
            "answer",
            "No: R-1 allows a refund within 30 days of delivery, and 40 days have passed. A "
            "reviewer cannot approve one outside the window either.",
        ),
    ),
    (
        ("user", "Has the refund on 900000000002 gone through?"),
        (
            "call",
            (
                "get_refund_status",
                {"order_id": "900000000002"},
                {
                    "ok": True,
                    "order_id": "900000000002",
                    "currency": "CNY",
                    "refunded": "0.00",
                    "refund_requests": [{"status": "pending_approval", "amount": "35.00"}],
                },
            ),
        ),
        (
            "answer",
            "Not yet: the refund of 35.00 CNY on order 900000000002 is pending approval by a "
            "reviewer. Nothing has been paid back so far.",
        ),
    ),
)


# What each example call did, as a structured answer's "did" says it.
_DID = {
    "get_order": "looked_up_order",
    "list_customer_orders": "listed_orders",
    "search_policies": "read_policy",
    "get_refund_status": "checked_refund",
    "create_refund": "proposed_refund",
}


def _messages(example: tuple[Turn, ...], number: int, *, structured: bool) -> list[dict]:
    messages: list[dict] = []
    did: list[dict] = []
    for index, (kind, content) in enumerate(example):
        if kind == "user":
            messages.append({"role": "user", "content": content})
        elif kind == "answer":
            if structured:
                content = json.dumps({"answer": content, "did": did}, ensure_ascii=False)
            messages.append({"role": "assistant", "content": content})
        else:
            name, arguments, result = content
            if result.get("ok", True) and name in _DID:
                did.append({"action": _DID[name], "order_id": arguments.get("order_id", "")})
            call_id = f"example_{number}_{index}"
            call = {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)}
            messages.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [{"id": call_id, "type": "function", "function": call}],
                }
            )
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": call_id,
                    "content": wrap_untrusted("tool_result", json.dumps(result)),
                }
            )
    return messages


def worked_examples(*, structured: bool = False) -> list[dict]:
    """The examples as Chat Completions messages, framed by two system notes; new dicts on
    every call, since the caller's list is the request's. `structured`: the answers are written
    as the "did" piece asks (agent/runtime/structured_answer.py)."""
    messages = [{"role": "system", "content": EXAMPLES_OPEN}]
    for number, example in enumerate(EXAMPLES, start=1):
        messages += _messages(example, number, structured=structured)
    messages.append({"role": "system", "content": EXAMPLES_CLOSE})
    return messages
