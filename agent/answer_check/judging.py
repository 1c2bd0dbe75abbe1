"""Each claim judged against the customer's refunds (the package's docstring says how), and
`check_text`, which reads a text with every reader that applies, the model's reading too
(`read_for_check`), and judges what they found.

Apart from the readers, which know nothing of the database, and from what the check's callers
are told (verdicts.py).
"""

import re
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Literal

from agent.answer_check.precise import statements_in
from agent.answer_check.recall import customer_figures, lexicon_statements
from agent.answer_check.shop import Shop
from agent.answer_check.text import Statement
from agent.claim_reading import NO_CLAIM, ReadClaim, model_configured, read_claims
from agent.privacy import mask_for_model
from agent.vocabulary.claims import APPROVED, ON_ITS_WAY, REFUNDED, REQUESTED
from orders.models import Customer
from refunds.models import RefundRequest

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

AMOUNT_VALUE = re.compile(
    r"(?:[¥￥$€£]\s?(?P<a>\d+(?:[.,]\d{1,2})?))"
    r"|(?<![\d.,])(?P<b>\d++(?:[.,]\d{1,2})?)\s?(?:cny|rmb|usd|eur|gbp|jpy|yuan|元|块|euros?|dollars?|€|円)"
    r"|(?<![\d.,])(?P<c>\d+[.,]\d{2})(?![\d.,]*\d)",
    re.IGNORECASE,
)


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


def _judged(statement: Statement, shop: Shop, named: list[str]) -> list[Claim]:
    if not named:
        return [_judge(statement, shop.unnamed, None)]
    return [
        _judge(statement, shop.by_order.get(order_id, []), order_id)
        if order_id in shop.orders
        else _not_ordered(statement, order_id)
        for order_id in named
    ]


def _judged_reading(read: ReadClaim, shop: Shop) -> list[Claim]:
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
            amounts=customer_figures(customer or ticket.customer),
        )
    if not statements and not read:
        return TextCheck()
    shop = Shop.load(ticket=ticket, customer=customer)
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
