"""A reviewer's decision on a proposal's current version: approved (and its execution enqueued
on commit) or rejected (DESIGN §8). Four eyes, the exact version and its fingerprint are
checked, four eyes again under the locks, and the policy is evaluated again under the order
lock.

Apart from the proposal because these are the reviewer's side: who may decide, what they
decide, and the decision recorded whole or not at all.
"""

from datetime import datetime
from typing import Any

from django.contrib.auth.models import User
from django.utils import timezone

from config.celery import enqueue_on_commit
from config.roles import is_reviewer, support_role
from config.transactions import atomic_retried
from refunds.errors import ReviewForbidden, StaleConfirmation
from refunds.models import RefundConfirmation, RefundRequest
from refunds.services.shared import (
    _changed_meanwhile,
    _evaluate,
    _fingerprint_of,
    _label,
    _locked,
    _refuse_unless_allowed,
    _refuse_unless_holdable,
)
from refunds.signals import tell_ticket
from refunds.transitions import confirmation_transition, refund_transition

S = RefundRequest.Status
C = RefundConfirmation.Status


def _requester_role(refund: RefundRequest) -> str | None:
    """The role the request was proposed with: the run's, else the requester's current one."""
    run = refund.run
    if run is not None:
        return run.actor_role
    return support_role(refund.requested_by)


def _check_reviewer(*, refund: RefundRequest, reviewer: User) -> None:
    """Four eyes: whoever proposed any version of the request may not decide it."""
    if not is_reviewer(reviewer):
        raise ReviewForbidden("Only refund reviewers may decide refunds.")
    if reviewer.pk in proposers_of(refund):
        raise ReviewForbidden(
            "You proposed this refund; another reviewer must decide it.", code="own_request"
        )


def proposers_of(refund: RefundRequest) -> set[int]:
    """Who proposed any version, and who edited the order into one (order_edit): they chose
    what the reviewer is asked to approve."""
    proposed = refund.confirmations.exclude(proposed_by=None).values_list(
        "proposed_by_id", flat=True
    )
    edited = refund.events.filter(detail__has_key="order_edited").values_list("actor_id", flat=True)
    return {refund.requested_by_id, *proposed, *edited}


def _current_pending(*, refund: RefundRequest, version: int, now: datetime) -> RefundConfirmation:
    """The confirmation `version` if it is the one to decide now, else StaleConfirmation."""
    if refund.status != S.PENDING_APPROVAL:
        raise StaleConfirmation(
            f"Refund {refund.request_id} is {refund.get_status_display().lower()}; "
            f"there is nothing to decide.",
            extra={"status": refund.status},
        )
    current = refund.confirmations.filter(status=C.PENDING).first()
    if current is None or current.version != version:
        raise StaleConfirmation(
            f"Version {version} is not the current version of refund {refund.request_id}; "
            f"reload and review the current one.",
            extra={"current_version": current.version if current else None},
        )
    if current.expires_at <= now:
        raise StaleConfirmation(
            f"Version {version} of refund {refund.request_id} expired; it must be proposed again.",
            code="confirmation_expired",
            extra={"expires_at": current.expires_at.isoformat()},
        )
    return current


@atomic_retried
def refund_approve(
    *,
    refund: RefundRequest,
    reviewer: User,
    version: int,
    fingerprint: str,
    note: str = "",
    now: datetime | None = None,
) -> RefundRequest:
    """Approve exactly (refund, version, fingerprint) and enqueue its execution on commit.

    Any refusal raises and changes nothing.
    """
    now = now or timezone.now()
    _check_reviewer(refund=refund, reviewer=reviewer)
    # The order first: two approvals on one order are serialised, so together they can never
    # refund more than was paid.
    locked = _locked(refund, related=("order", "ticket", "run", "requested_by"))
    order = locked.order
    _check_reviewer(refund=locked, reviewer=reviewer)
    confirmation = _current_pending(refund=locked, version=version, now=now)
    recomputed = _fingerprint_of(locked)
    if fingerprint != confirmation.fingerprint or fingerprint != recomputed:
        raise StaleConfirmation(
            "The refund parameters changed since you looked; reload and review them again.",
            code="fingerprint_mismatch",
            extra={"current_version": confirmation.version},
        )
    # A proposal made before amounts were checked at proposal may hold what its currency cannot
    # express: refused here, not at the provider after the approval.
    _refuse_unless_holdable(amount=locked.amount, currency=locked.currency)
    # R-2 (amount <= paid - refunded) and the requester's R-5 total are evaluated here, under
    # the order lock: what they count includes any approval that held the lock before us.
    evaluation = _evaluate(
        order=order,
        amount=locked.amount,
        reason=locked.reason,
        role=_requester_role(locked),
        requester_id=locked.requested_by_id,
        excluding=locked,
        reviewer_id=reviewer.pk,
        now=now,
    )
    _refuse_unless_allowed(evaluation, "The policy refuses this refund now.")
    _record_decision(
        refund=locked,
        confirmation=confirmation,
        to_status=S.APPROVED,
        reviewer=reviewer,
        note=note,
        now=now,
        detail={"version": version, "fingerprint": fingerprint, "note": note},
        policy_version_id=evaluation.policy_version_id,
        policy_evaluation=evaluation.verdicts,
    )
    # The one note for the approval: execution reports only its result (refunds.execution).
    tell_ticket(
        locked,
        f"{_label(locked)} for order {order.order_id} approved by "
        f"{reviewer.get_username()}; sending it to the payment provider.",
    )
    # The approval stands even if the broker is down right now: the publish failure is logged
    # and reconcile_refunds executes approved requests whose task never ran.
    enqueue_on_commit("refunds.tasks.execute_refund", locked.pk)
    return locked


def _record_decision(
    *,
    refund: RefundRequest,
    confirmation: RefundConfirmation,
    to_status: str,
    reviewer: User,
    note: str,
    now: datetime,
    detail: dict,
    **fields: Any,
) -> None:
    """Decide `confirmation` and move `refund` with it (approved or rejected, the same word
    for both), or raise and roll both back. Caller holds SELECT FOR UPDATE on `refund`."""
    decided = confirmation_transition(
        confirmation=confirmation,
        to_status=to_status,
        decided_by=reviewer,
        decided_at=now,
        decision_note=note,
    )
    if not decided or not refund_transition(
        refund=refund, to_status=to_status, actor=reviewer, detail=detail, **fields
    ):
        raise _changed_meanwhile(refund)


@atomic_retried
def refund_reject(
    *,
    refund: RefundRequest,
    reviewer: User,
    version: int,
    note: str = "",
    now: datetime | None = None,
) -> RefundRequest:
    """Reject the current version: the request ends as rejected. Refusals change nothing."""
    now = now or timezone.now()
    _check_reviewer(refund=refund, reviewer=reviewer)
    locked = _locked(refund)
    _check_reviewer(refund=locked, reviewer=reviewer)
    confirmation = _current_pending(refund=locked, version=version, now=now)
    _record_decision(
        refund=locked,
        confirmation=confirmation,
        to_status=S.REJECTED,
        reviewer=reviewer,
        note=note,
        now=now,
        detail={"version": version, "note": note},
    )
    reason = f": {note}" if note else "."
    tell_ticket(
        locked,
        f"{_label(locked)} for order {locked.order.order_id} rejected by "
        f"{reviewer.get_username()}{reason}",
    )
    return locked
