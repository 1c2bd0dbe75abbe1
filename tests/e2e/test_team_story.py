"""Issue 44's story of a team's desk, end to end in a real browser with a real worker and a
real SMTP socket: a customer writes twice about one broken mug (two tickets, the second in
Chinese, the first with a photo); the agent, who has set the name and signature customers
see, merges the duplicate; the assistant proposes the refund; the reviewer sees the photo
next to "The customer wrote" and approves; the agent answers with the shared macro, which
picks its Chinese text for this customer, and the email carries the agent's sign-off once;
the ticket's targets count the team's business hours (a calendar the supervisor put in
force), and it is solved inside them; and the customer rates it from the
survey's link. Every page is photographed at laptop and phone width and must not scroll
sideways. Screenshots go to $STORY_SHOTS_DIR if set, else to the test's tmp_path."""

import base64
import re
from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit

import pytest
from django.contrib.auth.models import User
from django.test import Client
from playwright.sync_api import expect

from refunds.models import RefundRequest
from tests.e2e.overflow import PHONE
from tests.e2e.story import (
    DELIVERY_TIMEOUT_S,
    REFUND_TIMEOUT_MS,
    RUN_TIMEOUT_MS,
    email_in,
    history_row,
    log_in,
    wait_for_the_refunded_proposal,
)
from tests.services import wait_for
from tickets.models import Macro, Ticket, TicketEvent
from tickets.sla import policy_hours

pytestmark = [pytest.mark.e2e, pytest.mark.services, pytest.mark.django_db(transaction=True)]

CUSTOMER = "li.wei@example.com"
PHOTO = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00" + b"\x42" * 40_000
SIGNATURE = "Refund Desk · 售后服务"
MACRO_DEFAULT = "Hello {{customer.name}}, about {{ticket.reference}}: {{refund.amount}} refunded."
MACRO_CHINESE = "{{customer.name}}您好：关于 {{ticket.reference}}，{{refund.amount}} 已退回。"
REPLY_CHINESE = "Li Wei您好：关于 TCK-1005，129.00 CNY 已退回。"


def put_a_calendar_in_force(*, closed: list[str]) -> None:
    """As the supervisor does over the API: every hour is a business hour, but for `closed`."""
    supervisor = Client()
    supervisor.force_login(User.objects.get(username="supervisor"))
    week = {day: ["00:00-24:00"] for day in ("mon", "tue", "wed", "thu", "fri", "sat", "sun")}
    calendar = {
        "name": "Shanghai team",
        "time_zone": "UTC",
        "weekly_hours": week,
        "holidays": [{"date": day, "name": "Team day out"} for day in closed],
    }
    response = supervisor.put("/api/sla/calendar/", calendar, content_type="application/json")
    assert response.status_code == 200, response.content


def test_two_emails_one_merged_ticket_a_chinese_reply_an_approved_refund_and_a_rating(
    browser, page, live_server, demo, desk_settings, mail_server, worker, camera
):
    Macro.objects.create(name="Refund done", body=MACRO_DEFAULT, translations={"zh": MACRO_CHINESE})
    mail_server.open()
    # The team is out today and tomorrow: the SLA clocks start the day after (UTC midnight).
    today = datetime.now(UTC).date()
    put_a_calendar_in_force(closed=[str(today), str(today + timedelta(days=1))])
    clocks_start = datetime.combine(today + timedelta(days=2), datetime.min.time(), tzinfo=UTC)

    # 1. Li Wei writes about her mug with a photo, then again in Chinese without quoting the
    # first ticket: two tickets.
    first = email_in(
        live_server,
        sender=CUSTOMER,
        name="Li Wei",
        message_id="<team-story-0001@mail.example.com>",
        subject="Broken mug",
        body="My ceramic mug from order 202610110087 arrived cracked. Photo attached.",
        attachments=[
            {
                "filename": "mug.jpg",
                "content_type": "image/jpeg",
                "content_base64": base64.b64encode(PHOTO).decode(),
            }
        ],
    )
    second = email_in(
        live_server,
        sender=CUSTOMER,
        name="Li Wei",
        message_id="<team-story-0002@mail.example.com>",
        subject="杯子坏了",
        body="你好，我订单 202610110087 的陶瓷杯收到时已经裂了，请帮我退款。",
    )
    assert (first["ticket"], first["created"]) == ("TCK-1005", True)
    assert (second["ticket"], second["created"]) == ("TCK-1006", True)
    ticket = Ticket.objects.get(reference="TCK-1005")
    first_hours, resolution_hours = policy_hours(ticket.priority)
    assert ticket.first_response_due_at == clocks_start + timedelta(hours=first_hours)
    assert ticket.resolution_due_at == clocks_start + timedelta(hours=resolution_hours)

    # 2. The agent sets the name and signature customers see.
    log_in(page, "agent")
    page.goto("/me/")
    page.fill("#display_name", "Alex Morgan")
    page.fill("#signature", SIGNATURE)
    page.click("#me-save")
    expect(page.locator("#me-sign-off")).to_contain_text(SIGNATURE)
    camera.shoot(page, "my-signature")

    # 3. The agent merges the Chinese duplicate into the first ticket.
    page.goto("/tickets/TCK-1006/")
    page.fill("#merge-into", "TCK-1005")
    page.check("#merge-confirm")
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#merge-submit")
    page.wait_for_url("**/tickets/TCK-1005/")
    expect(page.locator(".conversation")).to_contain_text("陶瓷杯收到时已经裂了")
    expect(history_row(page, "merged_from", "TCK-1006")).to_be_visible()
    camera.shoot(page, "merged")
    assert Ticket.objects.get(reference="TCK-1006").merged_into.reference == "TCK-1005"

    # 4. The assistant proposes the refund; nothing moves until a reviewer approves.
    page.fill("#assistant-message", "The mug arrived cracked, please refund it")
    page.click("#assistant-ask")
    page.locator("#assistant-answer").wait_for(state="visible", timeout=RUN_TIMEOUT_MS)
    expect(page.locator("#assistant-proposal-status")).to_have_text("waiting for a reviewer")
    refund = RefundRequest.objects.get(ticket__reference="TCK-1005")
    assert (str(refund.amount), refund.status) == ("129.00", "pending_approval")
    camera.shoot(page, "proposed")

    # 5. The reviewer sees the customer's photo where the decision is made, and approves.
    reviewer_context = browser.new_context(base_url=live_server.url, viewport=PHONE)
    try:
        review = reviewer_context.new_page()
        review.set_default_timeout(15_000)
        log_in(review, "reviewer")
        review.goto(f"/review/{refund.request_id}/")
        expect(review.locator("#customer-files img[alt='mug.jpg']")).to_be_visible()
        camera.shoot(review, "review-with-photo")
        review.fill("#approve-form textarea[name=note]", "The photo shows the crack.")
        review.locator("#approve-form button[type=submit]").click()
        expect(review.locator(".flash")).to_contain_text(f"Refund {refund.request_id} approved.")
    finally:
        reviewer_context.close()
    expect(page.locator("#assistant-proposal-status")).to_have_attribute(
        "data-status", "succeeded", timeout=REFUND_TIMEOUT_MS
    )

    # 6. The macro picks its Chinese text (the customer last wrote Chinese); the email ends
    # with the agent's name and signature, once.
    page.select_option("#macro-select", label="Refund done")
    page.click("#macro-use")
    page.wait_for_url("**/tickets/TCK-1005/?macro=*")
    expect(page.locator("#reply-body")).to_have_value(REPLY_CHINESE)
    wait_for_the_refunded_proposal(page)
    page.check("#reply-public")
    page.locator("#reply-send").click()
    page.wait_for_url("**/tickets/TCK-1005/")
    wait_for(
        lambda: len(mail_server.received) == 1,
        timeout=DELIVERY_TIMEOUT_S,
        what="the reply emailed",
        worker=worker,
    )
    [reply] = mail_server.received
    assert reply.text.startswith(REPLY_CHINESE + "\n")
    assert reply.text.count("Alex Morgan") == 1 and reply.text.count(SIGNATURE) == 1
    assert "Alex Morgan\n" + SIGNATURE in reply.text

    # 7. Solved inside its targets; the customer rates it from the survey, with no login.
    page.locator("#status-form button[value=solved]").click()
    page.wait_for_url("**/tickets/TCK-1005/")
    expect(page.locator("#ticket-status")).to_have_text("Solved")
    assert not TicketEvent.objects.filter(ticket=ticket, type="sla_breached").exists()
    wait_for(
        lambda: len(mail_server.received) == 2,
        timeout=DELIVERY_TIMEOUT_S,
        what="the satisfaction survey emailed",
        worker=worker,
    )
    good_link = re.search(r"^Good: (\S+)$", mail_server.received[1].text, re.M)
    assert good_link is not None
    customer_context = browser.new_context(base_url=live_server.url, viewport=PHONE)
    try:
        customer = customer_context.new_page()
        customer.goto(urlsplit(good_link.group(1)).path)
        customer.locator("#survey-send").click()
        expect(customer.locator("#survey-title")).to_have_text("Thank you!")
    finally:
        customer_context.close()
    page.reload()
    expect(page.locator("#satisfaction-rating")).to_have_text("Rated good")
    wait_for_the_refunded_proposal(page)
    camera.shoot(page, "solved-and-rated")
