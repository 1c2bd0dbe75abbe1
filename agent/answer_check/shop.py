"""The customer's orders and refund requests as the claim check reads them, once per check
(`Shop`), and how a claim names an order: by its id, or by the name of something the customer
bought, loosely enough for a typo ("headphnes").

Apart from the judging, which only asks it which orders a claim is about and which requests
count.
"""

import re
from dataclasses import dataclass
from difflib import SequenceMatcher

from agent.answer_check.text import ORDER_ID
from agent.vocabulary.claims import GENERIC_NAME_WORDS, NAMES_NOTHING
from orders.models import Customer, Order, OrderLine
from refunds.models import RefundRequest
from tickets.models import Ticket

NAMES_NOTHING_WORD = re.compile(NAMES_NOTHING, re.IGNORECASE)
# How alike a word of a product name and a word a claim names it by must be (difflib's ratio):
# one typo in a word of five letters or more ("headphnes", "jackte").
NAME_LIKENESS = 0.8


def _name_pattern(name: str) -> re.Pattern | None:
    """How a product is named in a reply: its whole name, or its last word when that is
    distinctive ("headphones" for "wireless headphones"), singular or plural."""
    words = re.findall(r"[\w-]+", name.lower())
    if not words:
        return None
    options = [re.escape(name.lower())]
    head = words[-1].rstrip("s")
    if len(head) >= 3 and head not in GENERIC_NAME_WORDS:
        options.append(rf"{re.escape(head)}(?:s|es)?")
    return re.compile(rf"(?<!\w)(?:{'|'.join(options)})(?!\w)", re.IGNORECASE)


def _name_words(text: str) -> list[str]:
    return re.findall(r"[^\W\d_]+", text.lower())


def _alike(word: str, other: str) -> bool:
    """The same word, singular or plural, or one typo apart."""
    if word in (other, f"{other}s", f"{other}es") or other in (f"{word}s", f"{word}es"):
        return True
    if min(len(word), len(other)) < 4:
        return False
    return SequenceMatcher(None, word, other).ratio() >= NAME_LIKENESS


@dataclass
class Shop:
    """The customer's orders and requests, read once per check."""

    orders: dict[str, Order]
    names: list[tuple[re.Pattern, str]]
    # Order id -> the words of each of its lines' names.
    line_words: list[tuple[list[str], str]]
    by_order: dict[str, list[RefundRequest]]
    # What a claim naming no order is judged against: the ticket's requests, or, when it has
    # none, those of the customer's other tickets.
    unnamed: list[RefundRequest]

    @classmethod
    def load(cls, *, ticket, customer: Customer | None) -> "Shop":
        customer = customer or ticket.customer
        orders = {o.order_id: o for o in Order.objects.filter(customer=customer)}
        names = []
        line_words = []
        lines = OrderLine.objects.filter(order__customer=customer).select_related("order")
        for line in lines:
            pattern = _name_pattern(line.name)
            if pattern is not None:
                names.append((pattern, line.order.order_id))
            line_words.append((_name_words(line.name), line.order.order_id))
        requests = list(
            RefundRequest.objects.filter(order__customer=customer)
            .select_related("order")
            .order_by("created_at", "pk")
        )
        by_order: dict[str, list[RefundRequest]] = {}
        for request in requests:
            by_order.setdefault(request.order.order_id, []).append(request)
        tickets = set(Ticket.objects.filter(customer=customer).values_list("pk", flat=True))
        unnamed = [r for r in requests if r.ticket_id == ticket.pk] or [
            r for r in requests if r.ticket_id in tickets
        ]
        return cls(orders, names, line_words, by_order, unnamed)

    def named_orders(self, text: str) -> list[str]:
        named = [found for found in ORDER_ID.findall(text)]
        for pattern, order_id in self.names:
            if pattern.search(text):
                named.append(order_id)
        return list(dict.fromkeys(named))

    def resolve(self, name: str) -> tuple[list[str], str | None] | None:
        """The customer's orders that `name` (an order id, or a product as a model named it)
        is about, and the id it gives when that is not one of theirs; None when it names no
        order and no product ("your order", "the refund")."""
        ids = ORDER_ID.findall(name)
        if ids:
            known = [order_id for order_id in ids if order_id in self.orders]
            return known, None if known else ids[0]
        words = [
            w
            for w in _name_words(name)
            if not NAMES_NOTHING_WORD.fullmatch(w) and w not in GENERIC_NAME_WORDS
        ]
        if not words:
            return None
        head = words[-1]
        phrase = " ".join(words)
        matched = [
            order_id
            for line, order_id in self.line_words
            if any(_alike(head, word) for word in line if word not in GENERIC_NAME_WORDS)
            or _alike(phrase, " ".join(line))
        ]
        return list(dict.fromkeys(matched)), None
