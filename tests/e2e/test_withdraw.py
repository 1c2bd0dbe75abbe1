"""Withdrawing a proposal in the browser (DESIGN §17): from the ticket's refunds and from the
assistant's proposal box."""

from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from agent.models import AgentRun, RunEvent
from refunds.models import RefundRequest
from refunds.services import refund_propose
from tests.e2e.overflow import PHONE, assert_fits
from tickets.models import Ticket

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def propose(username: str) -> RefundRequest:
    ticket = Ticket.objects.get(reference="TCK-1001")
    return refund_propose(
        ticket=ticket,
        order=ticket.order,
        amount=Decimal("129.00"),
        reason="damaged",
        explanation="Broken on arrival.",
        requested_by=get_user_model().objects.get(username=username),
        role="agent",
    ).refund


def test_the_requester_withdraws_a_proposal_from_the_ticket_page(page, login, demo):
    refund = propose("agent")
    login("agent")
    page.goto("/tickets/TCK-1001/")

    page.fill(f"#withdraw-note-{refund.pk}", "The customer keeps the mug.")
    page.click(f"#withdraw-{refund.request_id}")

    page.locator(".flash", has_text=f"Refund {refund.request_id} withdrawn.").wait_for()
    assert "Withdrawn" in page.locator("#refunds-panel").inner_text()
    assert page.locator(f"#withdraw-{refund.request_id}").count() == 0
    refund.refresh_from_db()
    assert (refund.status, refund.confirmations.get().decision_note) == (
        "withdrawn",
        "The customer keeps the mug.",
    )


def test_the_requester_withdraws_the_proposal_in_the_assistant_box(page, login, demo):
    # Given a finished run whose proposal waits for a reviewer
    refund = propose("agent")
    run = AgentRun.objects.create(
        ticket=refund.ticket,
        started_by=refund.requested_by,
        actor_role="agent",
        status="completed",
    )
    approval = {
        "request_id": refund.request_id,
        "version": 1,
        "order_id": refund.order.order_id,
        "amount": "129.00",
        "currency": refund.currency,
    }
    RunEvent.objects.create(run=run, seq=1, type="approval.required", data=approval)
    RunEvent.objects.create(run=run, seq=2, type="run.completed", data={})
    login("agent")
    page.goto("/tickets/TCK-1001/")
    button = page.locator("#assistant-proposal-withdraw")
    button.wait_for(state="visible")

    # When its requester presses Withdraw in the proposal box, it asks why first
    button.click()
    expect(page.locator("#assistant-withdraw-note")).to_be_focused()
    refund.refresh_from_db()
    assert refund.status == "pending_approval"  # nothing happens before the second press
    # (and "Keep it" takes the question back)
    page.click("#assistant-withdraw-keep")
    expect(button).to_be_visible()
    button.click()
    page.fill("#assistant-withdraw-note", "The customer found the mug was fine.")
    page.click("#assistant-withdraw-confirm")

    # Then the box says so, and the request is withdrawn with the reason given
    page.locator("#assistant-proposal-status[data-status=withdrawn]").wait_for()
    assert button.is_hidden()
    assert page.locator("#assistant-withdraw-form").is_hidden()
    refund.refresh_from_db()
    assert (refund.status, refund.confirmations.get().decision_note) == (
        "withdrawn",
        "The customer found the mug was fine.",
    )


def test_the_assistant_box_offers_no_withdraw_to_another_agent(page, login, demo):
    refund = propose("agent2")
    run = AgentRun.objects.create(
        ticket=refund.ticket, started_by=refund.requested_by, actor_role="agent", status="completed"
    )
    approval = {"request_id": refund.request_id, "version": 1, "amount": "129.00"}
    RunEvent.objects.create(run=run, seq=1, type="approval.required", data=approval)
    RunEvent.objects.create(run=run, seq=2, type="run.completed", data={})
    login("agent")
    page.goto("/tickets/TCK-1001/")

    page.locator("#assistant-proposal-checked", has_text="Checked at").wait_for()

    assert page.locator("#assistant-proposal-withdraw").is_hidden()


def test_the_ticket_page_with_a_withdraw_button_fits_a_phone(page, login, demo):
    refund = propose("agent")
    page.set_viewport_size(PHONE)
    login("agent")

    page.goto("/tickets/TCK-1001/")

    page.locator(f"#withdraw-{refund.request_id}").wait_for()
    assert_fits(page, "the ticket page with a withdraw button")
