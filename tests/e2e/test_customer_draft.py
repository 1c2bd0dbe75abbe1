"""DESIGN §13 in a real browser: after approval, "Use as reply" gives the agent a draft the
customer can read (their language, their name, refunded with the amount, none of the desk's
words) as an internal note until the agent chooses Public reply; a public reply that claims a
refund the records contradict is stopped, shown, and sent only once confirmed."""

import re

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from refunds.models import RefundRequest
from refunds.selectors import current_confirmation
from refunds.services import refund_approve
from tickets.models import Ticket, TicketEvent, TicketMessage

pytestmark = [pytest.mark.e2e, pytest.mark.services, pytest.mark.django_db(transaction=True)]

RUN_TIMEOUT_MS = 45_000
# The proposal box asks every 5 s; the worker executes the refund in about as long.
REFUND_TIMEOUT_MS = 60_000


@pytest.fixture
def offline_planner(settings):
    settings.LLM_PROVIDER = "offline"


def approve(refund: RefundRequest) -> None:
    confirmation = current_confirmation(refund)
    assert confirmation is not None
    refund_approve(
        refund=refund,
        reviewer=get_user_model().objects.get(username="reviewer"),
        version=confirmation.version,
        fingerprint=confirmation.fingerprint,
        note="Seen.",
    )


def test_after_approval_use_as_reply_gives_a_chinese_customer_a_refunded_draft(
    page, login, demo, offline_planner, celery_worker
):
    ticket = Ticket.objects.get(reference="TCK-1004")
    TicketMessage.objects.create(
        ticket=ticket, author_kind="customer", body="耳机用了一周就坏了，请给我退款。"
    )
    login("agent")
    page.goto("/tickets/TCK-1004/")
    page.fill("#assistant-message", "The headphones stopped working, please refund 300.00 CNY")
    page.click("#assistant-ask")
    page.locator("#assistant-answer").wait_for(state="visible", timeout=RUN_TIMEOUT_MS)
    refund = RefundRequest.objects.get(ticket=ticket)

    approve(refund)
    status = page.locator("#assistant-proposal-status")
    expect(status).to_have_attribute("data-status", "succeeded", timeout=REFUND_TIMEOUT_MS)
    page.click("#assistant-use-answer")

    box = page.locator("#reply-body")
    expect(box).to_have_value(re.compile(r"^Li Wei，您好！"))
    draft = box.input_value()
    assert "已为您退款 300.00 元" in draft
    for internal in (refund.request_id, "R-", "version", "balance", "余额"):
        assert internal not in draft
    expect(page.locator("#reply-internal")).to_be_checked()
    expect(page.locator("#reply-public")).not_to_be_checked()
    expect(page.locator("#reply-send")).to_have_text("Add internal note")

    page.check("#reply-public")
    page.locator("#reply-send", has_text="Send reply to").click()
    page.wait_for_url("**/tickets/TCK-1004/")
    expect(page.locator(".flash")).to_contain_text("Reply queued for sending to the customer.")
    sent = ticket.messages.get(author_kind="agent", visibility="public")
    assert sent.body == draft
    assert not TicketEvent.objects.filter(ticket=ticket, type="claims_confirmed").exists()


def test_a_public_reply_with_a_false_claim_is_stopped_then_sent_once_confirmed(page, login, demo):
    claim = "Your refund of 129.00 CNY has been processed and you can expect it in 3 days."
    login("agent")
    page.goto("/tickets/TCK-1001/")

    page.fill("#reply-body", claim)
    page.check("#reply-public")
    page.locator("#reply-send").click()

    claims = page.locator("#reply-claims")
    expect(claims).to_contain_text(claim)
    expect(claims).to_contain_text("no refund request")
    expect(page.locator("#reply-body")).to_have_value(claim)
    ticket = Ticket.objects.get(reference="TCK-1001")
    assert not ticket.messages.filter(visibility="public", author_kind="agent").exists()

    page.click("#reply-confirm-claims")
    page.wait_for_url("**/tickets/TCK-1001/")
    expect(page.locator(".flash")).to_contain_text("Reply queued for sending to the customer.")
    assert ticket.messages.get(visibility="public", author_kind="agent").body == claim
    event = TicketEvent.objects.get(ticket=ticket, type="claims_confirmed")
    assert event.data["claims"][0]["text"] == claim
    expect(page.locator("#history li.history-claims_confirmed")).to_contain_text(claim)
