# ruff: noqa: RUF001 (Chinese and typographic punctuation is what these texts are written in)
"""The recall-first reader (`lexicon_statements`): where no model answered, the claims a
public reply or a model's draft may make, read clause by clause by the cues of
agent/vocabulary/claims.py's LEXICON, and the customer's own figures it counts as money (the
package's docstring says which texts it reads and what takes a claim back).

Apart from the precise reader: it reads only the sentences that one found no claim in, by
other words, and errs toward finding a claim.
"""

import re
from dataclasses import dataclass
from decimal import Decimal
from functools import cache

from agent.answer_check.text import QUESTION_END, SENTENCE_END, Statement
from agent.vocabulary.claims import (
    AMOUNT,
    APPROVED,
    CLAUSE_JOINS,
    CONTRACTED_DONE,
    CONTRACTED_HEDGE,
    LEXICON,
    ON_ITS_WAY,
    REFUNDED,
    Lexicon,
)
from orders.models import Customer, Order
from refunds.models import RefundRequest


@dataclass(frozen=True)
class _Lexicon:
    cues: tuple[tuple[str, re.Pattern], ...]
    near_money: re.Pattern
    hedge: re.Pattern
    process: re.Pattern
    paper: re.Pattern
    other: re.Pattern
    opening: re.Pattern


def _words(text: str, spaced: bool, *, stems: bool = False) -> str:
    """`text` at word starts (and ends, unless `stems`) where words are spaced."""
    if not spaced:
        return f"(?:{text})"
    return rf"(?<!\w)(?:{text})" + ("" if stems else r"(?!\w)")


@cache
def _lexicons() -> tuple[tuple[_Lexicon, ...], re.Pattern, re.Pattern]:
    """Each language's reader, the money words of every language, and the clause breaks."""

    def compiled(words: Lexicon) -> _Lexicon:
        sp = words.spaced
        done = _words(words.done, sp) + (f"|{CONTRACTED_DONE}" if sp else "")
        hedge = _words(words.hedge, sp) + (f"|{CONTRACTED_HEDGE}" if sp else "")
        return _Lexicon(
            cues=(
                (REFUNDED, re.compile(done, re.IGNORECASE)),
                (ON_ITS_WAY, re.compile(_words(words.underway, sp), re.IGNORECASE)),
                (APPROVED, re.compile(_words(words.approved, sp), re.IGNORECASE)),
            ),
            near_money=re.compile(_words(words.near_money, sp), re.IGNORECASE),
            hedge=re.compile(hedge, re.IGNORECASE),
            process=re.compile(_words(words.process, sp), re.IGNORECASE),
            paper=re.compile(_words(words.paper, sp), re.IGNORECASE),
            other=re.compile(_words(words.other, sp), re.IGNORECASE),
            opening=re.compile(_words(words.opening, sp), re.IGNORECASE),
        )

    money = "|".join(_words(words.money, words.spaced, stems=True) for words in LEXICON.values())
    breaks = re.compile(rf",(?!\d)|[;:，；：、]|\s[-–—]+\s|\s(?:{CLAUSE_JOINS})\s", re.IGNORECASE)
    return (
        tuple(compiled(words) for words in LEXICON.values()),
        re.compile(f"{money}|{AMOUNT}", re.IGNORECASE),
        breaks,
    )


def _lexicon_kind(clause: str, lexicons: tuple[_Lexicon, ...], money: bool) -> str | None:
    """The strongest claim a clause's cues make, None when it makes none or it is taken back.
    `money`: the clause names money."""
    kinds = set()
    for lexicon in lexicons:
        if lexicon.hedge.search(clause) or lexicon.paper.search(clause):
            return None
        for kind, cue in lexicon.cues:
            if cue.search(clause):
                kinds.add(kind)
        if money and lexicon.near_money.search(clause):
            kinds.add(REFUNDED)
    if any(lexicon.process.search(clause) for lexicon in lexicons):
        kinds &= {APPROVED}
    for kind in (REFUNDED, ON_ITS_WAY, APPROVED):
        if kind in kinds:
            return kind
    return None


def lexicon_statements(
    text: str,
    *,
    skip: set[str] | frozenset[str] = frozenset(),
    amounts: set[Decimal] | frozenset[Decimal] = frozenset(),
) -> list[Statement]:
    """The claims the recall-first reader finds in `text` (see the module's docstring), in the
    sentences not in `skip`. `Statement.clause` is the clause with the cue, `before` the
    sentence before it. `amounts`: the customer's own figures (what they paid, what was
    proposed), which are money in the text even without a currency ("your 129 is back")."""
    lexicons, money, breaks = _lexicons()
    if amounts:
        money = re.compile(f"{money.pattern}|{_figures(amounts)}", re.IGNORECASE)
    sentences = [s.strip() for s in SENTENCE_END.split(text or "") if s.strip()]
    found: list[Statement] = []
    unhedged: list[Statement] = []
    for index, sentence in enumerate(sentences):
        if sentence in skip or QUESTION_END.search(sentence):
            continue
        clauses = [c.strip() for c in breaks.split(sentence) if c and c.strip()]
        if not clauses or any(lexicon.opening.search(clauses[0]) for lexicon in lexicons):
            continue
        previous = sentences[index - 1] if index else ""
        for clause in clauses:
            names_money = bool(money.search(clause))
            kind = _lexicon_kind(clause, lexicons, names_money)
            if kind is None:
                continue
            if not names_money:
                if any(lexicon.other.search(clause) for lexicon in lexicons):
                    continue
                if not (money.search(sentence) or money.search(previous)):
                    continue
            statement = Statement(kind, sentence, clause, previous)
            if statement not in found:
                found.append(statement)
        bare = _unhedged_money(sentence, lexicons, money)
        if bare is not None:
            unhedged.append(Statement(APPROVED, sentence, bare, previous))
    # A text that makes a claim some reader found is judged by it; one that makes none, by
    # what it says of the customer's money unhedged.
    return found or ([] if skip else unhedged)


def _figures(amounts: set[Decimal] | frozenset[Decimal]) -> str:
    """`amounts` as they are written: "129", "129.00", "129,00" (not part of a longer number)."""
    written = set()
    for amount in amounts:
        whole, _, cents = f"{amount:.2f}".partition(".")
        written.add(rf"{whole}[.,]{cents}")
        if cents == "00":
            written.add(whole)
    return rf"(?<![\d.,])(?:{'|'.join(sorted(written))})(?![\d]|[.,]\d)"


def customer_figures(customer: Customer) -> set[Decimal]:
    """What the customer paid for their orders and what their refund requests are for."""
    paid = Order.objects.filter(customer=customer).values_list("amount_paid", flat=True)
    asked = RefundRequest.objects.filter(order__customer=customer).values_list("amount", flat=True)
    return {*paid, *asked}


def _unhedged_money(sentence: str, lexicons: tuple[_Lexicon, ...], money: re.Pattern) -> str | None:
    """A sentence about the customer's refund or money with no cue and nothing that takes a
    claim back ("Regarding your 129.00 CNY refund for the mug: all good."): recall first, it
    is read as the weakest claim, that the refund was approved. Its words, or None when it
    speaks of no money or a hedge, a request or review, a document or goods stand in it."""
    if not money.search(sentence):
        return None
    for lexicon in lexicons:
        for words in (lexicon.hedge, lexicon.process, lexicon.paper, lexicon.other):
            if words.search(sentence):
                return None
    return sentence
