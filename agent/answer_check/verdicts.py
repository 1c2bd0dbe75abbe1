"""What the claim check tells its callers: about a run's answer (`AnswerCheck`, kept on the
run as its `answer_check`, with the note the agent reads under it) and about a public reply
(`contradicted_claims`, the claims the API shows with its 409).

Apart from the judging, which knows nothing of runs or of how its verdicts are shown.
"""

from dataclasses import asdict, dataclass, field
from typing import Literal

from agent.answer_check.judging import ASK, Reading, check_text
from agent.vocabulary.claims import APPROVED, ON_ITS_WAY, REFUNDED, REQUESTED


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
