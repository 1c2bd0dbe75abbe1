# Over 400 lines: finding claims in a text (two readers and the model's reading) and judging
# each against the refunds belong together; the words of each language are data in
# agent/vocabulary/claims.py.
# ruff: noqa: RUF001 (Chinese and typographic punctuation is what these texts are written in)
"""The one claim check (DESIGN §13, §18): what a text tells the customer about their refunds,
judged against the refunds that exist. It reads the assistant's answers, the customer drafts
and the replies people send.

A claim is a statement that money was refunded, paid back, processed, issued, sent or completed
(`refunded`), is on its way (`on_its_way`), that a refund was approved (`approved`) or, read by
a model only, asked for (`requested`). Three readers find them:

* **The model** (agent/claim_reading.py), when one is configured: it reads the text's meaning,
  in any language, and names the order or product each claim is about.
* **The precise reader** (`statements_in`), always: per language of agent/vocabulary/claims.py, a
  completion verb with what makes it finished (an auxiliary such as "has been", "wurde", "已",
  or a phrase such as "went through"), about money. What takes a claim back is read in the
  clause it stands in: a negation before its verb ("nothing has been refunded yet"), a
  condition ("once approved, …", "… as soon as it has been approved"), a question, a habit
  ("refunds are usually processed within 5 days"). The rest of the sentence does not matter:
  "Your refund has been processed and you can expect it in 3 days" is a claim.
* **The recall-first reader** (`lexicon_statements`), only where no model answered (none is
  configured, or its call failed, ran past CLAIM_CHECK_TIMEOUT_S or returned something that is
  not a reading) and only for `check_text(..., fallback=True)`: public replies
  (`contradicted_claims`, the 409 and its "Send it anyway") and drafts a model wrote (a flag
  there means the templates are used). It reads the sentences the precise reader found no
  claim in, clause by clause, and stops exactly these: a clause with a cue of
  agent/vocabulary/claims.py's LEXICON (`done`: the money moved, processed, sent, back on your
  card, 退款搞定了, ging raus, devolvimos; `approved`; `underway`), in any of its languages, that
    - speaks of refunds or money: a money stem (refund, reimburs, 退, 款, 返金, 환불, erstatt,
      rembours, reembols, devol, estorn, terugbetal, возврат, zwrot, iade, …) or an amount
      with its currency, in the clause, else in its sentence or the sentence before ("Good
      news about your refund. It went out today."), unless the clause is about something else
      that is sent or processed (a parcel, an e-mail, a replacement) and names no money;
    - and is not taken back: no hedge word in the clause (a negation, a condition, a future or
      a modal, a habit, "pending"), no condition in the sentence's first clause ("Once
      approved, …"), not a question; for `done` and `underway`, no word of a request or a
      review in the clause ("your refund request has been sent to the team").
  The customer's own figures (what they paid, what was proposed: "your 129 is back") are
  money too, with or without a currency. A text in which no reader found a claim is read once
  more, sentence by sentence: one that speaks of the customer's refund or money with no cue
  and with nothing that takes a claim back (no hedge, request or review, document or goods,
  opening condition, question) is read as the weakest claim, that the refund was approved
  ("Regarding your 129.00 CNY refund for the mug: all good on our side.").
  Such a clause claims what its strongest cue says (done > underway > approved) and is judged
  as the others are: a reply that says money moved is asked to confirm unless every refund it
  is judged against succeeded; one that says a refund was approved or is on its way, unless
  every one is approved or further on; any such reply while the customer has no refund.
  Assistant answers (internal notes, flagged, never blocked) and the desk's template drafts
  are not read by it: an answer's reply to the customer is, when it is sent.

Each claim is judged per order: the order it names (by its id, or by the name of something the
customer bought, matched loosely enough for a typo: "headphnes"), or, naming none, every order
with a request on the ticket (on the customer's other tickets when this one has none); of each
order the latest request that was not withdrawn or expired counts. A claim about an order or a
product the customer does not have is false (`"actual": "not_ordered"`), never judged against
another order's refund. An amount in the claim narrows it to the requests of that amount. A
claim is true only if every request it is judged against has a status that makes it so; a
claim with no request behind it is false.
"""

import re
from dataclasses import asdict, dataclass, field
from decimal import Decimal, InvalidOperation
from difflib import SequenceMatcher
from functools import cache
from typing import Literal

from agent.claim_reading import NO_CLAIM, ReadClaim, model_configured, read_claims
from agent.privacy import mask_for_model
from agent.vocabulary.claims import (
    AMOUNT,
    APPROVED,
    CLAUSE_JOINS,
    CONTRACTED_DONE,
    CONTRACTED_HEDGE,
    LANGUAGES,
    LEXICON,
    NAMES_NOTHING,
    ON_ITS_WAY,
    REFUNDED,
    REQUESTED,
    ClaimWords,
    Lexicon,
)
from orders.models import Customer, Order, OrderLine
from refunds.models import RefundRequest
from tickets.models import Ticket

S = RefundRequest.Status

# The statuses that make each kind of claim true.
TRUE_WHEN: dict[str, set[str]] = {
    REFUNDED: {S.SUCCEEDED},
    ON_ITS_WAY: {S.APPROVED, S.EXECUTING, S.PROVIDER_PENDING, S.SUCCEEDED},
    APPROVED: {S.APPROVED, S.EXECUTING, S.PROVIDER_PENDING, S.OUTCOME_UNKNOWN, S.SUCCEEDED},
    # Asked for: any request at all.
    REQUESTED: set(S),
}
# What a claim about an order or a product the customer does not have was "judged" against.
NOT_ORDERED = "not_ordered"
# Requests that never came to anything: a later one on the same order speaks for it.
VOID = {S.WITHDRAWN, S.EXPIRED}

SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])|\n+")
# Where a clause ends: punctuation, a dash, or a conjunction that starts a new subject.
CLAUSE_BREAK = re.compile(
    r",(?!\d)|[;:，；：]|\s[-–—]+\s|\s(?:and|but|so|while|whereas|und|aber|doch|et|mais|donc|y|pero|"
    r"e|ma|en|maar)\s+(?=(?:you|we|i|it|they|he|she|this|that|the|your|our|sie|wir|ich|es|er|"
    r"vous|nous|je|il|elle|usted|nosotros|le|la|el|lo|su|votre|notre|ihre|ihr|der|die|das|"
    r"den|dem|u|wij|jij|het|de)\b)",
    re.IGNORECASE,
)
QUESTION_END = re.compile(r"(?:[?？]|吗|呢|か)\W*$")
# A condition opening a sentence that is only an opener ("Once again, …", "After all, …").
NOT_A_CONDITION = re.compile(r"^\W*(?:once\s+(?:again|more)|after\s+all)\b", re.IGNORECASE)
ORDER_ID = re.compile(r"(?<!\d)\d{8,20}(?!\d)")
AMOUNT_VALUE = re.compile(
    r"(?:[¥￥$€£]\s?(?P<a>\d+(?:[.,]\d{1,2})?))"
    r"|(?<![\d.,])(?P<b>\d++(?:[.,]\d{1,2})?)\s?(?:cny|rmb|usd|eur|gbp|jpy|yuan|元|块|euros?|dollars?|€|円)"
    r"|(?<![\d.,])(?P<c>\d+[.,]\d{2})(?![\d.,]*\d)",
    re.IGNORECASE,
)
# Words of a product name too common to name it alone ("phone case": not "in case").
GENERIC_NAME_WORDS = {"case", "item", "items", "pack", "set", "box", "order", "thing", "kit"}
NAMES_NOTHING_WORD = re.compile(NAMES_NOTHING, re.IGNORECASE)
# How alike a word of a product name and a word a claim names it by must be (difflib's ratio):
# one typo in a word of five letters or more ("headphnes", "jackte").
NAME_LIKENESS = 0.8


@dataclass(frozen=True)
class _Pattern:
    kind: str
    regex: re.Pattern
    needs_money: bool
    # Says how things are now or will be, not what happened: a condition opening the sentence
    # takes it back too.
    open: bool = False


@dataclass(frozen=True)
class _Language:
    words: ClaimWords
    patterns: tuple[_Pattern, ...]
    money: re.Pattern
    # What an approval may be about: money, or a request for it.
    approvable: re.Pattern
    negation: re.Pattern
    condition: re.Pattern
    opening_condition: re.Pattern
    habitual: re.Pattern
    present: re.Pattern


def _w(text: str, spaced: bool) -> str:
    """`text` as whole words where words are spaced, as it is where they are not."""
    return rf"(?<![\w'’])(?:{text})(?![\w'’])" if spaced else f"(?:{text})"


def _compiled(words: ClaimWords) -> _Language:
    sp = words.spaced
    # Where words are not spaced, an auxiliary and its verb stand in one clause.
    gap = rf"(?:\s+\S+){{0,{words.gap}}}?\s+"
    if not sp:
        gap = rf"[^，。；：！？,;:!?\n]{{0,{words.gap}}}?"
    flags = re.IGNORECASE
    perfect = _w(words.perfect, sp)
    if sp:
        # "we've", "it's", "l'a": a contracted auxiliary follows its word directly.
        perfect = rf"(?:{perfect}|['’](?:ve|s|d)(?![\w'’]))"

    not_money = rf"(?!{words.not_money_after})"

    def after_perfect(kind: str, verbs: str, needs_money: bool) -> _Pattern:
        regex = re.compile(perfect + gap + _w(verbs, sp) + not_money, flags)
        return _Pattern(kind, regex, needs_money)

    patterns = [
        after_perfect(REFUNDED, words.self_money, False),
        after_perfect(REFUNDED, words.done, True),
        after_perfect(APPROVED, words.approved, True),
        _Pattern(ON_ITS_WAY, re.compile(_w(words.underway, sp), flags), True, open=True),
    ]
    for kind, text in words.phrases:
        regex = re.compile(text, flags)
        patterns.append(
            _Pattern(kind, regex, "needs_money" in regex.groupindex, "open" in regex.groupindex)
        )
    money = _w(words.money, sp) + not_money
    return _Language(
        words=words,
        patterns=tuple(patterns),
        money=re.compile(f"{money}|{_w(words.self_money, sp)}{not_money}", flags),
        approvable=re.compile(
            f"{_w(words.money, sp)}|{_w(words.self_money, sp)}|{_w(words.request, sp)}", flags
        ),
        # "hasn't", "don't": a contracted negation follows its word directly.
        negation=re.compile(_w(words.negation, sp) + r"|n['’]t(?!\w)", flags),
        condition=re.compile(_w(words.condition, sp), flags),
        opening_condition=re.compile(r"^\W*" + _w(words.condition, sp), flags),
        habitual=re.compile(_w(words.habitual, sp), flags),
        present=re.compile(r"^" + _w(words.present, sp), flags),
    )


@cache
def _languages() -> tuple[_Language, ...]:
    return tuple(_compiled(words) for words in LANGUAGES.values())


@dataclass(frozen=True)
class Statement:
    """A claim found in a text, before it is judged: its kind, the sentence it is in and the
    clause(s) that make it."""

    kind: str
    sentence: str
    clause: str
    # The sentence before, where the recall-first reader found the money a claim is about.
    before: str = ""


def _clause_bounds(sentence: str, start: int, end: int) -> tuple[int, int]:
    """The clause(s) a match from `start` to `end` stands in."""
    left, right = 0, len(sentence)
    for brk in CLAUSE_BREAK.finditer(sentence):
        if brk.end() <= start:
            left = brk.end()
        elif brk.start() >= end:
            right = brk.start()
            break
    return left, right


def _taken_back(
    language: _Language, pattern: _Pattern, sentence: str, match: re.Match, clause: str
) -> bool:
    left, right = _clause_bounds(sentence, match.start(), match.end())
    before = sentence[left : match.end()]
    if language.negation.search(before):
        return True
    if language.condition.search(clause):
        return True
    if QUESTION_END.search(sentence[left:right]):
        return True
    says_now = pattern.open or bool(language.present.match(match.group(0)))
    if says_now and language.habitual.search(clause):
        return True
    if says_now and left > 0:
        opening = sentence[: _clause_bounds(sentence, 0, 0)[1]]
        if language.opening_condition.search(opening) and not NOT_A_CONDITION.search(opening):
            return True
    return False


def statements_in(text: str) -> list[Statement]:
    """Every claim `text` makes outright, in the order they appear."""
    found: list[Statement] = []
    for sentence in SENTENCE_END.split(text or ""):
        sentence = sentence.strip()
        if not sentence:
            continue
        for language in _languages():
            for pattern in language.patterns:
                for match in pattern.regex.finditer(sentence):
                    left, right = _clause_bounds(sentence, match.start(), match.end())
                    clause = sentence[left:right]
                    about = language.approvable if pattern.kind == APPROVED else language.money
                    if pattern.needs_money and not about.search(clause):
                        continue
                    if _taken_back(language, pattern, sentence, match, clause):
                        continue
                    statement = Statement(pattern.kind, sentence, clause.strip())
                    if statement not in found:
                        found.append(statement)
    return _strongest_per_clause(found)


def _strongest_per_clause(found: list[Statement]) -> list[Statement]:
    """One claim per clause, the strongest: "approved and processed" claims it was refunded."""
    rank = {REFUNDED: 0, ON_ITS_WAY: 1, APPROVED: 2}
    best: dict[tuple[str, str], Statement] = {}
    for statement in found:
        key = (statement.sentence, statement.clause)
        if key not in best or rank[statement.kind] < rank[best[key].kind]:
            best[key] = statement
    return [s for s in found if best[(s.sentence, s.clause)] is s]


def claims_in(answer: str) -> list[str]:
    """The kinds of claim (refunded, approved, on_its_way) the text makes outright."""
    return list(dict.fromkeys(statement.kind for statement in statements_in(answer)))


# --- The recall-first reader ---------------------------------------------------------------


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


def _customer_figures(customer: Customer) -> set[Decimal]:
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


# --- Judging ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Claim:
    """A claim as judged: `claimed` is its kind, `actual` the statuses of the requests it was
    judged against ("none" when there are none), `order_id` the order it names, if any."""

    text: str
    order_id: str | None
    claimed: str
    actual: str
    true: bool

    def public(self) -> dict:
        return {
            "text": self.text,
            "order_id": self.order_id,
            "claimed": self.claimed,
            "actual": self.actual,
        }


@dataclass
class TextCheck:
    claims: list[Claim] = field(default_factory=list)
    requests: list[RefundRequest] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(claim.true for claim in self.claims)

    @property
    def false_claims(self) -> list[Claim]:
        return [claim for claim in self.claims if not claim.true]

    def public(self) -> dict:
        """What an API shows: ok, and the claims the records contradict."""
        return {"ok": self.ok, "claims": [claim.public() for claim in self.false_claims]}


def _amounts(text: str) -> set[Decimal]:
    found = set()
    for match in AMOUNT_VALUE.finditer(text):
        value = next(group for group in match.groups() if group is not None)
        try:
            found.add(Decimal(value.replace(",", ".")))
        except InvalidOperation:
            continue
    return found


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
class _Shop:
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
    def load(cls, *, ticket, customer: Customer | None) -> "_Shop":
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


def _latest_per_order(requests: list[RefundRequest]) -> list[RefundRequest]:
    latest: dict[str, RefundRequest] = {}
    for request in requests:
        current = latest.get(request.order.order_id)
        if current is None or current.status in VOID or request.status not in VOID:
            latest[request.order.order_id] = request
    return list(latest.values())


def _judge(statement: Statement, requests: list[RefundRequest], order_id: str | None) -> Claim:
    amounts = _amounts(statement.clause)
    if amounts:
        requests = [r for r in requests if r.amount in amounts]
    judged = _latest_per_order(requests)
    statuses = list(dict.fromkeys(r.status for r in judged))
    true = bool(judged) and all(r.status in TRUE_WHEN[statement.kind] for r in judged)
    return Claim(
        text=statement.sentence[:500],
        order_id=order_id,
        claimed=statement.kind,
        actual=", ".join(statuses) or "none",
        true=true,
    )


def _not_ordered(statement: Statement, order_id: str | None) -> Claim:
    return Claim(
        text=statement.sentence[:500],
        order_id=order_id,
        claimed=statement.kind,
        actual=NOT_ORDERED,
        true=False,
    )


def _judged(statement: Statement, shop: _Shop, named: list[str]) -> list[Claim]:
    if not named:
        return [_judge(statement, shop.unnamed, None)]
    return [
        _judge(statement, shop.by_order.get(order_id, []), order_id)
        if order_id in shop.orders
        else _not_ordered(statement, order_id)
        for order_id in named
    ]


def _judged_reading(read: ReadClaim, shop: _Shop) -> list[Claim]:
    """A claim the model read, judged: against the orders it names, as the precise reader's
    are when it names none."""
    statement = Statement(read.claimed_state, read.sentence.strip(), read.sentence.strip())
    resolved = shop.resolve(read.order_or_product) if read.order_or_product else None
    if resolved is None:
        return _judged(statement, shop, shop.named_orders(statement.sentence))
    orders, foreign_id = resolved
    if not orders:
        return [_not_ordered(statement, foreign_id)]
    return _judged(statement, shop, orders)


def _plain(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


def _said_already(claim: Claim, claims: list[Claim]) -> bool:
    """The same verdict on the same order, from a sentence one reader found and the other
    quoted in part."""
    text = _plain(claim.text)
    for other in claims:
        same = (other.order_id, other.claimed, other.true, other.actual) == (
            claim.order_id,
            claim.claimed,
            claim.true,
            claim.actual,
        )
        if same and (text in _plain(other.text) or _plain(other.text) in text):
            return True
    return False


# check_text's default `reading`: the model is asked for it there and then.
ASK: Literal["ask"] = "ask"
Reading = list[ReadClaim] | None


def read_for_check(*, text: str, ticket, customer: Customer | None = None) -> Reading:
    """The model's reading of `text`, as check_text would ask for it; None when no model
    answered. Asked apart from the judging, so that a caller about to open a transaction asks
    (for up to CLAIM_CHECK_TIMEOUT_S) before it holds any lock."""
    if not model_configured():
        return None
    # What a model is sent is masked first (DESIGN §17), the reply's text too.
    return read_claims(mask_for_model(text, customer=customer or ticket.customer))


def check_text(
    *,
    text: str,
    ticket,
    customer: Customer | None = None,
    fallback: bool = False,
    reading: Reading | Literal["ask"] = ASK,
) -> TextCheck:
    """Judge every claim `text` makes against the refunds of `ticket` (its customer's, or
    `customer`'s when given, for a run bound to the customer it started with). The precise
    reader's claims and the model's (`reading`, read_for_check's, asked now by default) are
    judged; with `fallback`, when no model answered, the recall-first reader's too (the
    module's docstring says which texts that is for)."""
    statements = statements_in(text)
    if reading == ASK:
        reading = read_for_check(text=text, ticket=ticket, customer=customer)
    read = [claim for claim in reading or [] if claim.claimed_state != NO_CLAIM]
    if reading is None and fallback:
        statements += lexicon_statements(
            text,
            skip={s.sentence for s in statements},
            amounts=_customer_figures(customer or ticket.customer),
        )
    if not statements and not read:
        return TextCheck()
    shop = _Shop.load(ticket=ticket, customer=customer)
    claims: list[Claim] = []
    for statement in statements:
        named = (
            shop.named_orders(statement.clause)
            or shop.named_orders(statement.sentence)
            or shop.named_orders(statement.before)
        )
        claims.extend(_judged(statement, shop, named))
    for claim in read:
        for judged in _judged_reading(claim, shop):
            if not _said_already(judged, claims):
                claims.append(judged)
    return TextCheck(claims=claims, requests=shop.unnamed)


# --- A run's answer -----------------------------------------------------------------------


@dataclass
class AnswerCheck:
    contradicts: bool
    # The kinds of claim the answer makes (refunded, approved, on_its_way).
    claims: list[str] = field(default_factory=list)
    # The ticket's requests: [{request_id, order_id, amount, status, status_label}].
    actual: list[dict] = field(default_factory=list)
    # The claims the records contradict: [{text, order_id, claimed, actual}].
    false_claims: list[dict] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)

    def note(self) -> str:
        """What the agent reads under the answer when it contradicts the records."""
        said = " and ".join(CLAIM_WORDS[kind] for kind in self.claims)
        if not self.actual:
            return (
                f"Check before replying: the assistant's answer says the refund {said}, but "
                "there is no refund request on this ticket. Nothing has been refunded."
            )
        real = "; ".join(
            f"request {r['request_id']} ({r['amount']} on order {r['order_id']}) is "
            f"{r['status_label'].lower()}"
            for r in self.actual
        )
        return f"Check before replying: the assistant's answer says the refund {said}, but {real}."


CLAIM_WORDS = {
    REFUNDED: "has been paid",
    APPROVED: "is approved",
    ON_ITS_WAY: "is on its way",
    REQUESTED: "was asked for",
}


def check_answer(*, answer: str, run, reading: Reading | Literal["ask"] = ASK) -> AnswerCheck:
    """Judge a run's `answer` against the refunds of its ticket and customer (with the model's
    `reading` of it, when the caller asked for it already)."""
    checked = check_text(text=answer, ticket=run.ticket, customer=run.customer, reading=reading)
    if not checked.claims:
        return AnswerCheck(contradicts=False)
    actual = [
        {
            "request_id": r.request_id,
            "order_id": r.order.order_id,
            "amount": f"{r.amount:.2f} {r.currency}",
            "status": r.status,
            "status_label": r.get_status_display(),
        }
        for r in checked.requests
    ]
    return AnswerCheck(
        contradicts=not checked.ok,
        claims=list(dict.fromkeys(claim.claimed for claim in checked.claims)),
        actual=actual,
        false_claims=[claim.public() for claim in checked.false_claims],
    )


def contradicted_claims(*, text: str, ticket) -> list[dict]:
    """The claims of a public reply `text` that the records of `ticket` contradict, as the API
    shows them; without a model's reading, read by the recall-first reader too."""
    checked = check_text(text=text, ticket=ticket, fallback=True)
    return [claim.public() for claim in checked.false_claims]
