"""Withdrawal (DESIGN §17): the requester or a supervisor takes a pending proposal back."""

from decimal import Decimal

import pytest

from refunds.errors import NotWithdrawable, StaleConfirmation, WithdrawForbidden
from refunds.models import RefundRequest
from refunds.services import refund_approve, refund_withdraw
from tests.factories import RefundProposalFactory, TicketFactory
from tests.refunds.conftest import snapshot
from tickets.models import TicketMessage

pytestmark = pytest.mark.django_db


@pytest.fixture
def refund(agent_user):
    return RefundProposalFactory(requested_by=agent_user)


def test_it_withdraws_the_requesters_own_pending_proposal(refund, agent_user):
    result = refund_withdraw(refund=refund, by=agent_user, note="The customer keeps the mug.")

    assert result.status == "withdrawn"
    assert RefundRequest.objects.get(pk=refund.pk).status == "withdrawn"
    voided = refund.confirmations.get()
    assert (voided.status, voided.decided_by, voided.decision_note) == (
        "withdrawn",
        agent_user,
        "The customer keeps the mug.",
    )
    event = refund.events.last()
    assert (event.from_status, event.to_status, event.actor) == (
        "pending_approval",
        "withdrawn",
        agent_user,
    )
    assert event.detail == {"version": 1, "note": "The customer keeps the mug."}
    note = TicketMessage.objects.filter(ticket=refund.ticket).last()
    assert note.body == (
        f"Refund {refund.request_id} of 129.00 CNY for order {refund.order.order_id} withdrawn "
        f"by {agent_user.username}: The customer keeps the mug."
    )


def test_it_lets_a_supervisor_withdraw_another_agents_proposal(refund, supervisor):
    refund_withdraw(refund=refund, by=supervisor)

    assert RefundRequest.objects.get(pk=refund.pk).status == "withdrawn"
    assert refund.confirmations.get().status == "withdrawn"
    note = TicketMessage.objects.filter(ticket=refund.ticket).last()
    assert note.body.endswith(f"withdrawn by {supervisor.username}.")


@pytest.mark.parametrize("who", ["agent2_user", "reviewer", "intern"])
def test_it_refuses_anyone_but_the_requester_or_a_supervisor(refund, who, request):
    before = snapshot(refund)

    with pytest.raises(WithdrawForbidden) as refused:
        refund_withdraw(refund=refund, by=request.getfixturevalue(who))

    assert (refused.value.status_code, refused.value.code) == (403, "withdraw_forbidden")
    assert snapshot(refund) == before


@pytest.mark.parametrize("status", ["approved", "executing", "succeeded", "rejected", "expired"])
def test_it_refuses_a_request_no_longer_awaiting_review(make_refund, agent_user, status):
    refund = make_refund(status)
    before = snapshot(refund)

    with pytest.raises(NotWithdrawable) as refused:
        refund_withdraw(refund=refund, by=agent_user)

    assert refused.value.status_code == 409
    assert (refused.value.code, refused.value.extra) == (
        "refund_not_withdrawable",
        {"status": status},
    )
    assert snapshot(refund) == before


def test_it_refuses_to_withdraw_twice(refund, agent_user):
    refund_withdraw(refund=refund, by=agent_user)
    before = snapshot(refund)

    with pytest.raises(NotWithdrawable) as refused:
        refund_withdraw(refund=refund, by=agent_user)

    assert refused.value.extra == {"status": "withdrawn"}
    assert snapshot(refund) == before


def test_no_reviewer_can_approve_a_withdrawn_proposal(refund, agent_user, reviewer, enqueued):
    fingerprint = refund.confirmations.get().fingerprint
    refund_withdraw(refund=refund, by=agent_user)
    before = snapshot(refund)

    with pytest.raises(StaleConfirmation) as refused:
        refund_approve(refund=refund, reviewer=reviewer, version=1, fingerprint=fingerprint)

    assert (refused.value.status_code, refused.value.extra) == (409, {"status": "withdrawn"})
    assert snapshot(refund) == before
    assert enqueued == []


def test_a_proposal_after_a_withdrawal_is_a_new_intent(refund, agent_user):
    refund_withdraw(refund=refund, by=agent_user)

    again = RefundProposalFactory(
        ticket=refund.ticket, requested_by=agent_user, explanation="Changed her mind again."
    )

    assert again.pk != refund.pk
    assert (again.status, again.confirmations.get().version) == ("pending_approval", 1)
    assert again.request_id != refund.request_id
    assert RefundRequest.objects.get(pk=refund.pk).status == "withdrawn"


def test_a_withdrawn_amount_does_not_count_toward_the_requesters_limit(agent_user):
    # R-5 limits what one agent proposes on an order in total (500.00 CNY): 400.00 withdrawn
    # and 400.00 proposed again is one refund of 400.00.
    ticket = TicketFactory(order__amount_paid=Decimal("1000.00"))
    first = RefundProposalFactory(ticket=ticket, amount=Decimal("400.00"), requested_by=agent_user)
    refund_withdraw(refund=first, by=agent_user)

    again = RefundProposalFactory(ticket=ticket, amount=Decimal("400.00"), requested_by=agent_user)

    assert (again.status, again.amount) == ("pending_approval", Decimal("400.00"))
