import pytest

from refunds import tasks
from refunds.services import refund_approve
from tests.factories import RefundProposalFactory

pytestmark = pytest.mark.django_db


def test_the_on_commit_callback_enqueues_execute_refund(agent_user, reviewer, monkeypatch,
                                                       django_capture_on_commit_callbacks):
    refund = RefundProposalFactory(requested_by=agent_user)
    delayed = []
    monkeypatch.setattr(tasks.execute_refund, "delay", delayed.append)

    with django_capture_on_commit_callbacks(execute=True):
        refund_approve(refund=refund, reviewer=reviewer, version=1,
                       fingerprint=refund.confirmations.get().fingerprint)

    assert delayed == [refund.pk]
