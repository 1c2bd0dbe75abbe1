"""The helpdesk in a real browser: the proposal box follows the refund to "refunded" without a
reload, the assistant's answer becomes a reply the agent edits and sends, a refund over the
agent's limit leads to the escalation form, and nothing is wider than a phone's screen."""

import re

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from orders.models import Customer
from refunds.models import RefundRequest
from refunds.services import refund_approve
from tests import services
from tests.conftest import TEST_QUEUE
from tests.fakes.openai_server import text_reply
from tickets.models import Ticket, TicketMessage

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

RUN_TIMEOUT_MS = 30_000
# The proposal box asks every 5 s; the worker executes the refund in about as long.
REFUND_TIMEOUT_MS = 45_000


@pytest.fixture
def offline_planner(settings):
    settings.LLM_PROVIDER = "offline"


def approve_as_the_demo_reviewer(refund: RefundRequest) -> None:
    confirmation = refund.confirmations.get(status="pending")
    refund_approve(
        refund=refund,
        reviewer=get_user_model().objects.get(username="reviewer"),
        version=confirmation.version,
        fingerprint=confirmation.fingerprint,
        note="Photo checks out.",
    )


def ask_the_assistant(page, question: str) -> None:
    page.fill("#assistant-message", question)
    page.click("#assistant-ask")
    page.locator("#assistant-answer").wait_for(state="visible", timeout=RUN_TIMEOUT_MS)


def test_the_proposal_follows_the_refund_and_the_answer_becomes_a_reply(
    page, login, demo, offline_planner, celery_worker
):
    login("agent")
    page.goto("/tickets/TCK-1001/")
    ask_the_assistant(page, "The mug arrived broken, please refund it")
    status = page.locator("#assistant-proposal-status")
    expect(status).to_have_text(re.compile("^waiting for a reviewer$", re.I))
    assert "Proposed refund 129.00 CNY" in page.locator("#assistant-proposal").inner_text()
    page.evaluate("window.stillTheSamePage = true")

    refund = RefundRequest.objects.get(order__order_id="202610110087")
    approve_as_the_demo_reviewer(refund)

    expect(status).to_have_attribute("data-status", "succeeded", timeout=REFUND_TIMEOUT_MS)
    expect(status).to_have_text(re.compile("^refunded$", re.I))
    assert page.evaluate("window.stillTheSamePage") is True
    refund.refresh_from_db()
    assert refund.status == "succeeded"

    page.click("#assistant-use-answer")

    # The customer's draft as things are now, as an internal note until the agent chooses.
    reply_box = page.locator("#reply-body")
    expect(reply_box).to_have_value(re.compile(r"^Dear Li Wei,"))
    expect(reply_box).to_be_focused()
    answer = reply_box.input_value()
    assert "We have refunded 129.00 CNY for your ceramic mug" in answer
    assert refund.request_id not in answer
    assert page.locator("#reply-internal").is_checked()
    expect(page.locator("#reply-send")).to_have_text("Add internal note")
    ticket = Ticket.objects.get(reference="TCK-1001")
    assert not ticket.messages.filter(author_kind="agent", visibility="public").exists()

    edited = "Hello Li Wei, your refund of 129.00 CNY is on its way.\n\n" + answer
    reply_box.fill(edited)
    page.check("#reply-public")
    expect(page.locator("#reply-send")).to_have_text("Send reply to li.wei@example.com")
    page.click("#reply-send")
    page.wait_for_url("**/tickets/TCK-1001/")

    assert "Reply queued for sending to the customer." in page.locator(".flash").inner_text()
    reply = ticket.messages.get(author_kind="agent", visibility="public")
    assert reply.body == edited.strip()
    delivery = page.locator(f"#message-{reply.pk} .delivery").inner_text()
    assert re.match(r"(Queued|Sent)\b", delivery), delivery


def test_a_refund_over_the_agents_limit_leads_to_the_escalation_form(
    page, login, demo, offline_planner, celery_worker
):
    login("agent")
    page.goto("/tickets/TCK-1004/")
    ask_the_assistant(page, "The headphones stopped charging, please refund them in full")

    page.locator("#assistant-escalate").wait_for(state="visible")
    # It names who can take it, in the policy's own words on the limit.
    expect(page.locator("#assistant-escalate-text")).to_have_text(
        "Refund of 899.00 CNY on order 202610150012 is over what your role may propose. "
        "The policy (R-5): requested 899.00 CNY exceeds the agent limit of 500.00 CNY; "
        "escalate to a supervisor."
    )
    page.click("#assistant-escalate-button")

    note = page.locator("#escalate-note")
    expect(note).to_be_focused()
    assert note.input_value() == (
        "Refund of 899.00 CNY on order 202610150012 is over my limit; "
        "the assistant proposes escalation."
    )
    assert not RefundRequest.objects.filter(order__order_id="202610150012").exists()
    page.locator("#escalate-form button[type=submit]").click()
    page.wait_for_url("**/tickets/TCK-1004/")
    expect(page.locator("#escalated-badge")).to_be_visible()
    assert Ticket.objects.get(reference="TCK-1004").escalated is True


def test_an_answer_the_refund_records_contradict_is_flagged_under_it(
    page, login, demo, fake_openai
):
    fake_openai.enqueue(text_reply("Good news: your refund has been processed."))
    worker = services.WorkerProcess(TEST_QUEUE, extra_env=fake_openai.worker_env).start()
    try:
        login("agent")
        page.goto("/tickets/TCK-1002/")
        ask_the_assistant(page, "Tell the customer about the lamp")

        flag = page.locator("#assistant-answer-contradicts")
        expect(flag).to_be_visible()
    finally:
        worker.stop()
    assert "There is no refund request on this ticket; nothing has been refunded." in (
        flag.inner_text()
    )


def test_nothing_is_wider_than_a_phone(page, login, demo):
    # A reply whose delivery failed, so the ticket page has every kind of message row.
    ticket = Ticket.objects.get(reference="TCK-1001")
    TicketMessage.objects.create(
        ticket=ticket,
        author_kind="agent",
        body="Could you send a photo of the box?",
        visibility="public",
        delivery="failed",
        delivery_error="SMTPRecipientsRefused: 550 5.1.1 mailbox unavailable for li.wei",
        message_id="<tck-1001.phone@desk.example.com>",
    )
    li_wei = Customer.objects.get(email="li.wei@example.com")
    page.set_viewport_size({"width": 390, "height": 844})
    login("agent")

    for path in ("/tickets/", "/tickets/TCK-1001/", f"/customers/{li_wei.pk}/"):
        page.goto(path)
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 390, f"{path} is {width}px wide"
