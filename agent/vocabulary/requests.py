"""What a message asks, put together from the vocabulary's readings: the reason its words give
(`read_reason`) and the request read whole (`read_intent`: a refund to propose, a status, a
policy question, a listing, the amounts, the order ids). The offline planner decides from it,
and small-model mode (agent/runtime/small_model.py) reads from it whether a request needs the
desk's data and whether it asks clearly for a refund: the same reading in one place, apart
from the planner, which is a provider like any other.

Only the readings of other modules of this package are combined here; no word list.
"""

import re
from dataclasses import dataclass
from decimal import Decimal

from agent.vocabulary.amounts import AmountWords, amount_words, amounts_named, currencies_named
from agent.vocabulary.intent import asks_for_refund, is_question, relays_wish
from agent.vocabulary.products import things_named
from agent.vocabulary.reading import sentences
from agent.vocabulary.reasons import fault_in_use, reason_words, reasons_described, reasons_named
from agent.vocabulary.topics import (
    asks_about_refunds,
    asks_approval,
    asks_balance,
    asks_change,
    asks_listing,
    asks_status,
    bad_order_refs,
    defers_to_customer,
    is_chinese,
    is_closing,
    names_policy,
)

# Digits not glued to other digits or to a decimal part: "202610110087." is an order id.
ORDER_ID = re.compile(r"(?<!\d)(?<!\d[.,])\d{8,20}(?!\d)(?![.,]\d)")


@dataclass(frozen=True)
class Reason:
    """What words say happened, in the policy's vocabulary: every reason they describe (two
    leave the choice open), or a fault in use whose reason the policy decides."""

    reasons: frozenset[str]
    faulty: bool
    words: str

    @property
    def reason(self) -> str | None:
        """The one reason the words give; None for none or several."""
        return next(iter(self.reasons)) if len(self.reasons) == 1 else None

    @property
    def said(self) -> bool:
        return bool(self.reasons) or self.faulty


NO_REASON = Reason(frozenset(), False, "")


@dataclass(frozen=True)
class Intent:
    wants_refund: bool  # the agent tells the assistant to propose a refund
    defers_to_customer: bool  # "propose what she asks for", "handle her message"
    asks_status: bool  # refund requests and their state
    asks_policy: bool  # a question the policy answers
    asks_list: bool  # the customer's orders, or an order found by description
    asks_approval: bool  # tells the assistant to approve a refund: only a reviewer can
    closing: bool  # "thanks, that's all"
    question: bool  # the message asks something rather than saying what to do
    described: Reason  # what the agent's words say happened
    amounts: frozenset[Decimal]  # every amount the agent named
    currencies: frozenset[str]  # the currencies they were written in ("¥": CNY and JPY)
    amount_words: AmountWords  # "in full", "half", "the rest", "a bit"
    change: bool  # change a pending proposal rather than leave it
    order_ids: tuple[str, ...]
    bad_order_refs: tuple[str, ...]
    chinese: bool
    things: frozenset[frozenset[str]]  # what the words name that may be an order's item
    words: str  # the message without order ids

    @property
    def reason(self) -> str | None:
        return self.described.reason

    @property
    def amount(self) -> Decimal | None:
        """The one amount named; None for none or several."""
        return next(iter(self.amounts)) if len(self.amounts) == 1 else None

    @property
    def amount_given(self) -> bool:
        """An amount was typed (even 0.00, or two of them)."""
        return bool(self.amounts)

    @property
    def full(self) -> bool:
        return self.amount_words.full

    @property
    def remaining(self) -> bool:
        return self.amount_words.remaining


def read_reason(text: str) -> Reason:
    """What the words say happened, in the policy's reason vocabulary; a reason named as such
    ("as wrong item") before one described."""
    reasons = reasons_named(text) or reasons_described(text)
    faulty = not reasons and fault_in_use(text)
    if not reasons and not faulty:
        return NO_REASON
    return Reason(frozenset(reasons), faulty, reason_words(text))


def read_intent(request: str) -> Intent:
    order_ids = tuple(dict.fromkeys(ORDER_ID.findall(request)))
    words = ORDER_ID.sub(" ", request)
    wants_refund = asks_for_refund(words)
    question = not wants_refund and any(is_question(sentence) for sentence in sentences(words))
    # A refund the agent only passes on ("Li also wants a refund") is weighed against the
    # policy, not proposed.
    weighs_policy = names_policy(words) or asks_about_refunds(words) or relays_wish(words)
    return Intent(
        wants_refund=wants_refund,
        defers_to_customer=defers_to_customer(words),
        asks_status=asks_status(words),
        asks_policy=weighs_policy and (question or not wants_refund) and not asks_balance(words),
        asks_list=asks_listing(words),
        # "Who has to approve it?" is a policy question; "approve it now" asks for an approval.
        asks_approval=asks_approval(words),
        closing=is_closing(request),  # an order number is more than closing words
        question=question,
        described=read_reason(words),
        amounts=frozenset(amounts_named(words)),
        currencies=frozenset(currencies_named(words)),
        amount_words=amount_words(words),
        change=asks_change(words),
        order_ids=order_ids,
        bad_order_refs=tuple(bad_order_refs(words)),
        chinese=is_chinese(request),
        things=things_named(words),
        words=words,
    )
