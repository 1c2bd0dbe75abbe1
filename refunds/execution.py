"""Executing approved refunds exactly once, and reconciling what we could not see (DESIGN §8).

The provider is only ever asked to refund under the request's own `request_id` as the
idempotency key, so however often a task is redelivered, a worker dies or a sweep retries,
the provider holds at most one refund per request. Every call to the provider, lookups
included, uses the parameters the approval bound (the approved confirmation's params), never
the order row as it is now: an order edited after approval cannot redirect a lookup and so
make a paid refund look absent.

Provider calls happen outside any database transaction: `executing` is committed first, so a
worker that dies mid-call leaves a visible `executing` row for reconciliation to settle.
"""

import logging
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal

from django.conf import settings
from django.db import transaction
from django.utils import timezone

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

# An approved request still `approved` after this long lost its execute task (the broker
# dropped it, was down at approval, or the worker was down when it was enqueued): the sweep
# executes it. REFUND_APPROVED_GRACE_S, read once at startup like the Celery settings.
APPROVED_GRACE = timedelta(seconds=settings.REFUND_APPROVED_GRACE_S)

# What a reconciliation pass reports for a request it looked at but could not settle yet.
UNRESOLVED = "unresolved"


def in_flight_window() -> timedelta:
    """How long a provider call can possibly still be in flight.

    One call takes at most REFUND_PROVIDER_TIMEOUT_S; twice that plus half a minute covers the
    task's own overhead and clock skew between hosts. An `executing` row older than this
    belongs to a worker that died; an unanswered call older than this has landed or never will.
    """
    return timedelta(seconds=2 * settings.REFUND_PROVIDER_TIMEOUT_S + 30)


# --- execution ------------------------------------------------------------------------------


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


# --- reconciliation -------------------------------------------------------------------------


@dataclass
class ReconcileReport:
    """What one pass did, per kind of request: outcome -> count."""

    unknown: Counter = field(default_factory=Counter)
    provider_pending: Counter = field(default_factory=Counter)
    stale_executing: Counter = field(default_factory=Counter)
    approved: Counter = field(default_factory=Counter)

    def summary(self) -> str:
        def part(name: str, counts: Counter) -> str:
            inner = ", ".join(f"{counts[key]} {key}" for key in sorted(counts)) or "none"
            return f"{name}: {inner}"

        return "; ".join(
            [
                part("outcome_unknown", self.unknown),
                part("provider_pending", self.provider_pending),
                part("stale executing", self.stale_executing),
                part("approved, never executed", self.approved),
            ]
        )


def refunds_reconcile(*, now: datetime | None = None) -> ReconcileReport:
    """Settle every request whose provider outcome we do not know, and run lost executions.

    (a) `outcome_unknown`: look the key up at the provider; a refund found settles it;
        none found settles `failed`, but only once the original call can no longer land.
    (a') `provider_pending`: ask the provider again; only its answer settles the request.
    (b) `executing` for longer than in_flight_window(): a worker died around its provider
        call. Look the key up; if the provider has nothing, re-submit with the SAME key —
        the attempt may never have left us, and the provider deduplicates by key anyway.
    (c) `approved` for longer than APPROVED_GRACE: its task never ran; execute it now.

    Nothing is ever submitted under a new key. Safe to run concurrently with itself and with
    execute tasks: every request is taken by a compare-and-swap or a skip-locked row lock.
    """
    now = now or timezone.now()
    report = ReconcileReport()
    cutoff = now - in_flight_window()
    for pk in _pks(status=S.OUTCOME_UNKNOWN):
        report.unknown[_outcome(refund_reconcile_unknown(refund_pk=pk, now=now))] += 1
    for pk in _pks(status=S.PROVIDER_PENDING):
        outcome = refund_reconcile_provider_pending(refund_pk=pk)
        report.provider_pending[_outcome(outcome)] += 1
    for pk in _pks(status=S.EXECUTING, updated_at__lt=cutoff):
        outcome = refund_reconcile_stale_executing(refund_pk=pk, now=now)
        report.stale_executing[_outcome(outcome)] += 1
    for pk in _pks(status=S.APPROVED, updated_at__lt=now - APPROVED_GRACE):
        report.approved[_outcome(refund_execute(refund_pk=pk, skip_locked=True))] += 1
    return report


def _pks(**filters) -> list[int]:
    return list(
        RefundRequest.objects.filter(**filters).order_by("updated_at").values_list("pk", flat=True)
    )


def _outcome(status: str | None) -> str:
    return status or "taken by another process"


def _in_status(refund_pk: int, status: str) -> RefundRequest | None:
    return (
        RefundRequest.objects.select_related("order", "ticket")
        .filter(pk=refund_pk, status=status)
        .first()
    )


def refund_reconcile_unknown(*, refund_pk: int, now: datetime | None = None) -> str | None:
    """Settle one `outcome_unknown` request from what the provider holds under its key."""
    now = now or timezone.now()
    refund = _in_status(refund_pk, S.OUTCOME_UNKNOWN)
    if refund is None:
        return None
    found = _look_up(refund)
    if isinstance(found, Unanswered):
        return UNRESOLVED
    if found is not None:
        return _settle_from_provider(refund=refund, found=found, source="reconcile")
    if refund.updated_at > now - in_flight_window():
        # A slow provider may still be processing the call we gave up on.
        return UNRESOLVED
    # The provider itself answered, for this key and the bound payment, that it holds no
    # refund: the only ground on which a request that reached it may be called failed.
    return _settle(
        refund=refund,
        to_status=S.FAILED,
        detail={
            "error": "the provider has no refund under this idempotency key",
            "source": "reconcile",
            "provider_called": True,
        },
    )


def refund_reconcile_provider_pending(*, refund_pk: int) -> str | None:
    """Ask the provider about a refund it accepted but had not settled."""
    refund = _in_status(refund_pk, S.PROVIDER_PENDING)
    if refund is None:
        return None
    found = _look_up(refund)
    if isinstance(found, Unanswered):
        return UNRESOLVED
    if found is None:
        # It accepted the refund under this key: an empty answer now is the provider's
        # inconsistency, not a failure. Keep asking and let a person look.
        logger.error(
            "Refund %s: the provider no longer reports its accepted refund %s",
            refund.request_id,
            refund.provider_refund_id,
        )
        return UNRESOLVED
    return _settle_from_provider(refund=refund, found=found, source="reconcile")


class Unanswered:
    """The provider could not be asked this time: no conclusion either way."""


def _look_up(refund: RefundRequest) -> ProviderRefund | Unanswered | None:
    """What the provider holds under the request's key: its refund, None, or Unanswered."""
    try:
        return get_adapter().find_refund(
            idempotency_key=refund.request_id,
            payment_reference=bound_params(refund)["payment_reference"],
        )
    except ProviderUnknownOutcome as exc:
        logger.info("Refund %s: provider lookup failed (%s); next pass", refund.request_id, exc)
        return Unanswered()


def refund_reconcile_stale_executing(*, refund_pk: int, now: datetime | None = None) -> str | None:
    """Settle one request left `executing` by a worker that died around its provider call."""
    now = now or timezone.now()
    # Take the attempt over by restamping the row: a concurrent sweep now sees it as fresh.
    taken = RefundRequest.objects.filter(
        pk=refund_pk, status=S.EXECUTING, updated_at__lt=now - in_flight_window()
    ).update(updated_at=now)
    if not taken:
        return None
    refund = RefundRequest.objects.select_related("order", "ticket").get(pk=refund_pk)
    found = _look_up(refund)
    if isinstance(found, Unanswered):
        return UNRESOLVED
    if found is not None:
        return _settle_from_provider(refund=refund, found=found, source="reconcile")
    # `executing` was committed, so the call may have reached the provider: settling `failed`
    # here could hide a refund that exists. Re-send exactly what the approval bound under the
    # same key; the provider deduplicates, and its answer settles the request.
    problem = approval_problem(
        refund=refund, confirmation=refund.confirmations.order_by("-version").first()
    )
    if problem is not None:
        logger.error(
            "Refund %s changed after approval (%s); re-sending the approved "
            "parameters, not the row",
            refund.request_id,
            problem["error"],
        )
    return _submit(refund=refund, source="reconcile-resubmit")
