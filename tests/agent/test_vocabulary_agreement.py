"""The offline planner and the vocabulary read a request alike (DESIGN §18: the words the desk
reads live in agent/vocabulary/, and a test holds every reader to it).

On a corpus of phrasings (tests/data/request_phrasings.jsonl: many languages, terse, misspelt,
rambling, polite, negated, relayed, conditional, quoted), the planner's reading of whether the
agent asks for a refund, which amount and which reason is the vocabulary's; the planner
proposes exactly what the vocabulary's reading establishes on the ticket's order; and the
vocabulary reads each phrasing as it is labelled.
"""

import json
from decimal import Decimal
from pathlib import Path

import pytest

from agent import vocabulary
from agent.providers.offline.planner import OfflinePlanner
from agent.vocabulary.requests import ORDER_ID as _ORDER_ID
from agent.vocabulary.requests import read_intent

CORPUS = Path(__file__).resolve().parents[1] / "data" / "request_phrasings.jsonl"
PHRASINGS = [
    json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line.strip()
]
TOOLS = [
    "get_order",
    "list_customer_orders",
    "search_policies",
    "get_refund_status",
    "create_refund",
]

# The ticket's order each phrasing is typed on: (order id, item, status, paid, refundable).
ORDERS = {
    "mug": ("202610110087", "Ceramic mug", "delivered", "129.00", "129.00"),
    "headphones": ("202610150012", "Wireless headphones", "delivered", "899.00", "899.00"),
    "lamp": ("202610250777", "Desk lamp", "shipped", "249.00", "249.00"),
    "blender": ("202610180099", "Blender", "delivered", "599.00", "399.00"),
}


def phrasings():
    return pytest.mark.parametrize("row", PHRASINGS, ids=[row["text"][:40] for row in PHRASINGS])


def order_result(name: str) -> dict:
    order_id, item, status, paid, balance = ORDERS[name]
    return {
        "ok": True,
        "order_id": order_id,
        "status": status,
        "currency": "CNY",
        "amount_paid": paid,
        "refunded": str(Decimal(paid) - Decimal(balance)),
        "refundable_balance": balance,
        "days_since_delivery": 5 if status == "delivered" else None,
        "lines": [{"sku": "SKU", "name": item, "category": "home", "quantity": 1}],
        "note": None,
    }


def results(name: str, call: str, arguments: dict) -> dict:
    order_id = ORDERS[name][0]
    if call == "get_order" and arguments.get("order_id") != order_id:
        return {"ok": False, "error": {"code": "NOT_FOUND", "message": "No such order."}}
    if call == "get_order":
        return order_result(name)
    if call == "list_customer_orders":
        order = order_result(name)
        listed = {"order_id": order_id, "status": order["status"], "currency": "CNY",
                  "amount_paid": order["amount_paid"], "items": [ORDERS[name][1]],
                  "refundable_balance": order["refundable_balance"]}  # fmt: skip
        return {"ok": True, "orders": [listed], "total": 1}
    if call == "search_policies":
        return {"ok": True, "clauses": [{"ref": "R-1", "title": "Window", "text": "30 days."}]}
    if call == "get_refund_status":
        return {"ok": True, "order_id": order_id, "refund_requests": []}
    return {"ok": True, "status": "pending_approval", "request_id": "rf_1", "version": 1,
            "amount": arguments.get("amount"), "currency": "CNY"}  # fmt: skip


def proposal(text: str, name: str) -> dict | None:
    """What the planner proposes for `text` typed on a ticket of that order, if anything."""
    messages = [
        {"role": "system", "content": f"Actor role: agent\nTicket order: {ORDERS[name][0]}\n"},
        {"role": "user", "content": text},
    ]
    planner = OfflinePlanner()
    for _ in range(10):
        reply = planner.complete(messages=messages, tools=[{"name": tool} for tool in TOOLS])
        if not reply.tool_calls:
            return None
        (call,) = reply.tool_calls
        arguments = json.loads(call["function"]["arguments"], parse_float=Decimal)
        if call["function"]["name"] == "create_refund":
            return arguments
        result = results(name, call["function"]["name"], arguments)
        messages += [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": call["id"], "content": json.dumps(result)},
        ]
    raise AssertionError(f"no answer for {text!r}")


def reasons_read(text: str) -> set[str]:
    """The reasons the vocabulary reads: named as such first, described otherwise."""
    return vocabulary.reasons_named(text) or vocabulary.reasons_described(text)


def establishes_a_proposal(text: str, name: str) -> bool:
    """Whether the vocabulary's reading of `text` establishes one proposal on the order: a
    request, one reason (or a fault the policy names), one amount that the order's figures
    settle, and no product named that the order does not hold."""
    order_id, item, _, paid, balance = ORDERS[name]
    if not vocabulary.asks_for_refund(text) or set(_ORDER_ID.findall(text)) - {order_id}:
        return False
    currencies = vocabulary.currencies_named(text)
    if vocabulary.bad_order_refs(text) or (currencies and "CNY" not in currencies):
        return False
    reasons = reasons_read(text)
    if len(reasons) > 1 or not (reasons or vocabulary.fault_in_use(text)):
        return False
    things = vocabulary.things_named(text)
    other = [thing for thing in things if not vocabulary.names_item(thing, item)]
    if things and (len(other) == len(things) or any(map(vocabulary.is_product, other))):
        return False
    amounts = vocabulary.amounts_named(text)
    if amounts:
        return len(amounts) == 1 and min(amounts) > 0
    said = vocabulary.amount_words(text)
    if said.part and not said.remaining:
        return False
    if said.half or said.full:
        meant = vocabulary.amount_meant(text, paid=Decimal(paid), balance=Decimal(balance))
        return said.remaining or meant is not None
    return True


def test_the_corpus_has_at_least_200_phrasings_in_12_languages():
    assert len(PHRASINGS) >= 200
    assert len({row["lang"] for row in PHRASINGS}) >= 12
    assert sum(row["asks"] for row in PHRASINGS) >= 80
    assert sum(not row["asks"] for row in PHRASINGS) >= 80


@phrasings()
def test_the_planner_reads_a_request_as_the_vocabulary_does(row):
    text = row["text"]

    intent = read_intent(text)

    assert intent.wants_refund == vocabulary.asks_for_refund(text)
    assert intent.amounts == vocabulary.amounts_named(text)
    assert intent.amount_words == vocabulary.amount_words(text)
    assert intent.described.reasons == reasons_read(text)


@phrasings()
def test_the_planner_proposes_what_the_vocabulary_establishes_and_nothing_else(row):
    text, name = row["text"], row["order"]
    _, _, _, paid, balance = ORDERS[name]

    proposed = proposal(text, name)

    assert (proposed is not None) == establishes_a_proposal(text, name)
    if proposed is not None:
        amount = proposed["amount"]
        assert vocabulary.amount_established(
            amount, text, paid=Decimal(paid), balance=Decimal(balance)
        )
        reasons = reasons_read(text) or {"damaged", "other"}  # a fault: the policy's to name
        assert proposed["reason"] in reasons


@phrasings()
def test_the_vocabulary_reads_each_phrasing_as_labelled(row):
    text = row["text"]
    said = vocabulary.amount_words(text)
    means = {"full": said.full, "half": said.half, "rest": said.remaining, "part": said.part}

    assert vocabulary.asks_for_refund(text) == row["asks"]
    assert sorted(f"{amount:.2f}" for amount in vocabulary.amounts_named(text)) == row["amounts"]
    assert sorted(key for key, flag in means.items() if flag) == row["means"]
    assert sorted(reasons_read(text)) == row["reasons"]


@pytest.mark.parametrize(
    "text", ["cracked mug.png (image/jpeg, 117 KB)", "a 2 MB photo of the box", "512 bytes"]
)
def test_the_size_of_an_attached_file_is_no_amount(text):
    assert vocabulary.amounts_named(text) == set()
