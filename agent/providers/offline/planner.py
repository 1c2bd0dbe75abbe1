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

It works like a careful agent (DESIGN §16): it looks the order up before proposing, checks
the refund requests already on it, asks one question when the order, the amount or the
reason is not established, and proposes nothing then.
"""

import hashlib
import json
import re
from dataclasses import dataclass, field
from decimal import Decimal

from agent.providers.llm import ModelReply, TextSink
from agent.providers.offline.answer import compose_answer
from agent.providers.offline.intent import (
    Intent,
    customer_doubts_order,
    customer_latest_asks,
    customer_messages,
    customer_orders_named,
    customer_reason,
    read_intent,
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
from agent.vocabulary import policy_keywords

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

# Words that say which order a question is about (not a question about refunds in general).
_SPECIFIC = re.compile(
    r"\b(?:she|her|he|his|they|their|this (?:order|customer)|the order|the customer'?s"
    r"|the \w+ order|its)\b|她|他|这个订单|这单",
    re.I,
)
_ANSWER_ONLY = re.compile(
    r"\b(?:answer|reply|respond|summari[sz]e|explain|what does|tell me what|draft)\b"
    r"|回答|回复|总结",
    re.I,
)
_DETERMINER_PHRASE = re.compile(
    # A lookahead, so that "the status of the blender refund" yields both phrases.
    r"(?:\b(?:the|her|his|their|my|a|an|that|this|your|our)|'s)\s+"
    r"(?=(?P<words>[a-z-]+(?:\s+[a-z-]+){0,2}))",
    re.I,
)
# Nouns that name no product: a phrase ending in one of these never sends the planner
# looking for another order.
_NOT_PRODUCTS_WORDS = """
order orders refund refunds customer customers money balance amount rest item items
thing things one damage problem issue trouble question message ticket policy reason
request proposal status price full partial window limit reviewer supervisor agent record
note email replacement discount code password address weather poem shipping box parcel
package photo delivery courier time week day days month lid screen part zip earbud
charger cable battery handle colour color size shade design model version gesture
goodwill courtesy difference compensation history state account number table row rows
database data case clause review approval decision fee cost total payment way thread
latest first last other same whole remaining mind earlier right left new old end bell
reply draft store shop desk system list refundable rules rule sort something bit trouble
inbox chat conversation situation fault defect receipt invoice tracking link attention
next previous broken cracked damaged faulty defective missing wrong full partial entire
whole same earlier latest second third another money-back half exact exactly new
customer's agent's desk's it's that's refunds requests proposals different
same similar other another small big large new used original own
"""
_NOT_PRODUCTS = frozenset(_NOT_PRODUCTS_WORDS.split())
_STOP_WORDS = """
the and for with her his their she him they this that what which from have has had was
were are is been can could would will should about also too one all any our your you not
but just please order orders refund customer bought ordered asks says said still more
some than then them there here into onto over under in on at to of by as or if so it its
is be who how why when where
"""
_STOP = frozenset(_STOP_WORDS.split())


@dataclass
class Move:
    """The planner's next move: one tool call (`tool`, `arguments`) or the final answer
    (`tool` is None) with the question to ask, if any, and what else the answer must say."""

    tool: str | None = None
    arguments: dict = field(default_factory=dict)
    ask: str | None = None
    notes: list[str] = field(default_factory=list)
    order_id: str | None = None


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
    customer_amount: Decimal | None = None
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
    if intent.defers_to_customer:
        customer = customer_latest_asks(transcript)
        if customer is not None:
            # Questions the customer asks are answered with read tools; a refund the customer
            # asks for only when the agent's words hand it over ("handle", "propose what ...").
            work.asks_status = work.asks_status or customer.asks_status
            if customer.wants_refund and not _ANSWER_ONLY.search(intent.words):
                work.wants_refund = True
                work.delegated = not intent.wants_refund or not intent.reason
                work.customer_amount = customer.amount
            named = customer_orders_named(transcript)
            others = named - {transcript.ticket_order}
            latest = customer_messages(transcript)[-1]
            work.customer_names_other_order = bool(others) or customer_doubts_order(transcript)
            if not intent.wants_refund and customer.asks_list and "other" in latest.lower():
                work.customer_names_other_order = True
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
        work, intent, t = self.work, self.intent, self.t
        if intent.order_ids:
            order_id = intent.order_ids[0]
            if any(call.order_id == order_id and _not_found(call) for call in t.calls):
                # A wrong or mistyped number: find the customer's orders and ask.
                return None, "wrong_number"
            if self.names_another_orders_item(order_id):
                return None, "mismatch"
            return order_id, ""
        if intent.bad_order_refs:
            return None, "bad_number"
        named_other = work.delegated and work.customer_names_other_order
        doubted = work.wants_refund and customer_doubts_order(t) and not intent.reason
        must_list = work.asks_list or named_other or doubted
        if must_list or self.names_other_item():
            match = self.match_in_listing(listing) if listing else None
            if match:
                return match, ""
            if listing is None and self.can("list_customer_orders"):
                return None, "list"
        if must_list:
            if work.wants_refund or named_other or doubted or intent.question:
                if work.asks_list and not work.wants_refund and not self.item_words():
                    return None, "list"
                return None, "which_order"
            return None, "list"
        if self.policy_only():
            return None, "policy"
        if t.ticket_order is None:
            return None, "no_ticket_order"
        return t.ticket_order, ""

    def policy_only(self) -> bool:
        """A question about the policy in general, about no order in particular."""
        work, intent = self.work, self.intent
        return (
            work.asks_policy
            and not work.wants_refund
            and not work.asks_status
            and not intent.order_ids
            and not _SPECIFIC.search(intent.words)
            and not self.item_words(with_ticket=True)
        )

    def item_phrases(self) -> list[set[str]]:
        """Product words the agent used, one set per phrase ("the rain jacket")."""
        phrases = []
        for match in _DETERMINER_PHRASE.finditer(self.intent.words):
            words = []
            for word in match.group("words").lower().split():
                if word in _STOP:
                    break
                words.append(word)
            content = {
                word
                for word in words
                if word.isalpha() and len(word) >= 3 and word not in _NOT_PRODUCTS
            }
            if content:
                phrases.append(content)
        return phrases

    def item_words(self, with_ticket: bool = False) -> set[str]:
        """Product words of the phrases that do not name the ticket's order's item (all of
        them with `with_ticket`)."""
        found: set[str] = set()
        for phrase in self.item_phrases():
            if with_ticket or not any(self.ticket_item_has(word) for word in phrase):
                found |= phrase
        return found

    def ticket_item_has(self, word: str) -> bool:
        order = self.order_result(self.t.ticket_order) if self.t.ticket_order else None
        names = " ".join(
            str(line.get("name", "")) + " " + str(line.get("category", ""))
            for line in (order or {}).get("lines") or []
            if isinstance(line, dict)
        ).lower()
        return _singular(word) in {_singular(w) for w in re.findall(r"[a-z]+", names)}

    def names_another_orders_item(self, order_id: str) -> bool:
        """The agent names a product that the order they numbered does not hold but the
        ticket's order does: the number or the words are wrong, so ask."""
        order = self.order_result(order_id)
        if order is None or order_id == self.t.ticket_order or self.t.ticket_order is None:
            return False
        own = self.item_names(order)
        phrases = self.item_phrases()
        if not phrases or any(_singular(word) in own for phrase in phrases for word in phrase):
            return False
        ticket = self.item_names(self.order_result(self.t.ticket_order) or {})
        if not ticket:
            return True  # the ticket's order is looked up next, then compared
        return any(_singular(word) in ticket for phrase in phrases for word in phrase)

    @staticmethod
    def item_names(order: dict) -> set[str]:
        names = " ".join(
            str(line.get("name", "")) + " " + str(line.get("category", ""))
            for line in order.get("lines") or []
            if isinstance(line, dict)
        ).lower()
        return {_singular(word) for word in re.findall(r"[a-z]+", names)}

    def names_other_item(self) -> bool:
        """The agent names a product, and nothing of what the ticket's order (once looked up)
        holds: the request may be about another of the customer's orders."""
        if self.intent.order_ids or self.t.ticket_order is None:
            return False
        # Worth a listing where the wrong order would be acted on or answered about.
        if not (self.work.wants_refund or self.work.asks_status or self.work.asks_policy):
            return False
        if self.order_result(self.t.ticket_order) is None:
            # A proposal or a question about the order looks the ticket's order up first
            # anyway (then compares); a status question, which needs no lookup, lists at once.
            only_status = not (self.work.wants_refund or self.work.asks_policy)
            return only_status and bool(self.item_words(with_ticket=True))
        words = re.findall(r"[a-z]+", self.intent.words.lower())
        if any(self.ticket_item_has(word) for word in words if len(word) >= 3):
            return False
        return bool(self.item_words(with_ticket=True))

    def match_in_listing(self, listing: Call) -> str | None:
        result = listing.ok_result or {}
        orders = [o for o in result.get("orders") or [] if isinstance(o, dict)]
        wanted = {_singular(word) for word in self.item_words(with_ticket=True)}
        if not wanted:
            return None
        other = "other" in self.intent.words.lower() or self.work.customer_names_other_order
        scored = []
        for order in orders:
            if other and order.get("order_id") == self.t.ticket_order:
                continue
            names = " ".join(str(item) for item in order.get("items") or []).lower()
            have = {_singular(word) for word in re.findall(r"[a-z]+", names)}
            score = len(wanted & have)
            if score:
                scored.append((score, str(order.get("order_id"))))
        scored.sort(reverse=True)
        if len(scored) == 1 or (len(scored) > 1 and scored[0][0] > scored[1][0]):
            return scored[0][1]
        return None

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

    def about_order(self) -> bool:
        return bool(
            self.intent.order_ids
            or _SPECIFIC.search(self.intent.words)
            or self.item_words(with_ticket=True)
        )

    def approval_notes(self) -> list[str]:
        return ["approval"] if self.work.approve_command else []

    def propose(self, order_id: str, order: dict | None) -> Move:
        work, intent, t = self.work, self.intent, self.t
        notes = self.approval_notes()
        if "create_refund" not in self.offered:
            if self.can("search_policies") and not _attempted(t, "search_policies"):
                return self.call(
                    "search_policies", query=_REASON_QUERY[self.reason()[0] or "other"]
                )
            return Move(order_id=order_id, notes=[*notes, "not_offered"])
        if order is None:
            return Move(order_id=order_id, notes=[*notes, "no_order"])
        refund_call = _attempted(t, "create_refund", order_id)
        if refund_call is not None:
            return self.after_proposal(order_id, refund_call, notes)

        reason, faulty = self.reason()
        if self.can("search_policies") and not _attempted(t, "search_policies"):
            query = _FAULT_QUERY if faulty else _REASON_QUERY[reason or "other"]
            if work.asks_policy:
                query = policy_query(intent)
            return self.call("search_policies", query=query)
        if faulty:
            reason = "damaged" if _policy_counts_faults(t) else "other"
        balance = _money(order.get("refundable_balance")) or Decimal("0.00")
        if balance <= 0:
            return Move(order_id=order_id, notes=[*notes, "nothing_left"])
        amount, question = self.amount(balance)
        if question:
            return Move(order_id=order_id, ask=question, notes=notes)
        if reason is None:
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
            reason=reason,
            explanation=_explanation(t.request, self.reason_note()),
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

    def amount(self, balance: Decimal) -> tuple[Decimal | None, str | None]:
        """The agent's amount, kept as typed; the balance for "the rest" or a whole refund;
        a question when the amount is not established."""
        work, intent = self.work, self.intent
        if intent.amount_given:
            if intent.amount is None or intent.amount <= 0:
                return None, "amount_zero"
            return intent.amount, None
        if intent.partial_without_amount:
            return None, "amount"
        if work.delegated and work.customer_amount is not None and work.customer_amount != balance:
            return None, "customer_amount"
        return balance, None

    def reason(self) -> tuple[str | None, bool]:
        """The reason from the agent's words; failing that, from what the customer wrote
        about the ticket's order. (reason, a fault in use whose reason the policy decides)."""
        intent = self.intent
        if intent.reason or intent.faulty:
            return intent.reason, intent.faulty
        found = self.customer_reason()
        return found.reason, found.faulty

    def customer_reason(self):
        """What the customer wrote happened to the ticket's order."""
        order_id = self.t.ticket_order
        order = self.order_result(order_id) or {}
        return customer_reason(self.t, order_id, frozenset(self.item_names(order)) - _NOT_PRODUCTS)

    def reason_note(self) -> str:
        if self.intent.reason or self.intent.faulty:
            return ""
        words = self.customer_reason().words
        return f" The customer wrote: {words}." if words else ""


def policy_query(intent: Intent) -> str:
    return policy_keywords(intent.words) or _GENERAL_POLICY_QUERY


def _singular(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


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


_FAULT_IS_DAMAGE = re.compile(
    r"damage[^.]{0,80}\b(?:defect\w*|fault\w*|malfunction\w*|stops? working|stopped working"
    r"|not working|does not work|fails? to work)\b|\b(?:defect\w*|fault\w*|malfunction\w*"
    r"|stops? working|stopped working|not working)[^.]{0,80}\bdamage",
    re.I,
)


def _policy_counts_faults(transcript: Transcript) -> bool:
    """Whether a clause the search returned counts a fault in use as damage."""
    for call in transcript.calls:
        if call.name != "search_policies" or not call.ok:
            continue
        result = call.ok_result or {}
        clauses = result.get("clauses") or result.get("results") or []
        for clause in clauses if isinstance(clauses, list) else []:
            if isinstance(clause, dict) and _FAULT_IS_DAMAGE.search(str(clause.get("text", ""))):
                return True
    return False


def _explanation(request: str, note: str = "") -> str:
    quoted = request if len(request) <= 120 else request[:119].rstrip() + "…"
    return f'Support agent asked: "{quoted}"{note}'[:EXPLANATION_MAX_CHARS]
