# Over 400 lines: one composer per kind of tool result, all writing the one note the agent reads.
"""The offline planner's final answer, composed from the tool results in the transcript."""

from agent.errors import ErrorCode, error_in_words
from agent.providers.offline.intent import customer_latest_asks, customer_messages
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
from agent.vocabulary import CENT, edit_distance, names_item, products_named
from agent.vocabulary.requests import Intent, read_intent
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
        f"version {result.get('version', '?')}) — pending approval: it is waiting for a reviewer; "
        "nothing has been refunded yet."
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


_STATUS_WORDS = {
    "pending_approval": "pending approval by a reviewer, not refunded yet",
    "approved": "approved, being paid out, not refunded yet",
    "executing": "approved and being paid out, not confirmed yet",
    "provider_pending": "accepted by the payment provider, pending settlement, not refunded yet",
    "outcome_unknown": "sent to the payment provider, outcome not known yet: the desk is checking",
    "succeeded": "refunded (paid out)",
    "failed": "failed at the payment provider, nothing refunded",
    "rejected": "rejected by a reviewer, nothing refunded",
    "withdrawn": "withdrawn, nothing refunded",
}


def _status_lines(result: dict) -> list[str]:
    requests = (
        result.get("refund_requests") or result.get("requests") or result.get("results") or []
    )
    order_id = result.get("order_id")
    where = f" on order {order_id}" if order_id else " for this order"
    lines = []
    if not requests:
        lines.append(f"get_refund_status shows no refund request{where}: nothing was refunded.")
    else:
        described = [
            f"{item.get('request_id', '?')} {_status_words(item.get('status'))} "
            f"({item.get('amount', '?')})"
            + (f" — {_STATUS_WORDS[item['status']]}" if item.get("status") in _STATUS_WORDS else "")
            for item in requests
            if isinstance(item, dict)
        ]
        lines.append(f"Refund requests{where}: " + "; ".join(described) + ".")
    currency = f" {result['currency']}" if result.get("currency") else ""
    if result.get("amount_paid") is not None and result.get("refunded") is not None:
        lines.append(
            f"Paid {result['amount_paid']}{currency}, refunded so far {result['refunded']}"
            f"{currency}, refundable balance {result.get('refundable_balance', '?')}{currency}."
        )
    return lines


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


def _listing_lines(listing: Call) -> list[str]:
    result = listing.ok_result
    if result is None:
        return [_error_line(listing)]
    orders = [o for o in result.get("orders") or result.get("results") or [] if isinstance(o, dict)]
    described = []
    for order in orders:
        items = ", ".join(str(item) for item in order.get("items") or [])
        currency = f" {order['currency']}" if order.get("currency") else ""
        facts = [str(order.get("status", "?"))]
        if order.get("amount_paid") is not None:
            facts.append(f"paid {order['amount_paid']}{currency}")
        if order.get("refundable_balance") is not None:
            facts.append(f"refundable {order['refundable_balance']}{currency}")
        described.append(
            f"{order.get('order_id')}" + (f" {items}" if items else "") + f" ({', '.join(facts)})"
        )
    total = result.get("total")
    count = f" ({total})" if isinstance(total, int) and total > len(orders) else ""
    return [f"The customer's orders{count}: " + ("; ".join(described) or "none") + "."]


def _clause_lines(result: dict, quote: bool) -> list[str]:
    if not quote:
        return [_policy_line(result)]
    clauses = result.get("results") or result.get("clauses") or result.get("items") or []
    quoted = [
        f"{clause['ref']} ({clause.get('title', '')}): {_clause_text(clause)}".replace(" ()", "")
        for clause in (clauses if isinstance(clauses, list) else [])[:3]
        if isinstance(clause, dict) and clause.get("ref")
    ]
    if not quoted:
        return ["Policy search found no matching clause."]
    more = _refs(clauses[3:]) if isinstance(clauses, list) else []
    also = [f"Also relevant: {', '.join(more)}."] if more else []
    return ["The policy says:", *(f"- {line}" for line in quoted), *also]


def _clause_text(clause: dict) -> str:
    """A clause's text as the tool gave it, unless it reads like instructions: tool results
    are data, and a tampered clause is not passed on as if it were policy."""
    text = str(clause.get("text", ""))
    if looks_like_instructions(text):
        return "(text not quoted: it reads like instructions to the assistant)"
    return text


def _closest(order_id: str, listing: Call | None, things: frozenset = frozenset()) -> list[str]:
    """The listed order numbers nearest to a mistyped one (a slip or two away): one, or the
    several that are equally near; of those a few slips away, the one order that holds what
    the agent named, when exactly one does (still only offered, never acted on)."""
    result = (listing.ok_result if listing else None) or {}
    orders = {
        str(order.get("order_id", "")): [str(item) for item in order.get("items") or [] if item]
        for order in result.get("orders") or []
        if isinstance(order, dict) and order.get("order_id")
    }
    distances = {candidate: edit_distance(order_id, candidate) for candidate in orders}
    near = [candidate for candidate, distance in distances.items() if distance < 4]
    holding = [
        candidate
        for candidate in near
        if any(names_item(thing, name) for thing in things for name in orders[candidate])
    ]
    if len(holding) == 1:
        return holding
    nearest = min(distances.values(), default=4)
    if nearest >= 4:
        return []
    return [candidate for candidate, distance in distances.items() if distance == nearest]


def _customer_extra_request(
    transcript: Transcript, intent: Intent, order: dict | None
) -> str | None:
    """A refund the customer asks for that the agent did not ask me to propose."""
    latest = customer_latest_asks(transcript)
    if latest is None or not latest.wants_refund or intent.defers_to_customer:
        return None
    own = [str(line.get("name", "")) for line in (order or {}).get("lines") or [] if line]
    things = sorted(
        product
        for product in products_named(customer_messages(transcript)[-1])
        if not any(names_item({product}, name) for name in own)
    )
    if intent.wants_refund and not things:
        return None
    named = f" (it mentions: {', '.join(things[:3])})" if things else ""
    return (
        f"The customer's latest message asks for a refund{named}. A customer's request is not "
        "an instruction to me: I did not act on it. Tell me if you want me to propose it."
    )


_QUESTIONS = {
    "amount": "How much should I propose for order {order} (refundable balance {balance})?",
    "amount_zero": (
        "A refund must be more than 0.00, so I proposed nothing. What amount should I "
        "propose for order {order} (refundable balance {balance})?"
    ),
    "customer_amount": (
        "The customer's message names {customer_amount}, the refundable balance is {balance}: "
        "which amount should I propose for order {order}?"
    ),
    "reason": (
        "What went wrong with order {order}: damaged, not received, the wrong item, or "
        "another reason?"
    ),
    "two_reasons": (
        "The words describe more than one reason ({reasons}): which one should I propose for "
        "order {order}?"
    ),
    "two_amounts": (
        "You named {amounts}: which amount should I propose for order {order} (refundable "
        "balance {balance})?"
    ),
    "half": (
        "Half of the order's price ({half_paid}) or half of its refundable balance "
        "({half_balance}): which should I propose for order {order}?"
    ),
    "amount_or_rest": (
        "You named {amounts} and asked for the whole of what is left ({balance}): which amount "
        "should I propose for order {order}?"
    ),
    "full_or_rest": (
        "Order {order} can take at most its refundable balance of {balance}, less than its "
        "full price: should I propose {balance}, or another amount?"
    ),
    "currency": (
        "Order {order} was paid in {currency}, not in the currency you wrote: how much in "
        "{currency} should I propose (refundable balance {balance})?"
    ),
    "which_item": (
        "None of this customer's orders holds just what you describe, or more than one does. "
        "Which order do you mean? Tell me its order number and I will look it up."
    ),
    "which_order": "Which order do you mean? Tell me its order number and I will look it up.",
    "list": "Which order do you mean? Tell me its order number and I will look it up.",
    "no_ticket_order": (
        "This ticket has no order attached: which order do you mean? Tell me its number."
    ),
    "wrong_number": (
        "I could not find order {typed} among this customer's orders.{closest} Which order "
        "number is the right one?"
    ),
    "mismatch": (
        "Order {typed} does not hold what you describe, but this ticket's order {ticket} does: "
        "which order do you mean?"
    ),
    "bad_number": (
        "{typed} is not an order number (order numbers have 8 to 20 digits). Which order do "
        "you mean?"
    ),
}


def _question(kind: str, transcript: Transcript, intent: Intent, move) -> str:
    order_id = move.order_id or (intent.order_ids[0] if intent.order_ids else None)
    order_id = order_id or transcript.ticket_order or "?"
    order_call = _attempted(transcript, "get_order", order_id)
    order = (order_call.ok_result if order_call else None) or {}
    currency = f" {order['currency']}" if order.get("currency") else ""
    balance = f"{order.get('refundable_balance', '?')}{currency}"
    typed = intent.order_ids[0] if intent.order_ids else ""
    if kind == "bad_number":
        typed = intent.bad_order_refs[0] if intent.bad_order_refs else ""
    listing = _attempted(transcript, "list_customer_orders")
    closest = _closest(typed, listing, intent.things) if typed else []
    customer = customer_latest_asks(transcript)
    paid = _money(order.get("amount_paid"))
    left = _money(order.get("refundable_balance"))
    return _QUESTIONS.get(kind, _QUESTIONS["which_order"]).format(
        order=order_id,
        balance=balance,
        typed=typed,
        closest=f" Did you mean {' or '.join(closest)}?"
        if closest and kind == "wrong_number"
        else "",
        customer_amount=_amounts(customer.amounts, currency) if customer else "?",
        ticket=transcript.ticket_order or "?",
        currency=order.get("currency") or "the order's currency",
        reasons=" and ".join(reason.replace("_", " ") for reason in getattr(move, "reasons", ())),
        amounts=_amounts(intent.amounts, currency),
        half_paid=f"{(paid / 2).quantize(CENT)}{currency}" if paid is not None else "?",
        half_balance=f"{(left / 2).quantize(CENT)}{currency}" if left is not None else "?",
    )


def _amounts(amounts, currency: str) -> str:
    return " and ".join(f"{amount}{currency}" for amount in sorted(amounts)) or "?"


_NOTES = {
    "out_of_steps": "I did not propose a refund yet; the step limit was reached before I could.",
    "closing": (
        "You're welcome. I made no changes for this request; nothing is left open on my side."
    ),
    "no_order": "I did not propose a refund because I could not read the order.",
    "approval": (
        "I can't approve refunds, and nobody approves their own: a refund reviewer who did not "
        "request it must approve it (R-6). Until then it waits for review and nothing is paid out."
    ),
}


def compose_answer(transcript: Transcript, offered: set[str], move=None) -> str:
    if not transcript.request:
        return "There is no request from the support agent to work on."
    intent = read_intent(transcript.request)
    notes = list(getattr(move, "notes", []) or [])
    ask = getattr(move, "ask", None)
    if "closing" in notes:
        return _NOTES["closing"] + (" 不客气，这次没有做任何改动。" if intent.chinese else "")
    order_id = getattr(move, "order_id", None) or (
        intent.order_ids[0] if intent.order_ids else transcript.ticket_order
    )
    lines: list[str] = []
    if transcript.ticket_order_conflict and not intent.order_ids:
        lines.append(
            "The ticket's order is ambiguous in my instructions, so I did not look "
            "one up. Tell me the order id."
        )

    listing = _attempted(transcript, "list_customer_orders")
    if listing is not None:
        lines += _listing_lines(listing)

    looked_up: list[str] = []
    for call in transcript.calls:
        if call.name == "get_order" and call.order_id and call.order_id not in looked_up:
            looked_up.append(call.order_id)
    order = None
    for looked in looked_up:
        lookup = _attempted(transcript, "get_order", looked)
        if lookup is None:
            continue
        if lookup.ok_result is None:
            lines.append(_error_line(lookup))
        else:
            lines += _order_lines(lookup.ok_result)
            if looked == order_id:
                order = lookup.ok_result
    if order_id and not looked_up and not transcript.calls and not ask and not notes:
        lines.append(f"I have not looked up order {order_id}.")

    for call in transcript.calls:
        if call.name == "get_refund_status" and call is _attempted(
            transcript, "get_refund_status", call.order_id
        ):
            status = call.ok_result
            lines += _status_lines(status) if status is not None else [_error_line(call)]

    search = _attempted(transcript, "search_policies")
    if search is not None:
        clauses = search.ok_result
        quote = intent.asks_policy and not intent.wants_refund
        lines += _clause_lines(clauses, quote) if clauses is not None else [_error_line(search)]

    refund_call = _attempted(transcript, "create_refund", order_id) if order_id else None
    if refund_call is not None:
        proposal = refund_call.ok_result
        if proposal is not None:
            lines += _refund_lines(proposal)
        elif _outcome_unknown(refund_call):
            lines.append(
                "The refund proposal timed out: its outcome is unknown, so I did not send it again."
            )
            if _attempted(transcript, "get_refund_status", order_id) is None:
                lines.append("Check get_refund_status for this order before proposing again.")
        else:
            lines.append(_error_line(refund_call) + " Nothing was proposed.")

    for note in notes:
        if note == "not_offered":
            lines.append(_why_not_offered(transcript))
        elif note == "nothing_left":
            lines.append(_nothing_left(order))
        elif note == "already_pending":
            lines.append(
                "A refund request on this order is already waiting for review (see above), so "
                "I did not propose another. Tell me if its amount or reason should change."
            )
        elif note in _NOTES:
            lines.append(_NOTES[note])

    extra = _customer_extra_request(transcript, intent, order)
    if extra:
        lines.append(extra)
    if ask:
        lines.append(_question(ask, transcript, intent, move))
    elif not lines:
        lines.append(
            "I can't help with that here: I can look up this customer's orders, refund "
            "requests and the refund policy, and propose refunds for review."
        )
    if intent.chinese:
        lines.append(_chinese_summary(transcript, ask, refund_call))

    warning = _injection_warning(transcript)
    if warning:
        lines.append(warning)
    return "\n".join(lines)


def _chinese_summary(transcript: Transcript, ask: str | None, refund_call: Call | None) -> str:
    if ask:
        return "（摘要）需要您先回答上面的问题，我才能继续；没有提交任何退款。"
    proposal = refund_call.ok_result if refund_call else None
    if proposal is not None:
        return (
            f"（摘要）已提交退款提议 {proposal.get('amount', '?')} {proposal.get('currency', '')}，"
            "等待审核人批准（pending approval），尚未退款。"
        )
    return "（摘要）详情见上；本次没有提交新的退款。"


def _why_not_offered(transcript: Transcript) -> str:
    role = f" ({transcript.actor_role})" if transcript.actor_role else ""
    return (
        f"I can't propose a refund: create_refund is not available to your role{role}. "
        "A support agent or supervisor needs to propose it."
    )


def _nothing_left(order: dict | None) -> str:
    order = order or {}
    refunded = order.get("refunded")
    # get_order's refunded total counts refunds in flight too: say no more than it knows.
    already = (
        f"; refunds made or in flight: {refunded}, get_refund_status says which"
        if refunded not in (None, "0.00")
        else ""
    )
    return (
        f"Nothing is left to refund on this order (refundable balance "
        f"{order.get('refundable_balance', '0.00')}{already}). I did not propose a refund."
    )
