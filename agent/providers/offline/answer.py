"""The offline planner's final answer, composed from the tool results in the transcript."""

from agent.errors import ErrorCode, error_in_words
from agent.providers.offline.intent import Intent, _order_for, read_intent
from agent.providers.offline.transcript import (
    Call,
    Transcript,
    _attempted,
    _error_of,
    _money,
    _outcome_unknown,
)
from agent.untrusted import (
    instruction_signals,
    looks_like_instructions,
)
from config.refund_statuses import RefundStatus


def _error_line(call: Call) -> str:
    result = call.result
    if result is None:
        return f"{call.name} has not returned a result yet."
    error = _error_of(result)
    # The desk user reads this note: the error in words (agent/errors.py), never its code.
    if error.get("code") in ErrorCode.__members__:
        words = error_in_words(error)
    else:  # the planner's own UNREADABLE_RESULT, or a code this desk does not know
        message = str(error.get("message") or "no details given").rstrip(".")
        words = f"{message[:1].upper()}{message[1:]}."
    refs = _refs(error.get("clauses") or error.get("policy") or error.get("failed") or [])
    unsaid = [ref for ref in refs if ref not in words]
    clause_text = f" (clauses {', '.join(unsaid)})" if unsaid else ""
    return f"{call.name} did not go through: {words}{clause_text}"


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
        f"{item.get('request_id', '?')} {_status_words(item.get('status'))} "
        f"({item.get('amount', '?')})"
        for item in requests
        if isinstance(item, dict)
    ]
    return ["Refund requests on this order: " + "; ".join(described) + "."]


def _status_words(status) -> str:
    """A refund status as every page says it (config/refund_statuses.py)."""
    if status in RefundStatus.values:
        return RefundStatus(status).label.lower()
    return str(status or "?")


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
