import pytest
from django.utils import timezone

from refunds.adapters import simulated_calls
from refunds.models import RefundConfirmation, RefundRequest
from tests.factories import RefundConfirmationFactory, RefundRequestFactory
from tests.fakes.stripe_server import FakeStripe


@pytest.fixture
def simulated_provider(settings):
    """The simulated provider in normal mode, with an empty call log."""
    settings.REFUND_ADAPTER = "simulated"
    settings.SIMULATED_PROVIDER_MODE = "normal"
    settings.SIMULATED_PROVIDER_LATENCY_S = 0
    simulated_calls.reset()
    yield simulated_calls
    simulated_calls.reset()


@pytest.fixture
def stripe_server(settings):
    """The fake Stripe API on a random local port, with the adapter pointed at it."""
    fake = FakeStripe().start()
    settings.REFUND_ADAPTER = "stripe"
    settings.STRIPE_API_KEY = fake.api_key
    settings.STRIPE_API_BASE = fake.url
    yield fake
    fake.stop()


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
        RefundConfirmationFactory(refund_request=refund, status=decided,
                                  decided_by=None if pending else reviewer,
                                  decided_at=None if pending else timezone.now())
        return refund

    return make
