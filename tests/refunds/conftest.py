import pytest
from django.utils import timezone

from refunds.models import RefundConfirmation, RefundEvent, RefundRequest
from tests.factories import RefundConfirmationFactory, RefundRequestFactory
from tickets.models import TicketMessage


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


def snapshot(refund: RefundRequest) -> tuple:
    """Everything a refused decision or withdrawal must leave untouched."""
    return (
        RefundRequest.objects.values().get(pk=refund.pk),
        list(RefundConfirmation.objects.filter(refund_request=refund).values()),
        list(RefundEvent.objects.filter(refund_request=refund).values()),
        TicketMessage.objects.count(),
    )
