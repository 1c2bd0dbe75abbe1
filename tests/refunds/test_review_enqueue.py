import pytest

from refunds.services import refund_approve
from tests.factories import RefundProposalFactory

pytestmark = pytest.mark.django_db


def test_the_on_commit_callback_enqueues_execute_refund(
    agent_user, reviewer, enqueued, django_capture_on_commit_callbacks
):
    refund = RefundProposalFactory(requested_by=agent_user)

    with django_capture_on_commit_callbacks(execute=True):
        refund_approve(
            refund=refund,
            reviewer=reviewer,
            version=1,
            fingerprint=refund.confirmations.get().fingerprint,
        )

    assert enqueued == [refund.pk]
