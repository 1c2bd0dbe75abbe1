"""Executing approved refunds exactly once (DESIGN §8).

The provider is only ever asked to refund under the request's own `request_id` as the
idempotency key, so however often a task is redelivered, a worker dies or a sweep retries,
the provider holds at most one refund per request. Every call to the provider, lookups
included, uses the parameters the approval bound (the approved confirmation's params), never
the order row as it is now: an order edited after approval cannot redirect a lookup and so
make a paid refund look absent.

Provider calls happen outside any database transaction: `executing` is committed first, so a
worker that dies mid-call leaves a visible `executing` row for reconciliation to settle.
Reconciliation (refunds/reconciliation.py) settles what execution could not see through the
same submit and settle steps here.
"""

import logging
from decimal import Decimal

from django.conf import settings
from django.db import transaction

from config.money import money_str
from config.transactions import atomic_retried
from refunds.adapters import (
    ProviderRefund,
    ProviderTerminalError,
    ProviderUnknownOutcome,
    get_adapter,
)
from refunds.identity import fingerprint, fingerprint_params
from refunds.locks import lock_request
from refunds.models import RefundConfirmation, RefundRequest
from refunds.signals import tell_ticket
from refunds.transitions import refund_transition

logger = logging.getLogger(__name__)

S = RefundRequest.Status

# What a reconciliation pass reports for a request it looked at but could not settle yet (here
# because settling from the provider's answer says it; refunds/reconciliation.py counts it).
UNRESOLVED = "unresolved"


def refund_execute(*, refund_pk: int, skip_locked: bool = False) -> str | None:
    """Send one approved refund to the provider and record what happened.

    Returns the status the request ended in, or None when there was nothing to do: the
    request is not `approved` (already executing or settled, never approved, rejected,
    expired), or, with skip_locked, another process holds it. Safe to call any number of
    times and concurrently. The caller must not hold a transaction: the provider is called
    after `executing` has been committed.
    """
    refund = _claim_for_execution(refund_pk=refund_pk, skip_locked=skip_locked)
    if refund is None:
        return None
    if refund.status != S.EXECUTING:
        return refund.status  # refused before any provider call
    return _submit(refund=refund, source="execute")


@atomic_retried
def _claim_for_execution(*, refund_pk: int, skip_locked: bool) -> RefundRequest | None:
    """Lock an approved request, verify its approval, and move it to `executing`.

    Returns None when it is not ours to execute; a request whose approval no longer matches
    it comes back `failed` without any provider call.
    """
    refund = lock_request(
        refund_pk=refund_pk, related=(), skip_locked=skip_locked, status=S.APPROVED
    )
    if refund is None:
        return None
    confirmation = refund.confirmations.order_by("-version").first()
    problem = approval_problem(refund=refund, confirmation=confirmation)
    if problem is not None:
        return refund if _refuse(refund=refund, problem=problem) else None
    assert confirmation is not None  # approval_problem refuses a missing one
    moved = refund_transition(
        refund=refund,
        to_status=S.EXECUTING,
        detail={
            "idempotency_key": refund.request_id,
            "confirmation_version": confirmation.version,
            "fingerprint": confirmation.fingerprint,
            "adapter": settings.REFUND_ADAPTER,
        },
    )
    if not moved:
        return None
    # No note here: the approval already said it is on its way to the provider
    # (refunds.services.refund_approve), and the result gets its own note when it settles.
    return refund


def approval_problem(
    *, refund: RefundRequest, confirmation: RefundConfirmation | None
) -> dict | None:
    """Why `refund` may not be sent as it stands, or None if its approval still covers it.

    The approval is bound to the fingerprint of the exact parameters the reviewer saw; a row
    edited since (amount, order, payment reference, ...) no longer matches it.
    """
    if confirmation is None or confirmation.status != RefundConfirmation.Status.APPROVED:
        return {
            "error": "no approved confirmation for the current version",
            "confirmation_version": confirmation.version if confirmation else None,
            "confirmation_status": confirmation.status if confirmation else None,
        }
    current = fingerprint(fingerprint_params(refund))
    if current != confirmation.fingerprint:
        return {
            "error": "fingerprint mismatch",
            "confirmation_version": confirmation.version,
            "approved_fingerprint": confirmation.fingerprint,
            "current_fingerprint": current,
        }
    return None


def _refuse(*, refund: RefundRequest, problem: dict) -> bool:
    """Fail a request whose approval does not cover it, without calling the provider.

    The state machine reaches `failed` only through `executing`; both steps commit together,
    so nobody ever observes the intermediate state. False: another process moved the request
    first, and nothing changed. Precondition: inside the caller's transaction.
    """
    detail = {**problem, "provider_called": False}
    refused = refund_transition(
        refund=refund, to_status=S.EXECUTING, detail={"preflight": "refused"}
    ) and refund_transition(refund=refund, to_status=S.FAILED, detail=detail)
    if not refused:
        # Never leave a half-made refusal (`executing` with no provider call) behind.
        transaction.set_rollback(True)
        return False
    logger.warning("Refund %s refused before execution: %s", refund.request_id, problem["error"])
    tell_ticket(
        refund,
        f"{_label(refund)} was not sent to the provider: "
        f"{problem['error']} (its approval no longer covers it).",
    )
    return True


def bound_params(refund: RefundRequest) -> dict:
    """The parameters the approval bound: what the provider is asked to refund and where.

    Precondition: the request was approved (it is executing or past it).
    """
    approved = (
        refund.confirmations.filter(status=RefundConfirmation.Status.APPROVED)
        .order_by("-version")
        .first()
    )
    if approved is None:
        raise RuntimeError(f"refund {refund.request_id} has no approved confirmation")
    return approved.params


def _submit(*, refund: RefundRequest, source: str) -> str | None:
    """Call the provider for an `executing` request and settle it on the answer."""
    params = bound_params(refund)
    try:
        found = get_adapter().create_refund(
            idempotency_key=refund.request_id,
            amount=Decimal(params["amount"]),
            currency=params["currency"],
            payment_reference=params["payment_reference"],
            metadata={"request_id": refund.request_id},
        )
    except (ProviderTerminalError, ProviderUnknownOutcome) as exc:
        # A refusal is the provider's word that nothing was refunded; anything else is unknown.
        refused = isinstance(exc, ProviderTerminalError)
        return _settle(
            refund=refund,
            to_status=S.FAILED if refused else S.OUTCOME_UNKNOWN,
            detail={
                "error": exc.message,
                "code": exc.code,
                "source": source,
                "provider_called": True,
            },
        )
    return _settle_from_provider(refund=refund, found=found, source=source)


def _settle_from_provider(
    *, refund: RefundRequest, found: ProviderRefund, source: str
) -> str | None:
    detail: dict[str, object] = {
        "provider_refund_id": found.id,
        "provider_status": found.status,
        # Exact, in the provider's currency: a mismatch must show what the provider holds.
        "provider_amount": str(found.amount),
        "provider_currency": found.currency,
        "source": source,
    }
    if (found.amount, found.currency) != (refund.amount, refund.currency):
        detail["amount_mismatch"] = True
        logger.error(
            "Refund %s: provider refund %s is for %s %s, the request for %s %s",
            refund.request_id,
            found.id,
            found.amount,
            found.currency,
            refund.amount,
            refund.currency,
        )
    if found.failed:
        detail["error"] = f"provider refund {found.id} is {found.status}"
        return _settle(refund=refund, to_status=S.FAILED, detail=detail)
    if found.succeeded:
        return _settle(
            refund=refund, to_status=S.SUCCEEDED, detail=detail, provider_refund_id=found.id
        )
    if refund.status == S.PROVIDER_PENDING:
        return UNRESOLVED  # still not settled at the provider; the next pass asks again
    return _settle(
        refund=refund, to_status=S.PROVIDER_PENDING, detail=detail, provider_refund_id=found.id
    )


@transaction.atomic
def _settle(*, refund: RefundRequest, to_status: str, detail: dict, **fields) -> str | None:
    """Record the provider's answer, unless another process already settled the request."""
    # Locked in the one order (refunds/locks.py) before the compare-and-swap and the ticket's
    # note, whose foreign-key checks reach the order.
    lock_request(refund_pk=refund.pk, related=())
    if not refund_transition(refund=refund, to_status=to_status, detail=detail, **fields):
        logger.info(
            "Refund %s was settled by someone else; dropping our %s", refund.request_id, to_status
        )
        return None
    tell_ticket(refund, _settled_message(refund, detail))
    return to_status


def _settled_message(refund: RefundRequest, detail: dict) -> str:
    by_reconciliation = " (confirmed by reconciliation)" if detail["source"] != "execute" else ""
    if refund.status == S.SUCCEEDED:
        return (
            f"{_label(refund)} succeeded (provider id {refund.provider_refund_id})"
            f"{by_reconciliation}."
        )
    if refund.status == S.FAILED:
        return f"{_label(refund)} failed: {detail['error']}{by_reconciliation}."
    if refund.status == S.PROVIDER_PENDING:
        return (
            f"{_label(refund)} was accepted by the payment provider (provider id "
            f"{refund.provider_refund_id}, status {detail['provider_status']}) but is not "
            f"settled yet; not refunded until the provider confirms it."
        )
    return f"{_label(refund)}: outcome unknown ({detail['error']}), reconciling with the provider."


def _label(refund: RefundRequest) -> str:
    return f"Refund {refund.request_id} of {money_str(refund.amount)} {refund.currency}"
