"""Small-model mode's structured answer (DESIGN §16, §18; the "did" piece): the model answers
the agent with `{"answer": "...", "did": [{"action": ..., "order_id": ...}]}`, and the desk
checks `did` against the run's tool log.

What the model says it did is its reading of its own work, not a fact: a claimed action the
tool log does not show ("it proposed a refund" with no proposal made) is dropped and told to
the agent as what it is ("The model said it proposed a refund; no proposal was made."), in
the agent's language. What the run really did is rendered by the desk from the log
(agent/runtime/records.py), so a claimed action the log shows adds nothing. A reply that is not
such JSON is the plain answer, read as before.

The format is asked for in the rules (the same text on every step) and, on a last call that
may not use tools, also as a `response_format` (agent/providers/openai_client.py): on a step
that may call tools a JSON schema would bind the tool calls too on servers that enforce it by
grammar.
"""

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass

from agent.providers.answer_format import ACTIONS
from agent.runtime.record_words import words_for

RULE = """\
8. When you answer the agent instead of calling a tool, write only a JSON object: \
{"answer": "<your answer to the agent, in their language>", "did": [{"action": "<one of \
looked_up_order, listed_orders, read_policy, checked_refund, proposed_refund>", "order_id": \
"<the order's number, or an empty string>"}]}. List in "did" only what a tool result of this \
conversation shows you did; an empty list if you did nothing.
"""
# An answer wrapped the way models wrap code: ```json … ```.
_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL | re.IGNORECASE)


@dataclass(frozen=True)
class Claimed:
    """One thing the model says it did."""

    action: str
    order_id: str = ""


@dataclass(frozen=True)
class StructuredAnswer:
    answer: str
    did: tuple[Claimed, ...]


def read_structured(content: str | None) -> StructuredAnswer | None:
    """The structured answer in `content`, or None when it is not one (the plain answer then
    stands): not JSON, not an object, or without a non-empty string "answer". Entries of
    "did" that name no known action are left out."""
    text = (content or "").strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1)
    if not text.startswith("{"):
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    answer = data.get("answer")
    if not isinstance(answer, str) or not answer.strip():
        return None
    listed = data.get("did")
    entries: list = listed if isinstance(listed, list) else []
    did = tuple(claimed for entry in entries if (claimed := _claimed(entry)) is not None)
    return StructuredAnswer(answer=answer.strip(), did=did)


def _claimed(entry: object) -> Claimed | None:
    if isinstance(entry, str):
        entry = {"action": entry}
    if not isinstance(entry, dict) or entry.get("action") not in ACTIONS:
        return None
    order_id = entry.get("order_id")
    return Claimed(str(entry["action"]), str(order_id).strip() if order_id is not None else "")


def unfounded(did: Iterable[Claimed], calls: Iterable[dict]) -> list[Claimed]:
    """The claimed actions the run's tool log does not show, each once. `calls`: the run's
    logged calls (rows with tool_name, ok, result, arguments_raw)."""
    calls = [call for call in calls if call["ok"] and isinstance(call["result"], dict)]
    missing = [claimed for claimed in did if not _shown(claimed, calls)]
    return list(dict.fromkeys(missing))


def _shown(claimed: Claimed, calls: list[dict]) -> bool:
    tool = {
        "looked_up_order": ("get_order", "list_customer_orders"),
        "listed_orders": ("list_customer_orders",),
        "read_policy": ("search_policies",),
        "checked_refund": ("get_refund_status",),
        "proposed_refund": ("create_refund",),
    }[claimed.action]
    made = [call for call in calls if call["tool_name"] in tool]
    if not claimed.order_id or claimed.action in ("listed_orders", "read_policy"):
        return bool(made)
    return any(claimed.order_id in _orders_of(call) for call in made)


def _orders_of(call: dict) -> set[str]:
    """The orders a successful call was about: named in its arguments or in its result."""
    found: set[str] = set()
    try:
        arguments = json.loads(call.get("arguments_raw") or "{}")
    except ValueError:
        arguments = {}
    if isinstance(arguments, dict) and arguments.get("order_id"):
        found.add(str(arguments["order_id"]))
    result = call["result"]
    if result.get("order_id"):
        found.add(str(result["order_id"]))
    for order in result.get("orders") or []:
        if isinstance(order, dict) and order.get("order_id"):
            found.add(str(order["order_id"]))
    return found


def unfounded_lines(did: Iterable[Claimed], calls: Iterable[dict], language: str) -> list[str]:
    """What the agent is told of each claimed action the log does not show, in `language`."""
    words = words_for(language)["unfounded"]
    return [
        words[claimed.action].format(order_id=claimed.order_id or "?")
        for claimed in unfounded(did, calls)
    ]
