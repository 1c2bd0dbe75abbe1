"""The live desk in a real browser (DESIGN §14): with TCK-1001 open, a customer's email that
arrives over the inbound API appears in the conversation and in the header's notification
count within 2 s, without a reload; a reply sent from the page shows Queued while a real
Celery worker waits for the mail server, then Sent, without a reload. The page is
photographed at 1280 and 390 px with the header's count, and must not scroll sideways. A ticket
list redraws itself when one of its tickets changes and marks the customer's reply.

Screenshots go to $LIVE_SHOTS_DIR if set (to look at them), else to the test's tmp_path."""

import http.client
import json
import os
import time
from decimal import Decimal
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from refunds.execution import refund_execute
from refunds.services import refund_approve, refund_propose
from tests.conftest import TEST_QUEUE
from tests.e2e.overflow import LAPTOP, PHONE, assert_fits
from tests.e2e.story import HOLD_LIMIT_S
from tests.fakes.smtp_server import HeldSMTPServer
from tests.services import WorkerProcess
from tickets import services
from tickets.models import Ticket, TicketMessage

pytestmark = [pytest.mark.e2e, pytest.mark.services, pytest.mark.django_db(transaction=True)]

INBOUND_SECRET = "live-desk-inbound-secret-0123456789"
CUSTOMER = "li.wei@example.com"
EMAIL_BODY = "The replacement mug arrived, but the handle is chipped too."
REPLY = "Sorry to hear that, Li Wei: we are looking into it now."
DELIVERY_TIMEOUT_MS = 45_000


@pytest.fixture
def desk_settings(settings):
    settings.LLM_PROVIDER = "offline"
    settings.INBOUND_SECRET = INBOUND_SECRET


@pytest.fixture
def held_mail_server():
    server = HeldSMTPServer(HOLD_LIMIT_S).start()
    yield server
    server.stop()


@pytest.fixture
def mail_worker(transactional_db, held_mail_server):
    """A real worker that emails replies to the held mail server."""
    process = WorkerProcess(
        TEST_QUEUE,
        log_name="live-desk",
        extra_env={"EMAIL_URL": held_mail_server.url, "EMAIL_TIMEOUT_S": "30"},
    ).start()
    yield process
    process.stop()


@pytest.fixture
def shots(tmp_path) -> Path:
    directory = Path(os.environ.get("LIVE_SHOTS_DIR") or tmp_path / "shots")
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def email_from_the_customer(
    live_server,
    *,
    body: str,
    message_id: str,
    subject: str = "Re: [TCK-1001] My mug arrived broken",
) -> None:
    url = urlsplit(live_server.url)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
    email = {
        "from": CUSTOMER,
        "name": "Li Wei",
        "subject": subject,
        "body": body,
        "message_id": message_id,
    }
    try:
        connection.request(
            "POST",
            "/api/inbound/email/",
            body=json.dumps(email),
            headers={"Content-Type": "application/json", "X-Inbound-Secret": INBOUND_SECRET},
        )
        response = connection.getresponse()
        assert response.status == 201, response.read()
    finally:
        connection.close()


def photograph(page, directory: Path, name: str) -> None:
    for viewport in (LAPTOP, PHONE):
        page.set_viewport_size(viewport)
        page.screenshot(path=directory / f"{name}-{viewport['width']}.png", full_page=True)
        assert_fits(page, f"{name} at {viewport['width']} px")
        expect(page.locator("#notification-count")).to_be_visible()
    page.set_viewport_size(LAPTOP)


def test_a_customers_email_and_a_replys_delivery_reach_the_open_page_without_a_reload(
    page, login, demo, desk_settings, held_mail_server, mail_worker, live_server, shots
):
    # Given the assignee (agent) with TCK-1001 open, nothing unread
    login("agent")
    page.goto("/tickets/TCK-1001/")
    expect(page.locator("#notification-count")).to_be_hidden()  # no "0" badge
    page.evaluate("window.__sameDocument = true")
    # (the page's streams are open before the email comes)
    page.wait_for_timeout(1000)

    # When the customer's email arrives through the mail gateway
    sent_at = time.monotonic()
    email_from_the_customer(live_server, body=EMAIL_BODY, message_id="<live-desk-1@example.com>")

    # Then, within 2 s and without a reload, it is in the conversation and in the header count
    expect(page.locator("ol.messages")).to_contain_text(EMAIL_BODY, timeout=2_000)
    expect(page.locator("#notification-count")).to_have_text("1", timeout=2_000)
    assert time.monotonic() - sent_at < 2.5
    assert page.evaluate("window.__sameDocument") is True
    photograph(page, shots, "01-customer-email-arrived")

    # When the agent sends a public reply, the mail server not answering yet
    page.fill("#reply-body", REPLY)
    page.check("#reply-public")
    page.click("#reply-send")
    page.wait_for_load_state()
    reply = TicketMessage.objects.get(body=REPLY)
    badge = page.locator(f"#message-{reply.pk} .delivery .badge")
    expect(badge).to_have_text("Queued")
    assert held_mail_server.knocked.wait(30), "the worker never reached the mail server"
    page.evaluate("window.__sameDocument = true")
    photograph(page, shots, "02-reply-queued")

    # Then, once the mail server takes it, the badge says Sent without a reload
    held_mail_server.open()
    expect(badge).to_have_text("Sent", timeout=DELIVERY_TIMEOUT_MS)
    assert page.evaluate("window.__sameDocument") is True
    photograph(page, shots, "03-reply-sent")

    # And the header count still says what is unread; the notifications page lists it
    page.click("#notification-link")
    expect(page.locator("#notifications")).to_contain_text("Li Wei replied on TCK-1001")
    photograph(page, shots, "04-notifications")


def test_the_ticket_list_redraws_itself_and_marks_the_customers_reply(
    page, login, demo, desk_settings, live_server, shots
):
    # Given the agent has read TCK-1004 (theirs), then looks at their list
    login("agent")
    page.goto("/tickets/TCK-1004/")
    page.goto("/tickets/?view=mine")
    row_mark = page.locator('[data-customer-replied="TCK-1004"]')
    expect(row_mark).to_have_count(0)
    page.evaluate("window.__sameDocument = true")
    page.wait_for_timeout(1000)

    # When Li Wei writes again about the headphones
    email_from_the_customer(
        live_server,
        body="The right earbud has stopped too.",
        message_id="<live-desk-list@example.com>",
        subject="Re: [TCK-1004] Headphones stopped working",
    )

    # Then the list marks it without a reload, and the header counts it
    expect(row_mark).to_have_count(1, timeout=3_000)
    expect(page.locator("#notification-count")).to_have_text("1", timeout=3_000)
    assert page.evaluate("window.__sameDocument") is True
    photograph(page, shots, "05-list-customer-replied")


def test_status_assignee_refunds_and_order_panels_follow_changes_made_elsewhere(
    page, login, demo, desk_settings, live_server, shots
):
    # Given the agent with TCK-1001 open: no refund yet, nothing refunded on the mug
    login("agent")
    page.goto("/tickets/TCK-1001/")
    expect(page.locator("#refunds-panel")).to_have_count(0)
    expect(page.locator("#order-panel")).to_contain_text("Refunded0.00 CNY")
    page.evaluate("window.__sameDocument = true")
    page.wait_for_timeout(1000)

    # When someone else proposes the refund, a reviewer approves it and it is executed, and a
    # supervisor sets the ticket pending and assigns it to agent2
    ticket = Ticket.objects.get(reference="TCK-1001")
    users = get_user_model().objects
    refund = refund_propose(
        ticket=ticket,
        order=ticket.order,
        amount=Decimal("129.00"),
        reason="damaged",
        explanation="Arrived broken.",
        requested_by=users.get(username="supervisor"),
        role="supervisor",
    ).refund
    # (by the badges' status classes: the words are the desk's refund vocabulary)
    expect(page.locator("#refunds-panel .badge-pending_approval")).to_have_count(1, timeout=3_000)
    pending = refund.confirmations.get(status="pending")
    refund_approve(
        refund=refund,
        reviewer=users.get(username="reviewer"),
        version=pending.version,
        fingerprint=pending.fingerprint,
    )
    refund_execute(refund_pk=refund.pk)
    services.ticket_set_status(
        ticket=ticket, to_status="pending", actor=users.get(username="supervisor")
    )
    services.ticket_assign(
        ticket=ticket, assignee=users.get(username="agent2"), actor=users.get(username="supervisor")
    )

    # Then the page shows all of it without a reload
    expect(page.locator("#refunds-panel .badge-succeeded")).to_have_count(1, timeout=3_000)
    expect(page.locator("#order-panel")).to_contain_text("Refunded129.00 CNY", timeout=3_000)
    expect(page.locator("#ticket-status")).to_have_text("Pending", timeout=3_000)
    expect(page.locator("#ticket-assignee")).to_have_text("agent2", timeout=3_000)
    assert page.evaluate("window.__sameDocument") is True
    photograph(page, shots, "06-refund-and-status-followed")
