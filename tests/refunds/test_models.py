"""The refund invariants that live in database constraints (DESIGN §1, invariant 5)."""

from decimal import Decimal

import pytest
from django.db import IntegrityError, transaction

from refunds.models import RefundConfirmation, RefundRequest
from tests.factories import RefundConfirmationFactory, RefundRequestFactory

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("amount", [Decimal("0.00"), Decimal("-1.00")])
def test_it_rejects_a_refund_amount_that_is_not_positive(amount):
    with pytest.raises(IntegrityError), transaction.atomic():
        RefundRequestFactory(amount=amount)
    assert RefundRequest.objects.count() == 0


def test_it_rejects_a_second_request_for_the_same_intent():
    first = RefundRequestFactory()
    with pytest.raises(IntegrityError), transaction.atomic():
        RefundRequestFactory(
            ticket=first.ticket, request_id=first.request_id, amount=Decimal("10.00")
        )
    assert RefundRequest.objects.count() == 1


def test_it_rejects_two_confirmations_with_the_same_version():
    confirmation = RefundConfirmationFactory(status=RefundConfirmation.Status.SUPERSEDED)
    with pytest.raises(IntegrityError), transaction.atomic():
        RefundConfirmationFactory(refund_request=confirmation.refund_request, version=1)
    assert RefundConfirmation.objects.count() == 1


def test_it_rejects_a_second_pending_confirmation_for_one_request():
    first = RefundConfirmationFactory(status=RefundConfirmation.Status.PENDING)
    with pytest.raises(IntegrityError), transaction.atomic():
        RefundConfirmationFactory(
            refund_request=first.refund_request, version=2, status=RefundConfirmation.Status.PENDING
        )
    assert RefundConfirmation.objects.count() == 1


def test_many_decided_versions_may_sit_beside_one_pending():
    first = RefundConfirmationFactory(status=RefundConfirmation.Status.SUPERSEDED)
    RefundConfirmationFactory(
        refund_request=first.refund_request, version=2, status=RefundConfirmation.Status.EXPIRED
    )
    RefundConfirmationFactory(
        refund_request=first.refund_request, version=3, status=RefundConfirmation.Status.PENDING
    )
    assert first.refund_request.confirmations.count() == 3
