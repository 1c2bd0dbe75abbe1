"""The offline planner: a deterministic stand-in for the model, with no network (DESIGN §3).

It reads the same Chat Completions transcript a real model gets and answers in the same
shapes, so the demo runs through the real executor without an API key.

What may steer it, and what may not:
  * intent, an explicit order id and an explicit amount come only from the latest message
    the support agent wrote (a `user` message, minus any untrusted block inside it);
  * the ticket's order comes from the system prompt's `Ticket order: <digits>` line;
  * ticket messages, the customer's name and address, order notes, order line names and
    tool results are data. They are read for facts (status, balances, clause refs) and
    scanned for injected instructions to warn about — never for what to do, which order to
    touch or how much to refund.
"""

import hashlib
import json
from dataclasses import dataclass, field
from decimal import Decimal

from agent.providers.llm import ModelReply, TextSink
from agent.providers.offline.answer import compose_answer
from agent.providers.offline.intent import _order_for, read_intent
from agent.providers.offline.transcript import (
    Transcript,
    _attempted,
    _money,
    _outcome_unknown,
    _tool_names,
    read_transcript,
)

# Calls the planner makes in one turn before it answers with what it has.
MAX_CALLS_PER_TURN = 6
EXPLANATION_MAX_CHARS = 200


_REASON_QUERY = {
    "damaged": "refund window delivery damaged",
    "not_received": "refund not received delivery",
    "wrong_item": "refund wrong item",
    "other": "refund window eligibility",
}


@dataclass
class Move:
    """The planner's next move: one tool call (`tool`, `arguments`) or the final answer
    (`tool` is None)."""

    tool: str | None = None
    arguments: dict = field(default_factory=dict)


class OfflinePlanner:
    """Implements `agent.providers.llm.Provider` without a model."""

    name = "offline"
    model = "offline-planner-v1"
    # Its runs' customer drafts come from templates (agent/drafts.py), not from a model call.
    drafts_from_templates = True

    def complete(
        self,
        *,
        messages: list[dict],
        tools: list[dict],
        tool_choice: str = "auto",
        on_text: TextSink | None = None,
    ) -> ModelReply:
        transcript = read_transcript(messages)
        offered = _tool_names(tools)
        may_call = tool_choice != "none" and bool(offered)
        move = plan(transcript, offered) if may_call else Move()
        tokens_in = transcript.chars_in // 4 + 1
        if move.tool is not None:
            arguments = _arguments_json(move.arguments)
            call_id = _call_id(messages, transcript.total_tool_calls + 1)
            tool_call = {
                "id": call_id,
                "type": "function",
                "function": {"name": move.tool, "arguments": arguments},
            }
            return ModelReply(
                content="",
                tool_calls=[tool_call],
                finish_reason="tool_calls",
                tokens_in=tokens_in,
                tokens_out=len(arguments) // 4 + 1,
            )
        answer = compose_answer(transcript, offered)
        return ModelReply(
            content=answer,
            finish_reason="stop",
            tokens_in=tokens_in,
            tokens_out=len(answer) // 4 + 1,
        )


def _call_id(messages: list[dict], number: int) -> str:
    """Deterministic for one transcript and distinct across a run's steps, also after the
    runtime trimmed old history (a repeated id would make the executor reuse a stale log)."""
    digest = hashlib.sha256(json.dumps(messages, sort_keys=True, default=str).encode()).hexdigest()[
        :10
    ]
    return f"call_off_{number}_{digest}"


def _arguments_json(arguments: dict) -> str:
    """JSON with money as a number with exactly two decimals (`129.00`), never a float repr."""
    placeholders = {}
    plain = {}
    for key, value in arguments.items():
        if isinstance(value, Decimal):
            placeholders[f"__amount_{key}__"] = f"{value:.2f}"
            plain[key] = f"__amount_{key}__"
        else:
            plain[key] = value
    text = json.dumps(plain, ensure_ascii=False)
    for marker, number in placeholders.items():
        text = text.replace(json.dumps(marker), number)
    return text


def plan(transcript: Transcript, offered: set[str]) -> Move:
    """The next step of the fixed plan: look up, read policy, propose, answer."""
    if not transcript.request or len(transcript.calls) >= MAX_CALLS_PER_TURN:
        return Move()
    intent = read_intent(transcript.request)
    order_id = _order_for(transcript, intent)

    if order_id is None:
        if transcript.ticket_order_conflict:
            return Move()
        if "list_customer_orders" in offered and not _attempted(transcript, "list_customer_orders"):
            return Move(tool="list_customer_orders", arguments={"limit": 20})
        return Move()

    if "get_order" in offered and not _attempted(transcript, "get_order", order_id):
        return Move(tool="get_order", arguments={"order_id": order_id})
    order_call = _attempted(transcript, "get_order", order_id)
    order = order_call.ok_result if order_call else None
    if order is not None and str(order.get("order_id", order_id)) != order_id:
        order = None
    if order_call is not None and order is None:
        return Move()

    if (
        intent.policy_topic
        and "search_policies" in offered
        and not _attempted(transcript, "search_policies")
    ):
        return Move(tool="search_policies", arguments={"query": _REASON_QUERY[intent.reason]})

    if intent.wants_refund and "create_refund" in offered and order is not None:
        refund_call = _attempted(transcript, "create_refund", order_id)
        if refund_call is None:
            amount = intent.amount or _money(order.get("refundable_balance"))
            balance = _money(order.get("refundable_balance"))
            if (
                amount
                and amount > 0
                and balance
                and balance > 0
                and not intent.partial_without_amount
            ):
                return Move(
                    tool="create_refund",
                    arguments={
                        "order_id": order_id,
                        "amount": amount,
                        "reason": intent.reason,
                        "explanation": _explanation(transcript.request),
                    },
                )
        elif (
            _outcome_unknown(refund_call)
            and "get_refund_status" in offered
            and not _attempted(transcript, "get_refund_status", order_id)
        ):
            return Move(tool="get_refund_status", arguments={"order_id": order_id})
    return Move()


def _explanation(request: str) -> str:
    quoted = request if len(request) <= 150 else request[:149].rstrip() + "…"
    return f'Support agent asked: "{quoted}"'[:EXPLANATION_MAX_CHARS]
