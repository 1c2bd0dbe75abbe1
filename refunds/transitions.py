"""The refund state machines (DESIGN §4): a RefundRequest's and each of its confirmation
versions'. Every status change of either goes through here."""

from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from refunds.models import RefundConfirmation, RefundEvent, RefundRequest
from refunds.signals import tell_ticket_changed

S = RefundRequest.Status
C = RefundConfirmation.Status

ALLOWED: dict[str, set[str]] = {
    S.PENDING_APPROVAL: {S.APPROVED, S.REJECTED, S.EXPIRED, S.WITHDRAWN},
    S.APPROVED: {S.EXECUTING},
    S.EXECUTING: {S.SUCCEEDED, S.FAILED, S.OUTCOME_UNKNOWN, S.PROVIDER_PENDING},
    # Only reconciliation settles an unknown outcome.
    S.OUTCOME_UNKNOWN: {S.SUCCEEDED, S.FAILED, S.PROVIDER_PENDING},
    # Only the provider's own answer, polled by reconciliation, settles an accepted refund.
    S.PROVIDER_PENDING: {S.SUCCEEDED, S.FAILED},
    # Re-proposing an intent whose confirmation lapsed renews it as a new version.
    S.EXPIRED: {S.PENDING_APPROVAL},
}

# A version is decided once: approved or rejected by a reviewer, superseded by a newer version,
# expired unanswered, or voided by the request's withdrawal. Decided versions never change again.
CONFIRMATION_ALLOWED: dict[str, set[str]] = {
    C.PENDING: {C.APPROVED, C.REJECTED, C.SUPERSEDED, C.EXPIRED, C.WITHDRAWN},
}


class IllegalTransition(Exception):
    pass


def _require_transaction(name: str) -> None:
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError(f"{name} must run inside transaction.atomic()")


def refund_transition(
    *,
    refund: RefundRequest,
    to_status: str,
    actor: User | None = None,
    detail: dict | None = None,
    **fields: Any,
) -> bool:
    """Compare-and-swap `refund` from its current status to `to_status`, with an event row.

    Returns False (and changes nothing) when another process moved the request first.
    `fields` are extra columns written in the same UPDATE (e.g. provider_refund_id).
    Must run inside a transaction so the update and its event commit together.
    """
    from_status = refund.status
    if to_status not in ALLOWED.get(from_status, set()):
        raise IllegalTransition(f"{refund.request_id}: {from_status} -> {to_status}")
    _require_transaction("refund_transition")
    updated = RefundRequest.objects.filter(pk=refund.pk, status=from_status).update(
        status=to_status, updated_at=timezone.now(), **fields
    )
    if not updated:
        return False
    RefundEvent.objects.create(
        refund_request=refund,
        from_status=from_status,
        to_status=to_status,
        actor=actor,
        detail=detail or {},
    )
    refund.refresh_from_db()
    tell_ticket_changed(refund, actor)
    return True


def confirmation_transition(
    *, confirmation: RefundConfirmation, to_status: str, **fields: Any
) -> bool:
    """Compare-and-swap `confirmation` from its current status to `to_status`.

    Returns False (and changes nothing) when the version was decided by someone else first.
    `fields` are the decision's columns (decided_by, decided_at, decision_note), written in the
    same UPDATE, so they are set exactly once. A confirmation has no event rows of its own: the
    request's transition that goes with a decision records it. Must run inside the
    transaction that makes that transition.
    """
    from_status = confirmation.status
    if to_status not in CONFIRMATION_ALLOWED.get(from_status, set()):
        raise IllegalTransition(f"{confirmation}: {from_status} -> {to_status}")
    _require_transaction("confirmation_transition")
    updated = RefundConfirmation.objects.filter(pk=confirmation.pk, status=from_status).update(
        status=to_status, **fields
    )
    if not updated:
        return False
    confirmation.refresh_from_db()
    return True
