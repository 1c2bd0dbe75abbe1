"""What several refund services need: the policy's evaluation of a refund and the refusals it
and the desk's money rules raise, the request locked in the one order, how a note names a
request, and the error of a compare-and-swap that found its row already moved.

Apart so proposal, decisions, withdrawal, expiry and order edits share one copy of each: the
same evaluation under the same lock at proposal and at approval, the same words on the ticket.
"""

from datetime import datetime
from decimal import Decimal

from django.db.models import Sum

from config.money import desk_can_hold, desk_places, money_str
from orders.models import Order
from policies.rules import Evaluation
from policies.selectors import evaluate_refund_for_order
from refunds.errors import (
    AmountNotExpressible,
    CurrencyNotSupported,
    RefundRefused,
    StaleConfirmation,
)
from refunds.identity import fingerprint, fingerprint_params
from refunds.locks import lock_request
from refunds.models import RefundRequest

S = RefundRequest.Status

# Requests that do not count toward the requester's total under R-5: no money moved and none
# can move without the request being proposed (and so evaluated) again.
NOT_COUNTED_FOR_LIMIT = (S.FAILED, S.REJECTED, S.EXPIRED, S.WITHDRAWN)


def _refuse_unless_allowed(evaluation: Evaluation, message: str) -> None:
    if evaluation.allowed:
        return
    failing = evaluation.failing()
    details = "; ".join(f"{v['clause']}: {v['detail']}" for v in failing)
    refusal = RefundRefused if evaluation.currency_supported else CurrencyNotSupported
    raise refusal(
        f"{message} {details}",
        extra={"failing_clauses": evaluation.failing_clauses(), "verdicts": failing},
    )


def _requester_other_amount(
    *, order: Order, requester_id: int, excluding: RefundRequest | None = None
) -> Decimal:
    """What `requester_id` proposed or had refunded on `order` in requests other than
    `excluding`: R-5 limits the total, so a refund split into parts meets the same limit."""
    requests = RefundRequest.objects.filter(order=order, requested_by_id=requester_id).exclude(
        status__in=NOT_COUNTED_FOR_LIMIT
    )
    if excluding is not None:
        requests = requests.exclude(pk=excluding.pk)
    return requests.aggregate(total=Sum("amount"))["total"] or Decimal("0.00")


def _evaluate(
    *,
    order: Order,
    amount: Decimal,
    reason: str,
    role: str | None,
    requester_id: int,
    excluding: RefundRequest | None,
    now: datetime,
    reviewer_id: int | None = None,
) -> Evaluation:
    return evaluate_refund_for_order(
        order=order,
        amount=amount,
        reason=reason,
        actor_role=role or "",
        requester_id=requester_id,
        reviewer_id=reviewer_id,
        now=now,
        requester_other_amount=_requester_other_amount(
            order=order, requester_id=requester_id, excluding=excluding
        ),
    )


def _label(refund: RefundRequest) -> str:
    """How every note on the ticket names a request (refunds.execution uses the same words):
    its id, so a note can be found in the review queue, and its amount to the cent."""
    return f"Refund {refund.request_id} of {money_str(refund.amount)} {refund.currency}"


def _refuse_unless_holdable(*, amount: Decimal, currency: str) -> None:
    """Refuse an amount the order's currency cannot express or the desk cannot store, rather
    than round it: the provider is paid in whole minor units (12.5 JPY is no amount)."""
    if desk_can_hold(amount, currency):
        return
    places = desk_places(currency)
    why = (
        f"{currency} has no minor unit, so the amount must be whole"
        if places == 0
        else f"the desk holds {currency} amounts to {places} decimal places"
    )
    raise AmountNotExpressible(
        f"{amount} {currency} cannot be refunded: {why}.",
        extra={"currency": currency, "decimal_places": places},
    )


def _locked(refund: RefundRequest, related: tuple[str, ...] = ("order", "ticket")) -> RefundRequest:
    """`refund` as it is now, locked after its order (refunds/locks.py)."""
    locked = lock_request(refund_pk=refund.pk, related=related)
    if locked is None:
        raise RefundRequest.DoesNotExist(f"no refund request {refund.pk}")
    return locked


def _changed_meanwhile(refund: RefundRequest) -> StaleConfirmation:
    """A compare-and-swap on `refund` or its version found it already moved. Raised, it rolls
    back whatever the transaction changed before: a decision is made whole or not at all."""
    return StaleConfirmation(
        f"Refund {refund.request_id} changed while this was being decided; reload it.",
        code="changed_meanwhile",
    )


def _fingerprint_of(refund: RefundRequest) -> str:
    return fingerprint(fingerprint_params(refund))
