"""An order edited in admin while refunds on it are proposed or approved (issue 31, findings 5
and 6): the edit takes the order's lock as an approval does, is refused while a refund is in
flight, and rebinds a pending proposal to the edited order for the reviewer to decide again."""

import threading
from datetime import timedelta
from decimal import Decimal

import pytest
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from orders.models import Order
from policies.selectors import evaluate_refund_for_order
from refunds.errors import OrderFrozen
from refunds.models import RefundConfirmation, RefundRequest, SimulatedRefund
from refunds.services import order_edit, refund_approve, refund_propose
from refunds.tasks import execute_refund
from tests.factories import CustomerFactory, RefundProposalFactory, UserFactory
from tests.refunds.test_review_concurrency import backend_pid, waits_for_a_lock
from tests.services import run_in_threads, wait_for
from tickets.models import TicketMessage


def change_url(order: Order) -> str:
    return f"/admin/orders/order/{order.pk}/change/"


def split(moment) -> tuple[str, str]:
    """A datetime as admin's split date and time inputs show it."""
    if moment is None:
        return "", ""
    local = timezone.localtime(moment)
    return f"{local:%Y-%m-%d}", f"{local:%H:%M:%S}"


def change_form(order: Order, **edits) -> dict:
    """What admin's change form for `order` posts: the order as shown, with `edits` typed in."""
    data = {
        "order_id": order.order_id,
        "customer": order.customer_id,
        "status": order.status,
        "currency": order.currency,
        "amount_paid": f"{order.amount_paid:.2f}",
        "payment_reference": order.payment_reference,
        "note": order.note,
        "lines-TOTAL_FORMS": "0",
        "lines-INITIAL_FORMS": "0",
    }
    for field in ("placed_at", "shipped_at", "delivered_at"):
        data[f"{field}_0"], data[f"{field}_1"] = split(getattr(order, field))
    return {**data, **edits}


def admin_client(username: str = "t_admin", **roles) -> tuple[Client, object]:
    user = UserFactory(username=username, is_staff=True, is_superuser=True, **roles)
    client = Client()
    client.force_login(user)
    return client, user


def api_client(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def versions(refund: RefundRequest) -> list[tuple]:
    return list(
        RefundConfirmation.objects.filter(refund_request=refund)
        .order_by("version")
        .values_list("version", "status", "proposed_by__username")
    )


def approve_url(refund: RefundRequest) -> str:
    return f"/api/refunds/{refund.request_id}/approve/"


# --- 6. an allowed edit rebinds the pending proposal ------------------------------------------


@pytest.mark.django_db
def test_it_supersedes_a_pending_version_when_the_admin_edits_the_payment_reference(
    agent_user, reviewer, simulated_provider, django_capture_on_commit_callbacks
):
    # Given a proposal waiting for review
    refund = RefundProposalFactory(requested_by=agent_user)
    order = refund.order
    old_reference = order.payment_reference
    v1 = refund.confirmations.get()
    client, admin = admin_client()

    # When an admin corrects the order's payment reference
    response = client.post(
        change_url(order), change_form(order, payment_reference="pi_corrected"), follow=True
    )

    # Then the edit is saved, and the admin is told the refund needs review again
    assert response.status_code == 200
    page = response.content.decode()
    assert f"Refund {refund.request_id} now waits for review as version 2" in page
    order.refresh_from_db()
    assert order.payment_reference == "pi_corrected"
    # and version 1 is superseded by version 2, proposed by the same agent, bound to the edit
    assert versions(refund) == [(1, "superseded", "t_agent"), (2, "pending", "t_agent")]
    refund.refresh_from_db()
    v2 = refund.confirmations.get(version=2)
    assert v2.params == {**v1.params, "payment_reference": "pi_corrected"}
    assert v2.fingerprint != v1.fingerprint
    assert v2.expires_at == v1.expires_at
    assert refund.status == "pending_approval"
    edited = refund.events.last()
    assert (edited.from_status, edited.to_status, edited.actor) == (
        "pending_approval",
        "pending_approval",
        admin,
    )
    assert edited.detail == {
        "order_edited": {"payment_reference": [old_reference, "pi_corrected"]},
        "superseded_version": 1,
        "version": 2,
    }
    assert TicketMessage.objects.filter(ticket=refund.ticket).last().body == (
        f"Refund {refund.request_id} of 129.00 CNY: order {order.order_id} was edited by "
        f"t_admin (payment reference {old_reference} → pi_corrected); version 2 replaces "
        f"version 1, waiting for review."
    )

    # When a reviewer approves the version they saw before the edit
    stale = api_client(reviewer).post(
        approve_url(refund), {"version": 1, "fingerprint": v1.fingerprint}, format="json"
    )

    # Then it is refused and nothing changes
    assert (stale.status_code, stale.json()["code"]) == (409, "stale_confirmation")
    assert versions(refund) == [(1, "superseded", "t_agent"), (2, "pending", "t_agent")]

    # When they approve version 2 with its fingerprint
    with django_capture_on_commit_callbacks(execute=False):
        approved = api_client(reviewer).post(
            approve_url(refund), {"version": 2, "fingerprint": v2.fingerprint}, format="json"
        )

    # Then the refund is sent to the edited payment reference
    assert approved.status_code == 200
    assert execute_refund(refund.pk) == "succeeded"
    ledger = SimulatedRefund.objects.get(idempotency_key=refund.request_id)
    assert (ledger.payment_reference, ledger.amount) == ("pi_corrected", Decimal("129.00"))


@pytest.mark.django_db
def test_the_review_page_shows_who_edited_the_order_and_what_changed(agent_user, reviewer):
    refund = RefundProposalFactory(requested_by=agent_user)
    order = refund.order
    old_reference = order.payment_reference
    client, _ = admin_client()
    client.post(change_url(order), change_form(order, payment_reference="pi_corrected"))
    reviewer_client = Client()
    reviewer_client.force_login(reviewer)

    page = reviewer_client.get(f"/review/{refund.request_id}/").content.decode()

    assert (
        f"Order edited: payment reference {old_reference} → pi_corrected; "
        f"version 2 replaces version 1"
    ) in page
    assert "<td>t_admin</td>" in page
    fingerprint = refund.confirmations.get(version=2).fingerprint
    assert f'<dd class="mono wrap-anywhere" id="fingerprint">{fingerprint}</dd>' in page


@pytest.mark.django_db
def test_it_rebinds_a_pending_version_when_the_order_number_or_customer_is_edited(agent_user):
    refund = RefundProposalFactory(requested_by=agent_user)
    order = refund.order
    before = {"order_id": order.order_id, "customer_id": order.customer_id}
    other = CustomerFactory()
    client, _ = admin_client()

    client.post(change_url(order), change_form(order, order_id="99990000000001", customer=other.pk))

    assert versions(refund) == [(1, "superseded", "t_agent"), (2, "pending", "t_agent")]
    assert refund.events.last().detail["order_edited"] == {
        "order_id": [before["order_id"], "99990000000001"],
        "customer_id": [before["customer_id"], other.pk],
    }


@pytest.mark.django_db
def test_an_edit_the_fingerprint_does_not_cover_leaves_the_pending_version_alone(agent_user):
    refund = RefundProposalFactory(requested_by=agent_user)
    order = refund.order
    client, _ = admin_client()

    response = client.post(change_url(order), change_form(order, note="Left at the door."))

    assert response.status_code == 302
    order.refresh_from_db()
    assert order.note == "Left at the door."
    assert versions(refund) == [(1, "pending", "t_agent")]
    assert refund.events.count() == 1


@pytest.mark.django_db
def test_re_proposing_after_an_order_edit_finds_the_rebound_version(agent_user):
    refund = RefundProposalFactory(requested_by=agent_user)
    order = refund.order
    client, _ = admin_client()
    client.post(change_url(order), change_form(order, payment_reference="pi_corrected"))

    def repropose(amount: str):
        return refund_propose(
            ticket=refund.ticket,
            order=order,
            amount=Decimal(amount),
            reason=refund.reason,
            explanation=refund.explanation,
            requested_by=agent_user,
            role="agent",
        )

    same = repropose("129.00")
    corrected = repropose("100.00")

    assert (same.outcome, same.confirmation.version) == ("unchanged", 2)
    assert (corrected.outcome, corrected.confirmation.version) == ("new_version", 3)
    assert corrected.confirmation.params["payment_reference"] == "pi_corrected"
    assert versions(refund) == [
        (1, "superseded", "t_agent"),
        (2, "superseded", "t_agent"),
        (3, "pending", "t_agent"),
    ]


@pytest.mark.django_db
def test_re_proposing_rebinds_a_version_whose_order_changed_outside_the_desk(agent_user, reviewer):
    """A proposal left behind by an edit made before edits rebound it (or made in a shell):
    proposing the same parameters again makes a version the reviewer can approve."""
    refund = RefundProposalFactory(requested_by=agent_user)
    Order.objects.filter(pk=refund.order_id).update(payment_reference="pi_moved")

    again = refund_propose(
        ticket=refund.ticket,
        order=refund.order,
        amount=refund.amount,
        reason=refund.reason,
        explanation=refund.explanation,
        requested_by=agent_user,
        role="agent",
    )

    assert (again.outcome, again.confirmation.version) == ("new_version", 2)
    assert again.confirmation.params["payment_reference"] == "pi_moved"
    assert versions(refund) == [(1, "superseded", "t_agent"), (2, "pending", "t_agent")]


@pytest.mark.django_db
def test_the_admin_who_edited_the_order_cannot_approve_the_version_the_edit_made(agent_user):
    refund = RefundProposalFactory(requested_by=agent_user)
    order = refund.order
    client, admin = admin_client(username="t_admin_reviewer", role="reviewer")
    client.post(change_url(order), change_form(order, payment_reference="pi_mine"))
    v2 = refund.confirmations.get(version=2)

    response = api_client(admin).post(
        approve_url(refund), {"version": 2, "fingerprint": v2.fingerprint}, format="json"
    )

    assert (response.status_code, response.json()["code"]) == (403, "own_request")
    assert RefundRequest.objects.get(pk=refund.pk).status == "pending_approval"
    assert versions(refund) == [(1, "superseded", "t_agent"), (2, "pending", "t_agent")]
    # and the review page offers them no decision the service would refuse
    page = client.get(f"/review/{refund.request_id}/").content.decode()
    assert "Approve 129.00 CNY" not in page
    assert "edited its order; another reviewer must decide it" in page


@pytest.mark.django_db
def test_an_edit_after_the_pending_version_lapsed_makes_no_new_version(agent_user):
    # Given a proposal whose pending version has lapsed unanswered
    refund = RefundProposalFactory(requested_by=agent_user)
    v1 = refund.confirmations.get()
    order = Order.objects.get(pk=refund.order_id)
    admin = UserFactory(username="t_admin", is_staff=True, is_superuser=True)
    order.payment_reference = "pi_redirected"

    # When the admin edits the order's payment reference after that
    rebound = order_edit(order=order, edited_by=admin, now=v1.expires_at + timedelta(seconds=1))

    # Then the order is saved, but the lapsed version is left to the expiry sweep: no new one
    assert rebound == []
    assert Order.objects.get(pk=order.pk).payment_reference == "pi_redirected"
    assert versions(refund) == [(1, "pending", "t_agent")]


# --- 5. an edit of a payment field while a refund is in flight ---------------------------------


@pytest.mark.django_db
def test_it_refuses_an_edit_of_a_payment_field_while_a_refund_is_in_flight(agent_user, reviewer):
    refund = RefundProposalFactory(requested_by=agent_user)
    v1 = refund.confirmations.get()
    refund_approve(refund=refund, reviewer=reviewer, version=1, fingerprint=v1.fingerprint)
    order = Order.objects.get(pk=refund.order_id)
    before = Order.objects.values().get(pk=order.pk)
    events = refund.events.count()
    admin = UserFactory(username="t_admin", is_staff=True, is_superuser=True)
    order.payment_reference = "pi_redirected"

    with pytest.raises(OrderFrozen) as refused:
        order_edit(order=order, edited_by=admin)

    assert (refused.value.status_code, refused.value.code) == (409, "order_payment_frozen")
    assert refused.value.message == (
        f"Order {order.order_id} was not saved: refund {refund.request_id} is approved, and "
        f"the order's payment fields (payment reference) stay as they are until it settles."
    )
    assert Order.objects.values().get(pk=order.pk) == before
    assert refund.events.count() == events


@pytest.mark.django_db
def test_it_saves_an_edit_of_other_fields_while_a_refund_is_in_flight(agent_user, reviewer):
    refund = RefundProposalFactory(requested_by=agent_user)
    v1 = refund.confirmations.get()
    refund_approve(refund=refund, reviewer=reviewer, version=1, fingerprint=v1.fingerprint)
    order = Order.objects.get(pk=refund.order_id)
    admin = UserFactory(username="t_admin", is_staff=True, is_superuser=True)
    order.note = "Customer called."

    assert order_edit(order=order, edited_by=admin) == []

    assert Order.objects.get(pk=order.pk).note == "Customer called."
    assert versions(refund) == [(1, "approved", "t_agent")]


# The edits a raced admin page can carry: every field frozen while a refund is in flight.
FROZEN_EDITS = ["payment_reference", "amount_paid", "currency", "customer", "order_id"]
ROUNDS = 10


def frozen_edit(field: str) -> dict:
    values = {
        "payment_reference": "pi_redirected",
        "amount_paid": "9999.00",
        "currency": "USD",
        "order_id": "99990000000001",
    }
    return {field: values[field] if field != "customer" else CustomerFactory().pk}


def edit_during_approval(*, client, reviewer, agent_user, field: str, monkeypatch) -> tuple:
    """One round: an admin posts an edit of `field` while an approval of a refund on the order
    holds its locks. What came of it: (field, the admin was told nothing was saved, the order
    is as it was, how the refund's execution ended, refunds sent to the original reference)."""
    # Given a proposal, and an admin page of its order loaded before the approval
    refund = RefundProposalFactory(requested_by=agent_user)
    order = refund.order
    v1 = refund.confirmations.get()
    form = change_form(order, **frozen_edit(field))
    before = Order.objects.values().get(pk=order.pk)
    # and an approval that, once it holds its locks, pauses in its policy check until the
    # admin's save is blocked on a lock or has finished
    approving, edit_finished = threading.Event(), threading.Event()
    editor_backend: list[int] = []

    def paused_policy_check(**kwargs):
        approving.set()
        wait_for(
            lambda: (
                edit_finished.is_set()
                or (bool(editor_backend) and waits_for_a_lock(editor_backend[0]))
            ),
            timeout=15,
            what="the admin's save to block or finish",
        )
        return evaluate_refund_for_order(**kwargs)

    def post_edit():
        editor_backend.append(backend_pid())
        assert approving.wait(timeout=15)
        try:
            return client.post(change_url(order), form, follow=True)
        finally:
            edit_finished.set()

    def approve():
        return refund_approve(
            refund=refund, reviewer=reviewer, version=1, fingerprint=v1.fingerprint
        )

    # When the admin saves while the approval holds the order
    with monkeypatch.context() as patch:
        patch.setattr("refunds.services.shared.evaluate_refund_for_order", paused_policy_check)
        approval, response = run_in_threads(2, lambda index: post_edit() if index else approve())

    assert isinstance(approval, RefundRequest), approval
    assert not isinstance(response, Exception), response
    page = response.content.decode()
    return (
        field,
        response.redirect_chain == [(change_url(order), 302)]
        and f"Order {order.order_id} was not saved: refund {refund.request_id}" in page,
        Order.objects.values().get(pk=order.pk) == before,
        execute_refund(refund.pk),
        SimulatedRefund.objects.filter(
            idempotency_key=refund.request_id, payment_reference=before["payment_reference"]
        ).count(),
    )


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_an_admin_edit_posted_during_an_approval_is_refused_and_the_refund_executes(
    postgres, agent_user, reviewer, simulated_provider, enqueued, monkeypatch
):
    client, _ = admin_client()
    fields = [FROZEN_EDITS[round_ % len(FROZEN_EDITS)] for round_ in range(ROUNDS)]

    outcomes = [
        edit_during_approval(
            client=client,
            reviewer=reviewer,
            agent_user=agent_user,
            field=field,
            monkeypatch=monkeypatch,
        )
        for field in fields
    ]

    # Then every approval stands and executes as approved, every edit is refused with a message
    # and leaves the order as it was
    assert outcomes == [(field, True, True, "succeeded", 1) for field in fields]
    assert len(enqueued) == ROUNDS
