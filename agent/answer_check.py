"""The success contract: before a run's answer is shown, what it says about refunds is checked
against the refunds that exist. An answer that says a refund is done, approved or on its way
while the request is pending (or there is none) contradicts the state: the run is flagged and
the agent is told the real status, so nobody repeats the claim to a customer."""

import re
from dataclasses import asdict, dataclass, field

from refunds.models import RefundRequest

S = RefundRequest.Status

# What a sentence may claim, and the statuses that make the claim true.
CLAIMS: dict[str, tuple[re.Pattern, set[str]]] = {
    "refunded": (
        re.compile(
            r"\b(has|have|had|was|were|been|is|are)\s+(now\s+)?(fully\s+|successfully\s+)?"
            r"refunded\b|\brefunded\s+(successfully|in full)\b|\b(successfully|fully)\s+refunded\b"
            r"|\brefund\s+(is|was|has\s+been)\s+(now\s+)?(complete|completed|processed|issued|"
            r"done|sent|paid|finali[sz]ed)\b|\bI\s*(have|'ve)\s+(issued|processed|refunded)\b",
            re.IGNORECASE,
        ),
        {S.SUCCEEDED},
    ),
    "approved": (
        re.compile(
            r"\b(refund|request|proposal|it)\s+(is|was|has\s+been)\s+(now\s+)?approved\b"
            r"|\b(I|we)\s*(have|'ve)?\s*approved\b",
            re.IGNORECASE,
        ),
        {S.APPROVED, S.EXECUTING, S.PROVIDER_PENDING, S.OUTCOME_UNKNOWN, S.SUCCEEDED},
    ),
    "on_its_way": (
        re.compile(
            r"\b(refund|money)\s+(is|are)\s+on\s+(its|the)\s+way\b"
            r"|\b(will|should)\s+(receive|see|get)\s+(the|your|their|his|her|a)\s+"
            r"(money|refund)\b|\brefund\s+is\s+being\s+(processed|sent|issued)\b",
            re.IGNORECASE,
        ),
        {S.APPROVED, S.EXECUTING, S.PROVIDER_PENDING, S.SUCCEEDED},
    ),
}
# A sentence that negates, conditions or defers is not a claim ("nothing has been refunded
# yet", "once a reviewer approves it, the customer will receive the refund").
HEDGES = re.compile(
    r"\b(not|no|nothing|never|yet|until|unless|once|after|if|when|whether|pending|waiting|"
    r"awaiting|needs?|requires?|must|can|could|would|may|might|cannot)\b|n't|\?",
    re.IGNORECASE,
)
SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|\n+")


def claims_in(answer: str) -> list[str]:
    """The kinds of claim (refunded, approved, on_its_way) the answer makes outright."""
    found: list[str] = []
    for sentence in SENTENCE_END.split(answer):
        if HEDGES.search(sentence):
            continue
        for kind, (pattern, _) in CLAIMS.items():
            if pattern.search(sentence) and kind not in found:
                found.append(kind)
    return found


@dataclass
class AnswerCheck:
    contradicts: bool
    claims: list[str] = field(default_factory=list)
    # The requests the answer was judged against: [{request_id, order_id, amount, status}].
    actual: list[dict] = field(default_factory=list)

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
    "refunded": "has been paid",
    "approved": "is approved",
    "on_its_way": "is on its way",
}


def check_answer(*, answer: str, run) -> AnswerCheck:
    """Judge `answer` against the requests this run proposed or changed, or, if it touched
    none, the requests on its ticket."""
    claims = claims_in(answer)
    if not claims:
        return AnswerCheck(contradicts=False)
    requests = list(RefundRequest.objects.filter(run=run).select_related("order"))
    if not requests:
        requests = list(RefundRequest.objects.filter(ticket=run.ticket).select_related("order"))
    statuses = {r.status for r in requests}
    contradicts = any(not (statuses & CLAIMS[kind][1]) for kind in claims)
    actual = [
        {
            "request_id": r.request_id,
            "order_id": r.order.order_id,
            "amount": f"{r.amount:.2f} {r.currency}",
            "status": r.status,
            "status_label": r.get_status_display(),
        }
        for r in requests
    ]
    return AnswerCheck(contradicts=contradicts, claims=claims, actual=actual)
