import pytest
from django.utils import timezone

from refunds.models import RefundConfirmation, RefundRequest
from tests.factories import RefundConfirmationFactory, RefundRequestFactory


@pytest.fixture
def make_refund(db, agent_user, reviewer):
    """A refund request in `status` with version 1 decided accordingly, as refund_approve
    (or refund_reject, ...) leaves it."""

    def make(status: str = RefundRequest.Status.APPROVED, **fields) -> RefundRequest:
        refund = RefundRequestFactory(status=status, requested_by=agent_user, **fields)
        decided = {
            RefundRequest.Status.PENDING_APPROVAL: RefundConfirmation.Status.PENDING,
            RefundRequest.Status.REJECTED: RefundConfirmation.Status.REJECTED,
            RefundRequest.Status.EXPIRED: RefundConfirmation.Status.EXPIRED,
        }.get(status, RefundConfirmation.Status.APPROVED)
        pending = decided == RefundConfirmation.Status.PENDING
        RefundConfirmationFactory(
            refund_request=refund,
            status=decided,
            decided_by=None if pending else reviewer,
            decided_at=None if pending else timezone.now(),
        )
        return refund

    return make
