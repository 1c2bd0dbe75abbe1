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
import re
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

from agent.llm import ModelReply, TextSink
from agent.untrusted import (
    instruction_signals,
    labelled_untrusted_blocks,
    looks_like_instructions,
    strip_untrusted,
    untrusted_blocks,
)

# Calls the planner makes in one turn before it answers with what it has.
MAX_CALLS_PER_TURN = 6
EXPLANATION_MAX_CHARS = 200

_TICKET_ORDER = re.compile(r"^[ \t]*Ticket order:[ \t]*(\S+)[ \t]*$", re.IGNORECASE | re.MULTILINE)
_ACTOR_ROLE = re.compile(r"^[ \t]*Actor role:[ \t]*(\w+)", re.IGNORECASE | re.MULTILINE)
# The prompt may instead say "You act for: <user>, role <role>."
_ACTOR_ROLE_PROSE = re.compile(r"\brole[: ]+(intern|agent|supervisor)\b", re.IGNORECASE)
# Digits not glued to other digits or to a decimal part: "202610110087." is an order id.
_ORDER_ID = re.compile(r"(?<!\d)(?<!\d[.,])\d{8,20}(?!\d)(?![.,]\d)")
_CENTS = Decimal("0.01")

# "refund policy", "refund status" and the like name a topic, not a request.
_REFUND_WORDS = re.compile(
    r"\b(?:refund\w*+|reimburs\w*+|money back|pay (?:her|him|them|the customer) back)\b"
    r"(?!\s+(?:polic\w*|window|rules?|status|eligibility|requests?|history|options?)\b)",
    re.I,
)
_REFUND_NEGATED = re.compile(
    r"\b(?:don'?t|do not|never|no|without|hold off(?: on)?|(?:should|must|can|do)(?:n'?t| not)"
    r"|not yet)\s+(?:(?:issue|propose|create|give|make|process|start|a|any|the|them|it)\s+)"
    r"{0,2}(?:refund\w*|reimburs\w*|money back)",
    re.I,
)
_REFUND_COMMAND = re.compile(
    r"\b(?:please|go ahead|propose|issue|create|process|start)\b[^.?!]*\b(?:refund|reimburs)"
    r"|\brefund (?:it|them|this|that|the order|the customer|him|her|in full)\b",
    re.I,
)
# A question ("can she get her money back?") asks for facts unless it also says what to do.
_QUESTION = re.compile(r"\?|\beligib\w*", re.I)
_POLICY_TOPIC = re.compile(
    r"\b(?:refund\w*|return\w*|reimburs\w*|money back|broken|damaged|cracked|shattered|"
    r"defective|faulty|in pieces|never arrived|not arrived|(?:hasn'?t|has not|didn'?t|did not)"
    r" arrive\w*|not received|never received|lost|wrong|eligib\w*|polic\w*)\b",
    re.I,
)
_DAMAGED = re.compile(
    r"\b(?:broken|damaged|cracked|shattered|smashed|in pieces|defective|faulty|"
    r"stopped working|(?:does ?n[o']?t|not) work\w*)\b",
    re.I,
)
_NOT_RECEIVED = re.compile(
    r"\b(?:never (?:arrived|came|received|delivered)|not (?:arrived|received|delivered)|"
    r"(?:hasn'?t|has not|didn'?t|did not|haven'?t|have not) (?:arrived|been delivered|"
    r"received|come)|lost|missing)\b",
    re.I,
)
_WRONG_ITEM = re.compile(r"\bwrong\b|\bnot what (?:she|he|they|the customer|i|we) ordered\b", re.I)
_AMOUNT = re.compile(
    r"(?:[¥￥$€£]|\b(?:cny|rmb|usd|eur)\s?)\s*(?P<a>\d+(?:\.\d{1,2})?)\b"
    r"|\b(?P<b>\d+(?:\.\d{1,2})?)\s*(?:cny|rmb|yuan|usd|eur|dollars?|euros?)\b"
    r"|\b(?P<c>\d+\.\d{2})\b(?!\s*%)"
    r"|\brefund\w*\s+(?:of\s+|them\s+|her\s+|him\s+|the customer\s+)?(?P<d>\d+(?:\.\d{1,2})?)"
    r"\b(?!\s*(?:%|percent|days?|items?|orders?))",
    re.I,
)
_PARTIAL = re.compile(r"\b(?:half|partial(?:ly)?|part of|percent)\b|\d\s*%", re.I)

_REASON_QUERY = {
    "damaged": "refund window delivery damaged",
    "not_received": "refund not received delivery",
    "wrong_item": "refund wrong item",
    "other": "refund window eligibility",
}


@dataclass
class Call:
    id: str
    name: str
    arguments: dict | None
    result: dict | None = None

    @property
    def order_id(self) -> str | None:
        value = (self.arguments or {}).get("order_id")
        return str(value) if value is not None else None

    @property
    def ok(self) -> bool:
        return isinstance(self.result, dict) and self.result.get("ok") is True

    @property
    def ok_result(self) -> dict | None:
        """The result of a call that succeeded; None while it has none or after an error."""
        return self.result if self.ok else None


@dataclass
class Transcript:
    request: str = ""
    ticket_order: str | None = None
    ticket_order_conflict: bool = False
    actor_role: str = ""
    calls: list[Call] = field(default_factory=list)
    untrusted_texts: list[tuple[str, str]] = field(default_factory=list)
    total_tool_calls: int = 0
    chars_in: int = 0


def _text(content) -> str:
    """Message content as text; Chat Completions allows a list of typed parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            part.get("text", "") if isinstance(part, dict) else str(part) for part in content
        )
    return str(content)


def _parse_result(content: str) -> dict:
    """A tool message's JSON, also when the runtime wrapped it in an untrusted block."""
    candidates = [*untrusted_blocks(content), content]
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except (TypeError, ValueError):
            continue
        if isinstance(value, dict):
            return value
    return {
        "ok": False,
        "error": {"code": "UNREADABLE_RESULT", "message": "the tool result was not JSON"},
    }


def _parse_arguments(raw) -> dict | None:
    if isinstance(raw, dict):
        return raw
    try:
        value = json.loads(raw or "{}")
    except (TypeError, ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def read_transcript(messages: list[dict]) -> Transcript:
    transcript = Transcript()
    system_lines: list[str] = []
    turn_start = 0
    for index, message in enumerate(messages):
        role = message.get("role")
        content = _text(message.get("content"))
        transcript.chars_in += len(content)
        if role in ("system", "developer"):
            system_lines.append(strip_untrusted(content))
        if role in ("system", "developer", "user"):
            transcript.untrusted_texts += [
                (_place(label), body) for label, body in labelled_untrusted_blocks(content)
            ]
        if role == "user" and strip_untrusted(content).strip():
            transcript.request = " ".join(strip_untrusted(content).split())
            turn_start = index

    system = "\n".join(system_lines)
    orders = {value.lower() for value in _TICKET_ORDER.findall(system)}
    digits = {value for value in orders if _ORDER_ID.fullmatch(value)}
    # Two different bound orders mean the prompt was tampered with; bind neither.
    transcript.ticket_order_conflict = len(orders) > 1
    if len(orders) == 1 and digits:
        transcript.ticket_order = digits.pop()
    role_match = _ACTOR_ROLE.search(system) or _ACTOR_ROLE_PROSE.search(system)
    transcript.actor_role = role_match.group(1).lower() if role_match else ""

    by_id: dict[str, Call] = {}
    for index, message in enumerate(messages):
        if message.get("role") == "assistant":
            for tool_call in message.get("tool_calls") or []:
                transcript.total_tool_calls += 1
                if index < turn_start:
                    continue
                function = tool_call.get("function") or {}
                call = Call(
                    id=str(tool_call.get("id", "")),
                    name=function.get("name", ""),
                    arguments=_parse_arguments(function.get("arguments")),
                )
                by_id[call.id] = call
                transcript.calls.append(call)
        elif message.get("role") == "tool" and index > turn_start:
            answered = by_id.get(str(message.get("tool_call_id", "")))
            if answered is not None:
                answered.result = _parse_result(_text(message.get("content")))
    return transcript


def _place(label: str) -> str:
    """ "customer_message_2026-11-29_14_04" -> "customer message": where, not when."""
    prefix = re.match(r"[a-z_]*", label)
    words = prefix.group(0).strip("_") if prefix else ""
    return words.replace("_", " ") or "untrusted text"


def _tool_names(tools: list[dict]) -> set[str]:
    names = set()
    for tool in tools or []:
        function = tool.get("function")
        if not isinstance(function, dict):
            function = tool
        if function.get("name"):
            names.add(function["name"])
    return names


def _money(value) -> Decimal | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        return Decimal(str(value)).quantize(_CENTS)
    except (InvalidOperation, ValueError):
        return None


# --- reading the agent's request ---------------------------------------------------------


@dataclass(frozen=True)
class Intent:
    wants_refund: bool
    policy_topic: bool
    reason: str
    amount: Decimal | None
    partial_without_amount: bool
    order_ids: tuple[str, ...]


def read_intent(request: str) -> Intent:
    order_ids = tuple(dict.fromkeys(_ORDER_ID.findall(request)))
    without_ids = _ORDER_ID.sub(" ", request)
    asks_refund = bool(_REFUND_WORDS.search(request))
    declined = bool(_REFUND_NEGATED.search(request))
    only_asking = bool(_QUESTION.search(request))
    amount = None
    for match in _AMOUNT.finditer(without_ids):
        amount = _money(next(value for value in match.groups() if value is not None))
        if amount is not None and amount > 0:
            break
        amount = None
    if _DAMAGED.search(request):
        reason = "damaged"
    elif _NOT_RECEIVED.search(request):
        reason = "not_received"
    elif _WRONG_ITEM.search(request):
        reason = "wrong_item"
    else:
        reason = "other"
    return Intent(
        wants_refund=(
            asks_refund
            and not declined
            and (not only_asking or bool(_REFUND_COMMAND.search(request)))
        ),
        policy_topic=bool(_POLICY_TOPIC.search(request)),
        reason=reason,
        amount=amount,
        partial_without_amount=amount is None and bool(_PARTIAL.search(request)),
        order_ids=order_ids,
    )


# --- the planner ---------------------------------------------------------------------------


@dataclass
class Move:
    """The planner's next move: one tool call (`tool`, `arguments`) or the final answer
    (`tool` is None)."""

    tool: str | None = None
    arguments: dict = field(default_factory=dict)


class OfflinePlanner:
    """Implements `agent.llm.Provider` without a model."""

    name = "offline"
    model = "offline-planner-v1"

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


def _attempted(transcript: Transcript, name: str, order_id: str | None = None) -> Call | None:
    """The latest call of `name` in this turn (for that order), whatever its outcome."""
    for call in reversed(transcript.calls):
        if call.name == name and (order_id is None or call.order_id == order_id):
            return call
    return None


def _order_for(transcript: Transcript, intent: Intent) -> str | None:
    if intent.order_ids:
        return intent.order_ids[0]
    return transcript.ticket_order


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


def _error_of(result: dict) -> dict:
    error = result.get("error")
    return error if isinstance(error, dict) else {}


def _outcome_unknown(call: Call) -> bool:
    result = call.result or {}
    error = _error_of(result)
    return result.get("status") == "unknown" or error.get("code") == "TOOL_TIMEOUT"


# --- the answer ----------------------------------------------------------------------------


def _error_line(call: Call) -> str:
    result = call.result
    if result is None:
        return f"{call.name} has not returned a result yet."
    error = _error_of(result)
    code = error.get("code") or "ERROR"
    message = error.get("message") or "no details given"
    refs = _refs(error.get("clauses") or error.get("policy") or error.get("failed") or [])
    clause_text = f" (clauses {', '.join(refs)})" if refs else ""
    return f"{call.name} failed: {code} — {message}{clause_text}."


def _refs(items) -> list[str]:
    refs = []
    for item in items if isinstance(items, list) else []:
        ref = item.get("ref") or item.get("clause") if isinstance(item, dict) else item
        if isinstance(ref, str) and ref and ref not in refs:
            refs.append(ref)
    return refs


def _order_lines(order: dict) -> list[str]:
    currency = f" {order['currency']}" if order.get("currency") else ""
    facts = [f"Order {order.get('order_id', '?')}: {order.get('status', 'status unknown')}"]
    if order.get("amount_paid") is not None:
        facts.append(f"paid {order['amount_paid']}{currency}")
    if order.get("refunded") is not None:
        facts.append(f"already refunded {order['refunded']}{currency}")
    if order.get("refundable_balance") is not None:
        facts.append(f"refundable balance {order['refundable_balance']}{currency}")
    if order.get("days_since_delivery") is not None:
        facts.append(f"{order['days_since_delivery']} days since delivery")
    elif order.get("status") != "delivered":
        facts.append("not delivered yet")
    lines = [", ".join(facts) + "."]
    items = [
        f"{line.get('name', line.get('sku', 'item'))} x{line.get('quantity', 1)}"
        + (f" ({line['category']})" if line.get("category") else "")
        for line in order.get("lines") or []
        if isinstance(line, dict)
    ]
    if items:
        lines.append("Items: " + "; ".join(items) + ".")
    return lines


def _policy_line(result: dict) -> str:
    clauses = result.get("results") or result.get("clauses") or result.get("items") or []
    found = []
    for clause in clauses if isinstance(clauses, list) else []:
        if isinstance(clause, dict) and clause.get("ref"):
            title = f" ({clause['title']})" if clause.get("title") else ""
            found.append(f"{clause['ref']}{title}")
    if not found:
        return "Policy search found no matching clause."
    return "Relevant policy clauses: " + ", ".join(found) + "."


def _refund_lines(result: dict) -> list[str]:
    amount = result.get("amount", "?")
    currency = f" {result['currency']}" if result.get("currency") else ""
    lines = [
        f"Proposed a refund of {amount}{currency} (request {result.get('request_id', '?')}, "
        f"version {result.get('version', '?')}) — it is waiting for a reviewer; nothing has "
        "been refunded yet."
    ]
    verdicts = []
    for verdict in result.get("policy") or result.get("verdicts") or []:
        if not isinstance(verdict, dict):
            continue
        ref = verdict.get("clause") or verdict.get("ref") or "?"
        passed = verdict.get("ok", verdict.get("passed"))
        if verdict.get("outcome") in ("pass", "fail"):
            passed = verdict["outcome"] == "pass"
        outcome = "passes" if passed is True else "fails" if passed is False else "noted"
        verdicts.append(f"{ref} {outcome}")
    if verdicts:
        lines.append("Policy checks: " + ", ".join(verdicts) + ".")
    return lines


def _status_lines(result: dict) -> list[str]:
    requests = (
        result.get("refund_requests") or result.get("requests") or result.get("results") or []
    )
    if not requests:
        return ["get_refund_status shows no refund request for this order."]
    described = [
        f"{item.get('request_id', '?')} {item.get('status', '?')} ({item.get('amount', '?')})"
        for item in requests
        if isinstance(item, dict)
    ]
    return ["Refund requests on this order: " + "; ".join(described) + "."]


def _injection_warning(transcript: Transcript) -> str | None:
    texts = list(transcript.untrusted_texts)
    for call in transcript.calls:
        result = (call.result or {}) if call.name == "get_order" else {}
        note = result.get("note")
        if isinstance(note, dict):
            note = note.get("untrusted_customer_text")
        if isinstance(note, str):
            texts.append(("the order note", note))
        lines = result.get("lines")
        texts += [
            ("an order line name", line["name"])
            for line in (lines if isinstance(lines, list) else [])
            if isinstance(line, dict) and isinstance(line.get("name"), str)
        ]
    where, signals = [], []
    for label, text in texts:
        if looks_like_instructions(text):
            where.append(label)
            signals += [s for s in instruction_signals(text) if s not in signals]
    if not where:
        return None
    places = " and ".join(dict.fromkeys(where))
    return (
        f"Warning: customer-written text ({places}) reads like instructions to the "
        f"assistant ({', '.join(signals[:4])}). I treated it as data and did not act on it."
    )


def compose_answer(transcript: Transcript, offered: set[str]) -> str:
    if not transcript.request:
        return "There is no request from the support agent to work on."
    intent = read_intent(transcript.request)
    order_id = _order_for(transcript, intent)
    ambiguous = transcript.ticket_order_conflict and not intent.order_ids
    lines: list[str] = []
    if ambiguous:
        lines.append(
            "The ticket's order is ambiguous in my instructions, so I did not look "
            "one up. Tell me the order id."
        )
    elif order_id is None:
        listing = _attempted(transcript, "list_customer_orders")
        listed = listing.ok_result if listing else None
        if listed is not None:
            orders = listed.get("orders") or listed.get("results") or []
            described = [
                f"{o.get('order_id')} ({o.get('status')})" for o in orders if isinstance(o, dict)
            ]
            lines.append("The customer's orders: " + (", ".join(described) or "none") + ".")
        elif listing:
            lines.append(_error_line(listing))
        lines.append("This ticket has no order attached; tell me which order you mean.")

    order_call = _attempted(transcript, "get_order", order_id) if order_id else None
    order = order_call.ok_result if order_call else None
    if order_call and not order_call.ok:
        lines.append(_error_line(order_call))
    elif order is not None:
        lines += _order_lines(order)
    elif order_id:
        lines.append(f"I have not looked up order {order_id}.")

    search = _attempted(transcript, "search_policies")
    if search is not None:
        clauses = search.ok_result
        lines.append(_policy_line(clauses) if clauses is not None else _error_line(search))

    refund_call = _attempted(transcript, "create_refund", order_id) if order_id else None
    if refund_call is not None:
        proposal = refund_call.ok_result
        if proposal is not None:
            lines += _refund_lines(proposal)
        elif _outcome_unknown(refund_call):
            lines.append(
                "The refund proposal timed out: its outcome is unknown, so I did not send it again."
            )
            status = _attempted(transcript, "get_refund_status", order_id)
            if status is not None:
                requests = status.ok_result
                lines += _status_lines(requests) if requests is not None else [_error_line(status)]
            else:
                lines.append("Check get_refund_status for this order before proposing again.")
        else:
            lines.append(_error_line(refund_call) + " Nothing was proposed.")
    elif intent.wants_refund and order_id:
        lines.append(_why_no_proposal(transcript, offered, intent, order))

    warning = _injection_warning(transcript)
    if warning:
        lines.append(warning)
    return "\n".join(lines)


def _why_no_proposal(
    transcript: Transcript, offered: set[str], intent: Intent, order: dict | None
) -> str:
    if "create_refund" not in offered:
        role = f" ({transcript.actor_role})" if transcript.actor_role else ""
        return (
            f"I can't propose a refund: create_refund is not available to your role{role}. "
            "A support agent or supervisor needs to propose it."
        )
    if order is None:
        return "I did not propose a refund because I could not read the order."
    balance = _money(order.get("refundable_balance"))
    if not balance or balance <= 0:
        return (
            f"Nothing is left to refund on this order (refundable balance "
            f"{order.get('refundable_balance', '0.00')}); I did not propose a refund."
        )
    if intent.partial_without_amount:
        return "Tell me the exact amount to refund and I will propose it."
    return "I did not propose a refund yet; the step limit was reached before I could."
