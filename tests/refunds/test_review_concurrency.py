"""Concurrency claims, tested concurrently: real threads against PostgreSQL."""

from decimal import Decimal

import pytest

from config.errors import ApplicationError
from refunds import tasks
from refunds.models import RefundConfirmation, RefundEvent, RefundRequest
from refunds.services import refund_approve, refund_propose
from tests.factories import RefundProposalFactory, TicketFactory
from tests.services import run_in_threads

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def enqueued(monkeypatch) -> list:
    """Execution enqueued after commit, recorded instead of sent to the broker."""
    calls: list = []
    monkeypatch.setattr(tasks.execute_refund, "delay", calls.append)
    return calls


def test_concurrent_identical_proposals_make_one_request(postgres, agent_user):
    ticket = TicketFactory()

    outcomes = run_in_threads(20, lambda _: refund_propose(
        ticket=ticket, order=ticket.order, amount=Decimal("129.00"), reason="damaged",
        explanation="Broken on arrival.", requested_by=agent_user, role="agent"))

    assert [o for o in outcomes if isinstance(o, Exception)] == []
    assert sorted(o.outcome for o in outcomes) == ["created"] + ["unchanged"] * 19
    assert {o.refund.pk for o in outcomes} == {RefundRequest.objects.get().pk}
    assert list(RefundConfirmation.objects.values_list("version", "status")) == [
        (1, "pending")]
    assert RefundEvent.objects.count() == 1


def test_concurrent_approvals_of_one_version_approve_once(postgres, agent_user, reviewer,
                                                          enqueued):
    refund = RefundProposalFactory(requested_by=agent_user)
    fingerprint = refund.confirmations.get().fingerprint

    outcomes = run_in_threads(10, lambda _: refund_approve(
        refund=refund, reviewer=reviewer, version=1, fingerprint=fingerprint))

    approvals = [o for o in outcomes if isinstance(o, RefundRequest)]
    refusals = [o for o in outcomes if isinstance(o, ApplicationError)]
    assert (len(approvals), len(refusals)) == (1, 9)
    assert {r.status_code for r in refusals} == {409}
    assert RefundRequest.objects.get().status == "approved"
    assert RefundEvent.objects.filter(to_status="approved").count() == 1
    assert RefundConfirmation.objects.get().status == "approved"
    assert enqueued == [refund.pk]


def test_concurrent_approvals_of_two_intents_never_exceed_the_amount_paid(
        postgres, agent_user, reviewer, reviewer2, enqueued):
    ticket = TicketFactory()  # its order paid 129.00
    second_ticket = TicketFactory(customer=ticket.customer, order=ticket.order)
    damaged = RefundProposalFactory(ticket=ticket, amount=Decimal("100.00"), reason="damaged",
                                    requested_by=agent_user)
    wrong = RefundProposalFactory(ticket=second_ticket, amount=Decimal("100.00"),
                                  reason="wrong_item", requested_by=agent_user)
    decisions = [(damaged, reviewer), (wrong, reviewer2)]

    outcomes = run_in_threads(2, lambda i: refund_approve(
        refund=decisions[i][0], reviewer=decisions[i][1], version=1,
        fingerprint=decisions[i][0].confirmations.get().fingerprint))

    refusals = [o for o in outcomes if isinstance(o, ApplicationError)]
    assert len(refusals) == 1
    assert (refusals[0].status_code, refusals[0].extra["failing_clauses"]) == (422, ["R-2"])
    statuses = sorted(RefundRequest.objects.values_list("status", flat=True))
    assert statuses == ["approved", "pending_approval"]
    approved = RefundRequest.objects.filter(status="approved")
    assert sum(r.amount for r in approved) <= Decimal("129.00")
    assert enqueued == [approved.get().pk]
