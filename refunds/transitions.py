"""The RefundRequest state machine (DESIGN §4). Every status change goes through here."""

from django.db import transaction
from django.utils import timezone

from refunds.models import RefundEvent, RefundRequest

S = RefundRequest.Status

ALLOWED = {
    S.PENDING_APPROVAL: {S.APPROVED, S.REJECTED, S.EXPIRED},
    S.APPROVED: {S.EXECUTING},
    S.EXECUTING: {S.SUCCEEDED, S.FAILED, S.OUTCOME_UNKNOWN, S.PROVIDER_PENDING},
    # Only reconciliation settles an unknown outcome.
    S.OUTCOME_UNKNOWN: {S.SUCCEEDED, S.FAILED, S.PROVIDER_PENDING},
    # Only the provider's own answer, polled by reconciliation, settles an accepted refund.
    S.PROVIDER_PENDING: {S.SUCCEEDED, S.FAILED},
    # Re-proposing an intent whose confirmation lapsed renews it as a new version.
    S.EXPIRED: {S.PENDING_APPROVAL},
}


class IllegalTransition(Exception):
    pass


def refund_transition(*, refund: RefundRequest, to_status: str, actor=None,
                      detail: dict | None = None, **fields) -> bool:
    """Compare-and-swap `refund` from its current status to `to_status`, with an event row.

    Returns False (and changes nothing) when another process moved the request first.
    `fields` are extra columns written in the same UPDATE (e.g. provider_refund_id).
    Must run inside a transaction so the update and its event commit together.
    """
    from_status = refund.status
    if to_status not in ALLOWED.get(from_status, set()):
        raise IllegalTransition(f"{refund.request_id}: {from_status} -> {to_status}")
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("refund_transition must run inside transaction.atomic()")
    updated = RefundRequest.objects.filter(pk=refund.pk, status=from_status).update(
        status=to_status, updated_at=timezone.now(), **fields
    )
    if not updated:
        return False
    RefundEvent.objects.create(refund_request=refund, from_status=from_status,
                               to_status=to_status, actor=actor, detail=detail or {})
    refund.refresh_from_db()
    return True
