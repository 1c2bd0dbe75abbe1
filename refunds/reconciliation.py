"""Reconciling what execution could not see (DESIGN §8): outcomes the provider left unknown,
refunds it accepted but had not settled, `executing` rows whose worker died around its call,
and approved requests whose execute task never ran.

Apart from execution (refunds/execution.py), which it only calls: it submits and settles
through the same steps, under the same idempotency key, and never under a new one.
"""

import logging
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from refunds.adapters import ProviderRefund, ProviderUnknownOutcome, get_adapter
from refunds.execution import (
    UNRESOLVED,
    _settle,
    _settle_from_provider,
    _submit,
    approval_problem,
    bound_params,
    refund_execute,
)
from refunds.models import RefundRequest

logger = logging.getLogger(__name__)

S = RefundRequest.Status

# An approved request still `approved` after this long lost its execute task (the broker
# dropped it, was down at approval, or the worker was down when it was enqueued): the sweep
# executes it. REFUND_APPROVED_GRACE_S, read once at startup like the Celery settings.
APPROVED_GRACE = timedelta(seconds=settings.REFUND_APPROVED_GRACE_S)


def in_flight_window() -> timedelta:
    """How long a provider call can possibly still be in flight.

    One call takes at most REFUND_PROVIDER_TIMEOUT_S; twice that plus half a minute covers the
    task's own overhead and clock skew between hosts. An `executing` row older than this
    belongs to a worker that died; an unanswered call older than this has landed or never will.
    """
    return timedelta(seconds=2 * settings.REFUND_PROVIDER_TIMEOUT_S + 30)


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
