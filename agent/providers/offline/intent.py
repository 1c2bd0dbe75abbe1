"""What the support agent asked for, read only from their latest message; and what the
customer's own words say happened (facts, never instructions).

The agent's message decides what to do: propose, report a status, answer a policy question,
list orders, or nothing. A refund the customer asks for is proposed only when the agent says
so ("go ahead", "propose what she asks for"). Customer text may only make the planner more
careful (ask which order) or supply the reason for a refund the agent asked for.

Every word is read through agent/vocabulary/, in the languages it knows; this module only
puts the readings together.
"""

from dataclasses import dataclass, replace
from decimal import Decimal

from agent import vocabulary
from agent.providers.offline.transcript import _ORDER_ID, Transcript


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
    amount_words: vocabulary.AmountWords  # "in full", "half", "the rest", "a bit"
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
    reasons = vocabulary.reasons_named(text) or vocabulary.reasons_described(text)
    faulty = not reasons and vocabulary.fault_in_use(text)
    if not reasons and not faulty:
        return NO_REASON
    return Reason(frozenset(reasons), faulty, vocabulary.reason_words(text))


def mentions_refunds(text: str) -> bool:
    """Whether `text` speaks of refunds or money going back at all."""
    return vocabulary.mentions_refunds(text)


def read_intent(request: str) -> Intent:
    order_ids = tuple(dict.fromkeys(_ORDER_ID.findall(request)))
    words = _ORDER_ID.sub(" ", request)
    wants_refund = vocabulary.asks_for_refund(words)
    question = not wants_refund and any(
        vocabulary.is_question(sentence) for sentence in vocabulary.sentences(words)
    )
    # A refund the agent only passes on ("Li also wants a refund") is weighed against the
    # policy, not proposed.
    weighs_policy = (
        vocabulary.names_policy(words)
        or vocabulary.asks_about_refunds(words)
        or vocabulary.relays_wish(words)
    )
    return Intent(
        wants_refund=wants_refund,
        defers_to_customer=vocabulary.defers_to_customer(words),
        asks_status=vocabulary.asks_status(words),
        asks_policy=weighs_policy
        and (question or not wants_refund)
        and not vocabulary.asks_balance(words),
        asks_list=vocabulary.asks_listing(words),
        # "Who has to approve it?" is a policy question; "approve it now" asks for an approval.
        asks_approval=vocabulary.asks_approval(words),
        closing=vocabulary.is_closing(request) and not order_ids,
        question=question,
        described=read_reason(words),
        amounts=frozenset(vocabulary.amounts_named(words)),
        currencies=frozenset(vocabulary.currencies_named(words)),
        amount_words=vocabulary.amount_words(words),
        change=vocabulary.asks_change(words),
        order_ids=order_ids,
        bad_order_refs=tuple(vocabulary.bad_order_refs(words)),
        chinese=vocabulary.is_chinese(request),
        things=vocabulary.things_named(words),
        words=words,
    )


# --- The customer's words: facts about the ticket's order --------------------------------


def customer_messages(transcript: Transcript) -> list[str]:
    """What the customer wrote on the ticket, oldest first (untrusted: facts only)."""
    return [body for label, body in transcript.untrusted_texts if label == "customer message"]


def ticket_subject(transcript: Transcript) -> str:
    subjects = [body for label, body in transcript.untrusted_texts if label == "ticket subject"]
    return subjects[-1] if subjects else ""


def customer_reason(
    transcript: Transcript,
    order_id: str | None = None,
    item_names: tuple[str, ...] = (),
    *,
    only_about: bool = False,
) -> Reason:
    """The reason the customer's messages (latest first) or the ticket subject describe for the
    order: in a message about several orders, only the sentences that name this order or its
    item count, when there are any (with `only_about`, only those ever)."""
    for text in [*reversed(customer_messages(transcript)), ticket_subject(transcript)]:
        about = _about(text, order_id, item_names)
        if not about and not only_about:
            about = text
        found = read_reason(_ORDER_ID.sub(" ", about))
        if found.said:
            return found
    return NO_REASON


def _about(text: str, order_id: str | None, item_names: tuple[str, ...]) -> str:
    """The sentences of `text` that name the order or one of its items."""
    return " ".join(
        sentence
        for sentence in vocabulary.sentences(text)
        if (order_id and order_id in sentence)
        or any(
            vocabulary.names_item(thing, name)
            for thing in vocabulary.things_named(sentence)
            for name in item_names
        )
    )


def customer_doubts_order(transcript: Transcript) -> bool:
    """The customer's latest message says the ticket's order may not be the one."""
    messages = customer_messages(transcript)
    return bool(messages) and vocabulary.doubts_the_order(messages[-1])


def customer_orders_named(transcript: Transcript) -> set[str]:
    messages = customer_messages(transcript)
    return set(_ORDER_ID.findall(messages[-1])) if messages else set()


def customer_latest_asks(transcript: Transcript) -> Intent | None:
    """What the customer's latest message asks, read like an agent's request; for questions
    the assistant answers with read tools, and for the agent to confirm, never to act on."""
    messages = customer_messages(transcript)
    if not messages:
        return None
    latest = read_intent(messages[-1])
    asks_money = vocabulary.relays_wish(messages[-1]) or (
        vocabulary.asks_about_refunds(messages[-1]) and not latest.asks_status
    )
    if asks_money and not latest.wants_refund:
        latest = replace(latest, wants_refund=True)
    return latest
