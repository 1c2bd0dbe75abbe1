"""The money-path attacks an audit of the desk found, each reproduced and held.

1. A paid refund recorded as failed, then paid again, after the order's payment reference was
   edited while the refund was in flight.
2. A role limit split across reasons (or tickets) on one order.
3. Four eyes laundered: a user who is also a reviewer approving a request they proposed an
   earlier version of.
8. A provider answer of `pending` recorded as `succeeded`.
"""

from decimal import Decimal

import pytest
from django.contrib.auth.models import Group
from django.test import Client

from config.roles import GROUP_FOR_ROLE, Role
from refunds.adapters import get_adapter
from refunds.errors import RefundRefused, ReviewForbidden
from refunds.execution import _claim_for_execution
from refunds.models import RefundRequest, SimulatedRefund
from refunds.reconciliation import refunds_reconcile
from refunds.services import refund_approve, refund_propose
from refunds.tasks import execute_refund
from tests.factories import OrderFactory, TicketFactory, UserFactory
from tests.refunds.test_reconciliation import left_executing
from tests.services import require_postgres, run_in_threads
from tickets.models import TicketMessage

S = RefundRequest.Status


def propose(ticket, user, amount, reason="damaged", explanation="Broken.", role="agent"):
    return refund_propose(
        ticket=ticket,
        order=ticket.order,
        amount=Decimal(amount),
        reason=reason,
        explanation=explanation,
        requested_by=user,
        role=role,
    ).refund


def approve(refund, reviewer):
    refund.refresh_from_db()
    pending = refund.confirmations.get(status="pending")
    return refund_approve(
        refund=refund, reviewer=reviewer, version=pending.version, fingerprint=pending.fingerprint
    )


def ticket_paid_300():
    return TicketFactory(order__amount_paid=Decimal("300.00"))


# --- 1. paid, recorded as failed, paid again --------------------------------------------------


@pytest.mark.django_db
def test_it_finds_a_paid_refund_by_the_approved_payment_after_the_order_was_edited(
    stripe_server, agent_user, reviewer, supervisor
):
    """A worker died after Stripe refunded 300.00; an admin then "fixed" the order's payment
    reference. The sweep must still find the refund, and the balance must stay spent."""
    ticket = ticket_paid_300()
    refund = approve(propose(ticket, agent_user, "300.00"), reviewer)
    order = ticket.order
    approved_reference = order.payment_reference
    _claim_for_execution(refund_pk=refund.pk, skip_locked=False)
    get_adapter().create_refund(
        idempotency_key=refund.request_id,
        amount=Decimal("300.00"),
        currency="CNY",
        payment_reference=approved_reference,
        metadata={"request_id": refund.request_id},
    )
    left_executing_since_long_ago(refund)
    order.payment_reference = "pi_corrected_by_admin"
    order.save()

    report = refunds_reconcile()

    refund.refresh_from_db()
    assert dict(report.stale_executing) == {"succeeded": 1}
    assert refund.status == S.SUCCEEDED
    assert len(stripe_server.refunds) == 1
    assert [r.params["payment_intent"] for r in stripe_server.create_requests()] == [
        approved_reference
    ]
    second_ticket = TicketFactory(customer=order.customer, order=order)
    with pytest.raises(RefundRefused) as refusal:
        propose(second_ticket, supervisor, "300.00", role="supervisor")
    assert refusal.value.extra["failing_clauses"] == ["R-2"]
    assert RefundRequest.objects.count() == 1


@pytest.mark.django_db
def test_it_does_not_call_an_unknown_outcome_failed_when_the_order_was_edited(
    stripe_server, agent_user, reviewer, settings
):
    ticket = ticket_paid_300()
    refund = approve(propose(ticket, agent_user, "300.00"), reviewer)
    stripe_server.stall_next(1, seconds=2.0)
    settings.REFUND_PROVIDER_TIMEOUT_S = 0.5
    assert execute_refund(refund.pk) == S.OUTCOME_UNKNOWN
    ticket.order.payment_reference = "pi_corrected_by_admin"
    ticket.order.save()
    left_executing_since_long_ago(refund, status=S.OUTCOME_UNKNOWN)

    refunds_reconcile()

    refund.refresh_from_db()
    assert refund.status == S.SUCCEEDED
    assert len(stripe_server.refunds) == 1


def left_executing_since_long_ago(refund, status=S.EXECUTING):
    left_executing(refund)
    RefundRequest.objects.filter(pk=refund.pk).update(status=status)


@pytest.mark.django_db
def test_the_admin_freezes_payment_fields_while_a_refund_is_in_flight(agent_user, reviewer):
    admin = UserFactory(username="t_admin", is_staff=True, is_superuser=True)
    ticket = ticket_paid_300()
    order = ticket.order
    refund = approve(propose(ticket, agent_user, "100.00"), reviewer)
    client = Client()
    client.force_login(admin)
    url = f"/admin/orders/order/{order.pk}/change/"

    page = client.get(url).content.decode()
    response = client.post(
        url,
        {
            "order_id": order.order_id,
            "customer": order.customer_id,
            "status": order.status,
            "currency": "USD",
            "amount_paid": "9999.00",
            "placed_at_0": "2026-10-01",
            "placed_at_1": "10:00:00",
            "payment_reference": "pi_redirected",
            "note": "",
            "lines-TOTAL_FORMS": "0",
            "lines-INITIAL_FORMS": "0",
        },
    )

    assert 'name="payment_reference"' not in page
    assert 'name="amount_paid"' not in page
    assert response.status_code == 302
    before = (order.payment_reference, order.amount_paid, order.currency, order.customer_id)
    order.refresh_from_db()
    assert (order.payment_reference, order.amount_paid, order.currency, order.customer_id) == before
    RefundRequest.objects.filter(pk=refund.pk).update(status=S.SUCCEEDED)
    assert 'name="payment_reference"' in client.get(url).content.decode()


# --- 2. a role limit split across reasons or tickets -----------------------------------------


@pytest.mark.django_db
def test_a_second_reason_on_one_ticket_corrects_the_intent_instead_of_adding_to_it(
    agent_user, reviewer
):
    ticket = TicketFactory(order__amount_paid=Decimal("899.00"))

    propose(ticket, agent_user, "450.00", reason="damaged")
    refund = propose(ticket, agent_user, "449.00", reason="wrong_item")

    assert RefundRequest.objects.count() == 1
    assert (refund.amount, refund.reason) == (Decimal("449.00"), "wrong_item")
    approve(refund, reviewer)
    refund.refresh_from_db()
    assert refund.status == S.APPROVED


@pytest.mark.django_db
def test_a_role_limit_counts_what_the_requester_proposed_on_the_order_elsewhere(agent_user):
    ticket = TicketFactory(order__amount_paid=Decimal("899.00"))
    other_ticket = TicketFactory(customer=ticket.customer, order=ticket.order)
    propose(ticket, agent_user, "450.00", reason="damaged")

    with pytest.raises(RefundRefused) as refusal:
        propose(other_ticket, agent_user, "449.00", reason="wrong_item")

    assert refusal.value.extra["failing_clauses"] == ["R-5"]
    assert (
        "requested 449.00 CNY plus 450.00 CNY already proposed or refunded by the same "
        "requester on this order makes 899.00 CNY, which exceeds the agent limit of "
        "500.00 CNY; escalate to a supervisor"
    ) in refusal.value.message
    assert RefundRequest.objects.count() == 1


@pytest.mark.django_db
def test_a_role_limit_counts_what_the_requester_already_had_refunded(agent_user, reviewer):
    ticket = TicketFactory(order__amount_paid=Decimal("899.00"))
    first = approve(propose(ticket, agent_user, "450.00"), reviewer)
    RefundRequest.objects.filter(pk=first.pk).update(status=S.SUCCEEDED)

    with pytest.raises(RefundRefused) as refusal:
        propose(ticket, agent_user, "100.00")

    assert refusal.value.extra["failing_clauses"] == ["R-5"]
    assert RefundRequest.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_concurrent_proposals_with_other_reasons_and_amounts_make_one_intent(agent_user):
    require_postgres()
    ticket = TicketFactory(order__amount_paid=Decimal("899.00"))
    reasons = ["damaged", "wrong_item", "other"]

    outcomes = run_in_threads(
        12, lambda i: propose(ticket, agent_user, f"{100 + i}.00", reason=reasons[i % 3]).request_id
    )

    assert not [o for o in outcomes if isinstance(o, Exception)]
    assert len(set(outcomes)) == 1
    refund = RefundRequest.objects.get()
    versions = list(refund.confirmations.values_list("version", "status"))
    assert [version for version, _ in versions] == list(range(1, len(versions) + 1))
    assert [status for _, status in versions].count("pending") == 1


# --- 3. four eyes laundered ------------------------------------------------------------------


@pytest.fixture
def agent_and_reviewer(db):
    user = UserFactory(username="t_agent_reviewer", role=Role.AGENT, is_staff=True)
    user.groups.add(Group.objects.get(name=GROUP_FOR_ROLE[Role.REVIEWER]))
    return user


@pytest.mark.django_db
def test_nobody_who_proposed_any_version_may_decide_the_request(agent_and_reviewer, agent_user):
    ticket = TicketFactory()
    propose(ticket, agent_and_reviewer, "129.00", explanation="Broken.")
    refund = propose(ticket, agent_user, "129.00", explanation="Broken; photo attached.")
    assert refund.requested_by == agent_user

    with pytest.raises(ReviewForbidden) as refusal:
        approve(refund, agent_and_reviewer)

    assert refusal.value.code == "own_request"
    refund.refresh_from_db()
    assert refund.status == S.PENDING_APPROVAL


@pytest.mark.django_db
def test_the_api_refuses_a_laundered_approval_with_403(agent_and_reviewer, agent_user):
    ticket = TicketFactory()
    propose(ticket, agent_and_reviewer, "129.00", explanation="Broken.")
    refund = propose(ticket, agent_user, "129.00", explanation="Broken; photo attached.")
    pending = refund.confirmations.get(status="pending")
    client = Client()
    client.force_login(agent_and_reviewer)

    response = client.post(
        f"/api/refunds/{refund.request_id}/approve/",
        {"version": pending.version, "fingerprint": pending.fingerprint},
        content_type="application/json",
    )

    assert response.status_code == 403
    assert response.json()["code"] == "own_request"
    refund.refresh_from_db()
    assert refund.status == S.PENDING_APPROVAL


# --- 8. money accepted by the provider but not settled ----------------------------------------


@pytest.mark.django_db
def test_a_pending_provider_refund_is_not_called_succeeded_until_it_settles(
    simulated_provider, settings, agent_user, reviewer
):
    ticket = TicketFactory()
    refund = approve(propose(ticket, agent_user, "129.00"), reviewer)
    settings.SIMULATED_PROVIDER_MODE = "pending"

    assert execute_refund(refund.pk) == S.PROVIDER_PENDING
    refunds_reconcile()

    refund.refresh_from_db()
    assert refund.status == S.PROVIDER_PENDING
    bodies = list(TicketMessage.objects.filter(ticket=ticket).values_list("body", flat=True))
    assert not [body for body in bodies if "succeeded" in body]
    assert "not settled yet" in bodies[-1]
    SimulatedRefund.objects.update(status="succeeded")

    report = refunds_reconcile()

    refund.refresh_from_db()
    assert dict(report.provider_pending) == {"succeeded": 1}
    assert refund.status == S.SUCCEEDED
    assert refund.provider_refund_id == SimulatedRefund.objects.get().provider_refund_id
    assert [c.operation for c in simulated_provider.calls()] == ["create", "find", "find"]


@pytest.mark.django_db
def test_a_pending_provider_refund_that_fails_ends_failed(stripe_server, agent_user, reviewer):
    stripe_server.new_refund_status = "pending"
    ticket = TicketFactory()
    refund = approve(propose(ticket, agent_user, "129.00"), reviewer)
    assert execute_refund(refund.pk) == S.PROVIDER_PENDING
    for stored in stripe_server.refunds.values():
        stored["status"] = "failed"

    refunds_reconcile()

    refund.refresh_from_db()
    assert refund.status == S.FAILED


@pytest.mark.django_db
def test_money_pending_at_the_provider_counts_against_the_balance(
    simulated_provider, settings, agent_user, supervisor, reviewer
):
    ticket = TicketFactory()
    refund = approve(propose(ticket, agent_user, "129.00"), reviewer)
    settings.SIMULATED_PROVIDER_MODE = "pending"
    execute_refund(refund.pk)
    other_ticket = TicketFactory(customer=ticket.customer, order=ticket.order)

    with pytest.raises(RefundRefused) as refusal:
        propose(other_ticket, supervisor, "1.00", role="supervisor")

    assert refusal.value.extra["failing_clauses"] == ["R-2"]


@pytest.mark.django_db
def test_a_role_limit_counts_only_the_order_it_is_on(agent_user):
    """Guard for the tests above: a proposal on one order never counts another's."""
    ticket = TicketFactory(order__amount_paid=Decimal("899.00"))
    elsewhere = TicketFactory(
        customer=ticket.customer,
        order=OrderFactory(customer=ticket.customer, amount_paid=Decimal("899.00")),
    )
    propose(ticket, agent_user, "450.00")

    refund = propose(elsewhere, agent_user, "450.00")

    assert refund.status == S.PENDING_APPROVAL
