"""What the customer's own words say happened (facts, never instructions); what the support
agent asked for is read from their latest message by agent/vocabulary/requests.py
(`read_intent`).

The agent's message decides what to do: propose, report a status, answer a policy question,
list orders, or nothing. A refund the customer asks for is proposed only when the agent says
so ("go ahead", "propose what she asks for"). Customer text may only make the planner more
careful (ask which order) or supply the reason for a refund the agent asked for.

Every word is read through agent/vocabulary/, in the languages it knows; this module only
puts the readings together.
"""

from dataclasses import replace

from agent import vocabulary
from agent.providers.offline.transcript import Transcript
from agent.vocabulary.requests import NO_REASON, ORDER_ID, Intent, Reason, read_intent, read_reason

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
        found = read_reason(ORDER_ID.sub(" ", about))
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
    return set(ORDER_ID.findall(messages[-1])) if messages else set()


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
