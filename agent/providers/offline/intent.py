"""What the support agent asked for, read only from their latest message."""

import re
from dataclasses import dataclass
from decimal import Decimal

from agent.providers.offline.transcript import _ORDER_ID, Transcript, _money

# "refund policy", "refund status" and the like name a topic, not a request.
_REFUND_WORDS = re.compile(
    r"\b(?:refund\w*+|reimburs\w*+|money back|pay (?:her|him|them|the customer) back)\b"
    r"(?!\s+(?:polic\w*|window|rules?|status|eligibility|requests?|history|options?)\b)",
    re.I,
)
_REFUND_NEGATED = re.compile(
    r"\b(?:don'?t|do not|never|no|without|hold off(?: on)?|(?:should|must|can|do)(?:n'?t| not)"
    r"|not yet)\s+(?:(?:issue|propose|create|give|make|process|start|a|any|the|them|it)\s+)"
    r"{0,2}(?:refund\w*|reimburs\w*|money back)",
    re.I,
)
_REFUND_COMMAND = re.compile(
    r"\b(?:please|go ahead|propose|issue|create|process|start)\b[^.?!]*\b(?:refund|reimburs)"
    r"|\brefund (?:it|them|this|that|the order|the customer|him|her|in full)\b",
    re.I,
)
# A question ("can she get her money back?") asks for facts unless it also says what to do.
_QUESTION = re.compile(r"\?|\beligib\w*", re.I)
_POLICY_TOPIC = re.compile(
    r"\b(?:refund\w*|return\w*|reimburs\w*|money back|broken|damaged|cracked|shattered|"
    r"defective|faulty|in pieces|never arrived|not arrived|(?:hasn'?t|has not|didn'?t|did not)"
    r" arrive\w*|not received|never received|lost|wrong|eligib\w*|polic\w*)\b",
    re.I,
)
_DAMAGED = re.compile(
    r"\b(?:broken|damaged|cracked|shattered|smashed|in pieces|defective|faulty|"
    r"stopped working|(?:does ?n[o']?t|not) work\w*)\b",
    re.I,
)
_NOT_RECEIVED = re.compile(
    r"\b(?:never (?:arrived|came|received|delivered)|not (?:arrived|received|delivered)|"
    r"(?:hasn'?t|has not|didn'?t|did not|haven'?t|have not) (?:arrived|been delivered|"
    r"received|come)|lost|missing)\b",
    re.I,
)
_WRONG_ITEM = re.compile(r"\bwrong\b|\bnot what (?:she|he|they|the customer|i|we) ordered\b", re.I)
_AMOUNT = re.compile(
    r"(?:[¥￥$€£]|\b(?:cny|rmb|usd|eur)\s?)\s*(?P<a>\d+(?:\.\d{1,2})?)\b"
    r"|\b(?P<b>\d+(?:\.\d{1,2})?)\s*(?:cny|rmb|yuan|usd|eur|dollars?|euros?)\b"
    r"|\b(?P<c>\d+\.\d{2})\b(?!\s*%)"
    r"|\brefund\w*\s+(?:of\s+|them\s+|her\s+|him\s+|the customer\s+)?(?P<d>\d+(?:\.\d{1,2})?)"
    r"\b(?!\s*(?:%|percent|days?|items?|orders?))",
    re.I,
)
_PARTIAL = re.compile(r"\b(?:half|partial(?:ly)?|part of|percent)\b|\d\s*%", re.I)


@dataclass(frozen=True)
class Intent:
    wants_refund: bool
    policy_topic: bool
    reason: str
    amount: Decimal | None
    partial_without_amount: bool
    order_ids: tuple[str, ...]


def read_intent(request: str) -> Intent:
    order_ids = tuple(dict.fromkeys(_ORDER_ID.findall(request)))
    without_ids = _ORDER_ID.sub(" ", request)
    asks_refund = bool(_REFUND_WORDS.search(request))
    declined = bool(_REFUND_NEGATED.search(request))
    only_asking = bool(_QUESTION.search(request))
    amount = None
    for match in _AMOUNT.finditer(without_ids):
        amount = _money(next(value for value in match.groups() if value is not None))
        if amount is not None and amount > 0:
            break
        amount = None
    if _DAMAGED.search(request):
        reason = "damaged"
    elif _NOT_RECEIVED.search(request):
        reason = "not_received"
    elif _WRONG_ITEM.search(request):
        reason = "wrong_item"
    else:
        reason = "other"
    return Intent(
        wants_refund=(
            asks_refund
            and not declined
            and (not only_asking or bool(_REFUND_COMMAND.search(request)))
        ),
        policy_topic=bool(_POLICY_TOPIC.search(request)),
        reason=reason,
        amount=amount,
        partial_without_amount=amount is None and bool(_PARTIAL.search(request)),
        order_ids=order_ids,
    )


def _order_for(transcript: Transcript, intent: Intent) -> str | None:
    if intent.order_ids:
        return intent.order_ids[0]
    return transcript.ticket_order
