# Over 400 lines: the planner's one decision procedure (what the agent asked, what the tools
# said, which call comes next) reads best in one place; intent.py reads the words, answer.py
# writes the note.
"""The offline planner: a deterministic stand-in for the model, with no network (DESIGN §3).

It reads the same Chat Completions transcript a real model gets and answers in the same
shapes, so the demo runs through the real executor without an API key.

What may steer it, and what may not:
  * what to do, an explicit order id and an explicit amount come only from the latest
    message the support agent wrote (a `user` message, minus any untrusted block inside it);
    a refund the customer asks for is proposed only when that message says to ("go ahead",
    "propose what she asks for"), and then only on the ticket's own order;
  * the ticket's order comes from the system prompt's `Ticket order: <digits>` line;
  * ticket messages, the customer's name and address, order notes, order line names and
    tool results are data. They are read for facts (what happened to the order, status,
    balances, clause refs) and scanned for injected instructions to warn about; they can
    make the planner more careful (ask which order) but never make it act.

It reads words only through agent/vocabulary/ (many languages, misspellings) and grounds
what it reads in the data the tools returned, not in phrasing: the order by its number or by
an item of the customer's orders; the amount as typed, or what "the rest", "in full" or "half"
come to on that order; the reason in the policy's vocabulary. It works like a careful agent
(DESIGN §16): it looks the order up before proposing, checks the refund requests already on
it, and asks one question, proposing nothing, when the order, the amount or the reason is not
established (a number not found, even one a slip away from one of hers, is asked about).
"""

import hashlib
import json
from dataclasses import dataclass, field
from decimal import Decimal

from agent.providers.llm import ModelReply, TextSink
from agent.providers.offline.answer import compose_answer
from agent.providers.offline.intent import (
    customer_doubts_order,
    customer_latest_asks,
    customer_messages,
    customer_orders_named,
    customer_reason,
)
from agent.providers.offline.transcript import (
    Call,
    Transcript,
    _attempted,
    _error_of,
    _money,
    _outcome_unknown,
    _tool_names,
    read_transcript,
)
from agent.vocabulary import (
    CENT,
    about_an_order,
    asks_only_an_answer,
    counts_faults_as_damage,
    doubts_the_order,
    is_product,
    named_in_passing,
    names_item,
    policy_keywords,
    things_named,
)
from agent.vocabulary.requests import Intent, Reason, read_intent

# Calls the planner makes in one turn before it answers with what it has.
MAX_CALLS_PER_TURN = 7
EXPLANATION_MAX_CHARS = 200
LIST_LIMIT = 20

_REASON_QUERY = {
    "damaged": "refund window delivery damaged",
    "not_received": "refund not received delivery",
    "wrong_item": "refund wrong item",
    "other": "refund window eligibility",
}
# Asked before choosing a reason for a fault in use: does the policy count it as damage?
_FAULT_QUERY = "damaged defective faulty not working reason"

_GENERAL_POLICY_QUERY = "refund window non-refundable categories balance"

# Why no order is known yet, for which listing the customer's orders comes first.
_LISTING_FIRST = ("list", "which_order", "wrong_number", "bad_number", "no_ticket_order")


@dataclass
class Move:
    """The planner's next move: one tool call (`tool`, `arguments`) or the final answer
    (`tool` is None) with the question to ask, if any, and what else the answer must say."""

    tool: str | None = None
    arguments: dict = field(default_factory=dict)
    ask: str | None = None
    notes: list[str] = field(default_factory=list)
    order_id: str | None = None
    reasons: tuple[str, ...] = ()  # the reasons a "two_reasons" question offers


class OfflinePlanner:
    """Implements `agent.providers.llm.Provider` without a model."""

    name = "offline"
    model = "offline-planner-v2"
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
        move = plan(transcript, offered, may_call=may_call)
        tokens_in = transcript.chars_in // 4 + 1
        if move.tool is not None and may_call:
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
        answer = compose_answer(transcript, offered, move)
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


# --- The plan -------------------------------------------------------------------------------


@dataclass
class Work:
    """What one request needs, worked out from the agent's message (and, when the agent hands
    the customer's message over, from that)."""

    intent: Intent
    wants_refund: bool
    asks_status: bool
    asks_policy: bool
    asks_list: bool
    approve_command: bool
    delegated: bool  # the refund is the customer's, adopted because the agent said so
    customer_amounts: frozenset[Decimal] = frozenset()
    customer_names_other_order: bool = False


def read_work(transcript: Transcript) -> Work:
    intent = read_intent(transcript.request)
    approve_command = intent.asks_approval
    work = Work(
        intent=intent,
        wants_refund=intent.wants_refund,
        asks_status=intent.asks_status,
        asks_policy=intent.asks_policy and not approve_command,
        asks_list=intent.asks_list,
        approve_command=approve_command,
        delegated=False,
    )
    customer = customer_latest_asks(transcript)
    if customer is not None and customer.wants_refund:
        # What the customer asked for, to weigh the agent's amount against (never to act on).
        work.customer_amounts = customer.amounts
    if intent.defers_to_customer and customer is not None:
        # Questions the customer asks are answered with read tools; a refund the customer
        # asks for only when the agent's words hand it over ("handle", "propose what ...").
        work.asks_status = work.asks_status or customer.asks_status
        if customer.wants_refund and not asks_only_an_answer(intent.words):
            work.wants_refund = True
            work.delegated = not intent.wants_refund or not intent.reason
        others = customer_orders_named(transcript) - {transcript.ticket_order}
        work.customer_names_other_order = bool(others) or customer_doubts_order(transcript)
    return work


def plan(transcript: Transcript, offered: set[str], *, may_call: bool = True) -> Move:
    """The next step: find the order, read what the request needs, propose only what is
    established; else the final answer (with one question when something is missing)."""
    if not transcript.request:
        return Move()
    work = read_work(transcript)
    intent = work.intent
    if intent.closing and not (work.wants_refund or work.asks_status or work.asks_policy):
        return Move(notes=["closing"])
    if transcript.ticket_order_conflict and not intent.order_ids:
        return Move()
    may_call = may_call and len(transcript.calls) < MAX_CALLS_PER_TURN
    return _Step(transcript, offered, work, may_call=may_call).next()


class _Step:
    def __init__(self, transcript: Transcript, offered: set[str], work: Work, *, may_call: bool):
        self.t = transcript
        self.offered = offered
        self.may_call = may_call
        self.work = work
        self.intent = work.intent

    def can(self, tool: str) -> bool:
        return self.may_call and tool in self.offered

    def call(self, tool: str, **arguments) -> Move:
        return Move(tool=tool, arguments=arguments, order_id=arguments.get("order_id"))

    # -- which order -------------------------------------------------------------------------

    def next(self) -> Move:
        work, intent = self.work, self.intent
        listing = _attempted(self.t, "list_customer_orders")
        target, why = self.target(listing)
        if target is None:
            ticket = self.t.ticket_order
            unread = ticket is not None and _attempted(self.t, "get_order", ticket) is None
            if why == "mismatch" and unread and self.can("get_order"):
                return self.call("get_order", order_id=ticket)
            if listing is None and self.can("list_customer_orders") and why in _LISTING_FIRST:
                return self.call("list_customer_orders", limit=LIST_LIMIT)
            if self.should_search():
                return self.call("search_policies", query=policy_query(intent))
            if why == "policy" or (
                why in ("list", "no_ticket_order") and work.asks_list and not work.wants_refund
            ):
                return Move(notes=[why])
            return Move(ask=why)
        return self.for_order(target)

    def target(self, listing: Call | None) -> tuple[str | None, str]:
        """The order the request is about, or why none is established yet."""
        work, intent, t = self.work, self.intent, self.t
        if intent.order_ids:
            order_id = intent.order_ids[0]
            if any(call.order_id == order_id and _not_found(call) for call in t.calls):
                # A wrong or mistyped number: find the customer's orders and ask. Even a
                # number one slip from one of hers is a guess, never acted on.
                return None, "wrong_number"
            if self.names_another_orders_item(order_id):
                return None, "mismatch"
            return order_id, ""
        if intent.bad_order_refs:
            return None, "bad_number"
        named_other = work.delegated and work.customer_names_other_order
        doubted = work.wants_refund and customer_doubts_order(t) and not intent.reason
        must_list = work.asks_list or named_other or doubted
        other_item = self.names_other_item()
        if must_list or other_item:
            match = self.match_in_listing(listing) if listing else None
            if match:
                return match, ""
            if listing is None and self.can("list_customer_orders"):
                return None, "list"
            if other_item and not (not must_list and self.named_in_passing(listing)):
                # None of her orders holds what the agent named, or more than one does.
                return None, "which_item"
        if must_list:
            if work.wants_refund or named_other or doubted or intent.question:
                if work.asks_list and not work.wants_refund and not intent.things:
                    return None, "list"
                return None, "which_order"
            return None, "list"
        if self.policy_only():
            return None, "policy"
        if t.ticket_order is None:
            # No order on the ticket: an item named finds one in the listing, or nothing does.
            match = self.match_in_listing(listing) if listing and intent.things else None
            return (match, "") if match else (None, "no_ticket_order")
        return t.ticket_order, ""

    def named_in_passing(self, listing: Call | None) -> bool:
        """Things the agent named that are no product the vocabulary knows, that none of her
        orders holds, and that the sentences asking for something do not name or point back
        at ("the courier", "the glaze", "the neighbour"): the ticket's order is meant."""
        intent = self.intent
        result = (listing.ok_result if listing else None) or {}
        orders = [o for o in result.get("orders") or [] if isinstance(o, dict)]
        return (
            listing is not None
            and not any(is_product(thing) for thing in intent.things)
            and not any(self.holds(order, thing) for order in orders for thing in intent.things)
            and named_in_passing(intent.words)
        )

    def policy_only(self) -> bool:
        """A question about the policy in general, about no order in particular."""
        work, intent = self.work, self.intent
        return (
            work.asks_policy
            and not work.wants_refund
            and not work.asks_status
            and not intent.order_ids
            and not self.about_order()
        )

    def about_order(self) -> bool:
        """The words point at an order: its number, "her", "the mug"."""
        words = self.intent.words
        return bool(
            self.intent.order_ids or about_an_order(words) or things_named(words, pointed=True)
        )

    def holds(self, order: dict | None, thing: frozenset[str]) -> bool:
        """Whether an order (a get_order result or a listing's entry) holds the thing named."""
        return any(names_item(thing, name) for name in _item_names(order or {}))

    def names_another_orders_item(self, order_id: str) -> bool:
        """The agent names a product that the order they numbered does not hold but the
        ticket's order does: the number or the words are wrong, so ask."""
        ticket = self.t.ticket_order
        order = self.order_result(order_id)
        if order is None or order_id == ticket or ticket is None:
            return False
        things = self.intent.things
        if not things or any(self.holds(order, thing) for thing in things):
            return False
        ticket_order = self.order_result(ticket)
        if ticket_order is None:
            return True  # the ticket's order is looked up next, then compared
        return any(self.holds(ticket_order, thing) for thing in things)

    def names_other_item(self) -> bool:
        """The agent names things, none of which the ticket's order (once looked up) holds:
        the request may be about another of the customer's orders."""
        work, intent = self.work, self.intent
        if intent.order_ids or self.t.ticket_order is None or not intent.things:
            return False
        # Worth a listing where the wrong order would be acted on or answered about.
        if not (work.wants_refund or work.asks_status or work.asks_policy):
            return False
        ticket_order = self.order_result(self.t.ticket_order)
        if ticket_order is None:
            # A proposal or a question about the order looks the ticket's order up first
            # anyway (then compares); a status question, which needs no lookup, lists at once.
            return not (work.wants_refund or work.asks_policy)
        other = [thing for thing in intent.things if not self.holds(ticket_order, thing)]
        # Nothing of the ticket's order named, or another product beside it ("the mug and the
        # jacket"): the listing says which order is meant.
        return len(other) == len(intent.things) or any(is_product(thing) for thing in other)

    def match_in_listing(self, listing: Call) -> str | None:
        """The one listed order that holds what the agent named; None for none or several."""
        result = listing.ok_result or {}
        orders = [o for o in result.get("orders") or [] if isinstance(o, dict)]
        other = doubts_the_order(self.intent.words) or self.work.customer_names_other_order
        holding = [
            str(order.get("order_id"))
            for order in orders
            if not (other and order.get("order_id") == self.t.ticket_order)
            and any(self.holds(order, thing) for thing in self.intent.things)
        ]
        return holding[0] if len(holding) == 1 else None

    def order_result(self, order_id: str | None) -> dict | None:
        if order_id is None:
            return None
        call = _attempted(self.t, "get_order", order_id)
        order = call.ok_result if call else None
        if order is not None and str(order.get("order_id", order_id)) != order_id:
            return None
        return order

    # -- what the order needs ------------------------------------------------------------------

    def for_order(self, order_id: str) -> Move:
        work, intent, t = self.work, self.intent, self.t
        status_call = _attempted(t, "get_refund_status", order_id)
        wants_status = work.asks_status or work.approve_command
        if (
            wants_status
            and status_call is None
            and not work.wants_refund
            and self.can("get_refund_status")
        ):
            return self.call("get_refund_status", order_id=order_id)

        needs_order = work.wants_refund or not (
            wants_status or (work.asks_policy and not self.about_order())
        )
        order_call = _attempted(t, "get_order", order_id)
        if needs_order and order_call is None and self.can("get_order"):
            return self.call("get_order", order_id=order_id)
        order = self.order_result(order_id)
        if order_call is not None and order is None:
            return Move(order_id=order_id)
        if self.should_search():
            return self.call("search_policies", query=policy_query(intent))
        if not work.wants_refund:
            return Move(order_id=order_id, notes=self.approval_notes())
        return self.propose(order_id, order)

    def should_search(self) -> bool:
        """A policy question not yet looked up."""
        return (
            self.work.asks_policy
            and not _attempted(self.t, "search_policies")
            and self.can("search_policies")
        )

    def approval_notes(self) -> list[str]:
        return ["approval"] if self.work.approve_command else []

    def propose(self, order_id: str, order: dict | None) -> Move:
        work, intent, t = self.work, self.intent, self.t
        notes = self.approval_notes()
        reason = self.reason(order_id)
        if "create_refund" not in self.offered:
            if self.can("search_policies") and not _attempted(t, "search_policies"):
                return self.call("search_policies", query=_REASON_QUERY[reason.reason or "other"])
            return Move(order_id=order_id, notes=[*notes, "not_offered"])
        if order is None:
            return Move(order_id=order_id, notes=[*notes, "no_order"])
        refund_call = _attempted(t, "create_refund", order_id)
        if refund_call is not None:
            return self.after_proposal(order_id, refund_call, notes)

        if self.can("search_policies") and not _attempted(t, "search_policies"):
            query = _FAULT_QUERY if reason.faulty else _REASON_QUERY[reason.reason or "other"]
            if work.asks_policy:
                query = policy_query(intent)
            return self.call("search_policies", query=query)
        balance = _money(order.get("refundable_balance")) or Decimal("0.00")
        if balance <= 0:
            return Move(order_id=order_id, notes=[*notes, "nothing_left"])
        paid = _money(order.get("amount_paid")) or balance
        amount, question = self.amount(order_id, paid=paid, balance=balance)
        currency = str(order.get("currency") or "")
        if amount is not None and intent.currencies and currency not in intent.currencies:
            question = "currency"
        if question:
            return Move(order_id=order_id, ask=question, notes=notes)
        if len(reason.reasons) > 1:
            offered = tuple(sorted(reason.reasons))
            return Move(order_id=order_id, ask="two_reasons", notes=notes, reasons=offered)
        chosen = reason.reason
        if reason.faulty:
            chosen = "damaged" if _policy_counts_faults(t) else "other"
        if chosen is None:
            return Move(order_id=order_id, ask="reason", notes=notes)
        # Refunds already made or waiting on this order decide whether to propose at all.
        status_call = _attempted(t, "get_refund_status", order_id)
        if status_call is None and self.can("get_refund_status"):
            return self.call("get_refund_status", order_id=order_id)
        if _pending_requests(status_call) and not intent.change:
            return Move(order_id=order_id, notes=[*notes, "already_pending"])
        if not self.may_call:
            return Move(order_id=order_id, notes=[*notes, "out_of_steps"])
        return self.call(
            "create_refund",
            order_id=order_id,
            amount=amount,
            reason=chosen,
            explanation=_explanation(t.request, self.reason_note(order_id)),
        )

    def after_proposal(self, order_id: str, refund_call: Call, notes: list[str]) -> Move:
        t = self.t
        if _outcome_unknown(refund_call):
            index = t.calls.index(refund_call)
            checked = any(
                call.name == "get_refund_status" and call.order_id == order_id
                for call in t.calls[index + 1 :]
            )
            if not checked and self.can("get_refund_status"):
                return self.call("get_refund_status", order_id=order_id)
        return Move(order_id=order_id, notes=notes)

    def amount(
        self, order_id: str, *, paid: Decimal, balance: Decimal
    ) -> tuple[Decimal | None, str | None]:
        """The agent's amount, kept as typed; what "the rest", "in full" or "half" come to on
        this order; a question when the amount is not established."""
        work, intent = self.work, self.intent
        said = intent.amount_words
        if intent.amounts:
            if len(intent.amounts) > 1:
                return None, "two_amounts"
            if intent.amount is None or intent.amount <= 0:
                return None, "amount_zero"
            # "The rest" beside a number that is not what is left, and no word that the number
            # is a part ("a partial refund of 50; finance handles the rest"): which one is meant
            # is a guess, and a guess is never proposed.
            if said.remaining and not said.part and intent.amount != balance:
                return None, "amount_or_rest"
            return intent.amount, None
        if said.part and not said.remaining:
            return None, "amount"
        if said.half:
            # Half of what? Only one answer when nothing was refunded yet.
            return ((paid / 2).quantize(CENT), None) if paid == balance else (None, "half")
        if said.remaining:
            return balance, None
        if said.full and paid != balance:
            return None, "full_or_rest"
        customer = work.customer_amounts if self.customer_speaks_of(order_id) else frozenset()
        if work.delegated and customer and customer != {balance}:
            return None, "customer_amount"
        # The agent named no amount and the customer asked for part of the order's: which?
        if not said.full and any(0 < amount < balance for amount in customer):
            return None, "customer_amount"
        return balance, None

    def customer_speaks_of(self, order_id: str) -> bool:
        """Whether the customer's latest message is about this order only (the ticket's, and
        no other order or product named), so that an amount in it is an amount for it."""
        messages = customer_messages(self.t)
        if order_id != self.t.ticket_order or not messages:
            return False
        if customer_orders_named(self.t) - {order_id} or customer_doubts_order(self.t):
            return False
        order = self.order_result(order_id)
        return all(
            self.holds(order, thing) for thing in things_named(messages[-1]) if is_product(thing)
        )

    def reason(self, order_id: str) -> Reason:
        """What went wrong, from the agent's words; failing that, from what the customer
        wrote about the order."""
        if self.intent.described.said:
            return self.intent.described
        return self.customer_reason(order_id)

    def customer_reason(self, order_id: str) -> Reason:
        """What the customer wrote happened to the order: about another order than the
        ticket's, only sentences that name it count."""
        order = self.order_result(order_id) or {}
        return customer_reason(
            self.t,
            order_id,
            tuple(_item_names(order)),
            only_about=order_id != self.t.ticket_order,
        )

    def reason_note(self, order_id: str) -> str:
        if self.intent.described.said:
            return ""
        words = self.customer_reason(order_id).words
        return f" The customer wrote: {words}." if words else ""


def policy_query(intent: Intent) -> str:
    return policy_keywords(intent.words) or _GENERAL_POLICY_QUERY


def _not_found(call: Call) -> bool:
    return not call.ok and _error_of(call.result or {}).get("code") in ("NOT_FOUND",)


def _pending_requests(status_call: Call | None) -> list[dict]:
    result = (status_call.ok_result if status_call else None) or {}
    requests = result.get("refund_requests") or result.get("requests") or []
    return [
        item
        for item in requests
        if isinstance(item, dict)
        and item.get("status") in ("pending_approval", "approved", "executing", "outcome_unknown")
    ]


def _policy_counts_faults(transcript: Transcript) -> bool:
    """Whether a clause the search returned counts a fault in use as damage."""
    for call in transcript.calls:
        if call.name != "search_policies" or not call.ok:
            continue
        result = call.ok_result or {}
        clauses = result.get("clauses") or result.get("results") or []
        for clause in clauses if isinstance(clauses, list) else []:
            if isinstance(clause, dict) and counts_faults_as_damage(str(clause.get("text", ""))):
                return True
    return False


def _item_names(order: dict) -> list[str]:
    """The names of what an order holds: get_order's lines, or a listing's items."""
    names = [
        str(line.get("name", ""))
        for line in order.get("lines") or []
        if isinstance(line, dict) and line.get("name")
    ]
    return names + [str(item) for item in order.get("items") or [] if item]


def _explanation(request: str, note: str = "") -> str:
    quoted = request if len(request) <= 120 else request[:119].rstrip() + "…"
    return f'Support agent asked: "{quoted}"{note}'[:EXPLANATION_MAX_CHARS]
