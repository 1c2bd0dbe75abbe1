"""Issue 11 end to end, in a real browser, with real parts around it: a customer's email arrives
over the inbound API and opens a ticket; an agent takes it, the assistant proposes a refund, a
reviewer approves it in a second browser, the agent's page follows the refund to "refunded"
without a reload; the assistant's answer, edited, goes out as a reply that a Celery worker
emails over a real SMTP socket, threaded to the customer's email; the agent solves the ticket
and the customer's answer reopens it. DESIGN §15 along the way: the email copies the customer's
partner, who receives the reply too; the agent tags the ticket and makes it urgent (its late
first response shows as breached until the reply goes out) and starts the reply from a macro.
The email carries a photo of the broken mug; the reply carries a return label, and the partner
receives it too.
DESIGN §19: the solve emails the customer a satisfaction survey; she rates it from its link.
At each step the page is photographed at laptop and
phone width and must not scroll sideways.

Screenshots go to $STORY_SHOTS_DIR if set (to look at them), else to the test's tmp_path."""

import base64
import re
from datetime import timedelta
from urllib.parse import urlsplit

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from refunds.models import RefundRequest
from tests.e2e.overflow import LAPTOP, PHONE
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
from tickets.models import Macro, Ticket, TicketMessage

pytestmark = [pytest.mark.e2e, pytest.mark.services, pytest.mark.django_db(transaction=True)]

CUSTOMER = "li.wei@example.com"
SUBJECT = "The mug arrived cracked"
FIRST_EMAIL_ID = "<CAKx8mug-0001.li.wei@mail.example.com>"
ANSWER_EMAIL_ID = "<CAKx8mug-0002.li.wei@mail.example.com>"
ADDED_SENTENCE = "Update: the payment provider has now refunded the 129.00 CNY to your card."
# DESIGN §15: the customer copies her partner; the agent starts the reply from a shared macro.
PARTNER = "wang.fang@example.com"
MACRO_BODY = (
    "Hi {{customer.first_name}}, about {{ticket.reference}}: {{refund.amount}}, {{refund.status}}."
)
MACRO_TEXT = "Hi Li, about TCK-1005: 129.00 CNY, succeeded."
# DESIGN §15 attachments: the customer's photo (declared a PNG; its bytes are a JPEG) and the
# agent's return label.
PHOTO = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00" + b"\x42" * 120_000
LABEL = b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog >>\nendobj\n" + b"0" * 2_000


def email_from_the_customer(live_server, **email) -> dict:
    return email_in(live_server, sender=CUSTOMER, name="Li Wei", **email)


def test_a_customers_email_becomes_a_refund_a_threaded_reply_and_a_reopened_ticket(
    browser, page, live_server, demo, desk_settings, mail_server, worker, camera
):
    # 1. Li Wei writes a new email (no ticket reference) about her mug, copying her partner: a
    # new ticket that keeps the CC. It arrived two hours ago, as far as the SLA is concerned.
    Macro.objects.create(name="Refund update", body=MACRO_BODY)
    opened = email_from_the_customer(
        live_server,
        subject=SUBJECT,
        body="Hello, my ceramic mug from order 202610110087 arrived cracked down the side. "
        "Could I have my money back?",
        message_id=FIRST_EMAIL_ID,
        cc=(PARTNER,),
        attachments=(
            {
                "filename": "cracked mug.png",
                "content_type": "image/png",
                "content_base64": base64.b64encode(PHOTO).decode(),
            },
        ),
    )
    assert opened == {"ticket": "TCK-1005", "created": True, "duplicate": False}
    ticket = Ticket.objects.get(reference="TCK-1005")
    assert (ticket.order.order_id, ticket.customer.email) == ("202610110087", CUSTOMER)
    assert ticket.cc == [PARTNER]
    [photo] = ticket.messages.get().attachments.all()
    assert (photo.filename, photo.content_type, photo.size) == (
        "cracked mug.png",
        "image/jpeg",
        len(PHOTO),
    )
    Ticket.objects.filter(pk=ticket.pk).update(created_at=timezone.now() - timedelta(hours=2))

    # 2. The agent finds it among the unassigned tickets and takes it.
    log_in(page, "agent")
    page.locator(".tabs a[data-view=unassigned]").click()
    page.wait_for_url("**/tickets/?view=unassigned")
    row = page.locator("#ticket-list tbody tr", has_text="TCK-1005")
    expect(row).to_contain_text(SUBJECT)
    expect(row).to_contain_text("Li Wei")
    expect(row).to_contain_text("202610110087")
    camera.shoot(page, "ticket-list-unassigned")

    row.get_by_role("link", name="TCK-1005").click()
    page.wait_for_url("**/tickets/TCK-1005/")
    expect(page.locator(".conversation")).to_contain_text("arrived cracked down the side")
    # The photo is a download for the desk: never shown inline, never sniffed.
    photo_link = page.locator(".conversation .attachment-link", has_text="cracked mug.png")
    expect(photo_link).to_be_visible()
    expect(page.locator(".conversation .attachment-meta")).to_contain_text("image/jpeg")
    download = page.request.get(photo_link.get_attribute("href") or "")
    assert download.ok and download.body() == PHOTO
    assert download.headers["content-disposition"] == 'attachment; filename="cracked mug.png"'
    assert download.headers["x-content-type-options"] == "nosniff"
    expect(page.locator("#ticket-assignee")).to_have_text("unassigned")
    page.locator("#assign-me-form button[type=submit]").click()
    page.wait_for_url("**/tickets/TCK-1005/")
    expect(page.locator(".flash")).to_contain_text("Assigned to agent.")
    expect(page.locator("#ticket-assignee")).to_have_text("agent")
    expect(history_row(page, "assigned", "unassigned → agent")).to_be_visible()
    camera.shoot(page, "ticket-assigned")

    # 2b. The agent tags it and makes it urgent: its one-hour first response is already late.
    page.fill("#tag-add", "damaged")
    page.click("#tag-form button")
    expect(page.locator("#ticket-tags [data-tag=damaged]")).to_be_visible()
    page.select_option("#priority-select", "urgent")
    page.click("#priority-form button")
    expect(page.locator("#ticket-priority")).to_have_text("Urgent priority")
    expect(page.locator("#helpdesk-panel [data-sla=breached]")).to_be_visible()
    camera.shoot(page, "ticket-tagged-urgent")

    # 3. The assistant proposes refunding the mug; nothing moves until a reviewer approves.
    page.fill("#assistant-message", "The mug arrived cracked, please refund it")
    page.click("#assistant-ask")
    page.locator("#assistant-answer").wait_for(state="visible", timeout=RUN_TIMEOUT_MS)
    proposal_status = page.locator("#assistant-proposal-status")
    expect(proposal_status).to_have_text("waiting for a reviewer")
    expect(page.locator("#assistant-proposal")).to_contain_text("Proposed refund 129.00 CNY")
    refund = RefundRequest.objects.get(ticket=ticket)
    assert refund.status == "pending_approval"
    page.evaluate("window.stillTheSamePage = true")
    camera.shoot(page, "proposal-waiting")

    # 4. In a browser of their own, the reviewer approves it from the review queue.
    reviewer_context = browser.new_context(base_url=live_server.url, viewport=LAPTOP)
    try:
        review = reviewer_context.new_page()
        review.set_default_timeout(15_000)
        log_in(review, "reviewer")
        assert review.url.endswith("/review/")
        queued = review.locator("#review-queue tbody tr", has_text="TCK-1005")
        expect(queued).to_contain_text("129.00 CNY")
        camera.shoot(review, "review-queue")
        queued.get_by_role("link", name=refund.request_id).click()
        review.wait_for_url(f"**/review/{refund.request_id}/")
        camera.shoot(review, "review-request")
        review.fill("#approve-form textarea[name=note]", "Crack visible in the customer's words.")
        review.locator("#approve-form button[type=submit]").click()
        review.wait_for_load_state()
        expect(review.locator(".flash")).to_contain_text(f"Refund {refund.request_id} approved.")
    finally:
        reviewer_context.close()

    # 5. The agent's page, never reloaded, follows the refund to "refunded".
    expect(proposal_status).to_have_attribute("data-status", "succeeded", timeout=REFUND_TIMEOUT_MS)
    expect(proposal_status).to_have_text("refunded")
    assert page.evaluate("window.stillTheSamePage") is True
    expect(page.locator("#assistant-answer-stale")).to_contain_text("now: refunded")
    refund.refresh_from_db()
    assert refund.status == "succeeded"
    camera.shoot(page, "proposal-refunded")

    # 6. The agent starts the reply from a macro (the refund placeholders read the refund as it
    # is now: refunded); "Use as reply" adds the customer's draft as things are now (refunded,
    # by name, none of the desk's words) as an internal note; the agent adds a line and
    # chooses Public reply.
    page.select_option("#macro-select", label="Refund update")
    page.click("#macro-use")
    page.wait_for_url("**/tickets/TCK-1005/?macro=*")
    reply_box = page.locator("#reply-body")
    expect(reply_box).to_have_value(MACRO_TEXT)
    wait_for_the_refunded_proposal(page)
    page.click("#assistant-use-answer")
    expect(reply_box).to_have_value(re.compile("^" + re.escape(MACRO_TEXT) + "\n\nDear Li Wei,"))
    expect(reply_box).to_be_focused()
    answer = reply_box.input_value().removeprefix(MACRO_TEXT + "\n\n")
    assert "We have refunded 129.00 CNY for your ceramic mug (order 202610110087)" in answer
    assert refund.request_id not in answer and "R-" not in answer
    expect(page.locator("#reply-internal")).to_be_checked()
    page.keyboard.insert_text("\n\n" + ADDED_SENTENCE)  # where "Use as reply" left the cursor
    expect(reply_box).to_have_value(MACRO_TEXT + "\n\n" + answer + "\n\n" + ADDED_SENTENCE)
    page.check("#reply-public")
    page.set_input_files(
        "#reply-files",
        files=[{"name": "return-label.pdf", "mimeType": "application/pdf", "buffer": LABEL}],
    )
    page.locator("#reply-send", has_text=f"Send reply to {CUSTOMER}").click()
    page.wait_for_url("**/tickets/TCK-1005/")
    expect(page.locator(".flash")).to_contain_text("Reply queued for sending to the customer.")
    reply = ticket.messages.get(author_kind="agent", visibility="public")
    assert reply.body == MACRO_TEXT + "\n\n" + answer + "\n\n" + ADDED_SENTENCE
    expect(
        page.locator(f"#message-{reply.pk} .attachment-link", has_text="return-label.pdf")
    ).to_be_visible()
    # The first response is out: the late first-response badge goes, and urgent's 8-hour
    # resolution target is not yet near.
    expect(page.locator("#sla-first-response")).to_contain_text("given")
    expect(page.locator("#helpdesk-panel [data-sla]")).to_have_count(0)
    delivery = page.locator(f"#message-{reply.pk} .delivery")

    # The worker is at the mail server's door: the reply is Queued until the server answers.
    assert mail_server.knocked.wait(timeout=DELIVERY_TIMEOUT_S), worker.log()[-4000:]
    page.reload()
    expect(delivery).to_have_attribute("data-delivery", "queued")
    expect(delivery.locator(".badge")).to_have_text("Queued")
    expect(delivery).to_contain_text(f"waiting to be emailed to {CUSTOMER}")
    wait_for_the_refunded_proposal(page)
    camera.shoot(page, "reply-queued")
    mail_server.open()
    wait_for(
        lambda: TicketMessage.objects.get(pk=reply.pk).delivery == "sent",
        timeout=DELIVERY_TIMEOUT_S,
        what="the reply emailed",
        worker=worker,
    )
    page.reload()
    expect(delivery).to_have_attribute("data-delivery", "sent")
    expect(delivery.locator(".badge")).to_have_text("Sent")
    expect(delivery).to_contain_text(f"to {CUSTOMER} at")
    expect(history_row(page, "reply_sent", "Reply emailed to the customer")).to_be_visible()
    wait_for_the_refunded_proposal(page)
    camera.shoot(page, "reply-sent")

    [email] = mail_server.received
    reply.refresh_from_db()
    assert email.rcpt_to == [CUSTOMER, PARTNER]
    assert email.header("Cc") == PARTNER
    assert email.header("Subject") == f"[TCK-1005] {SUBJECT}"
    assert email.header("Message-ID") == reply.message_id
    assert email.header("In-Reply-To") == FIRST_EMAIL_ID
    assert FIRST_EMAIL_ID in email.header("References").split()
    assert email.text.startswith(reply.body + "\n")
    assert reply.delivery_attempts == 1
    # The label went with the reply, to the customer and the partner alike.
    [label] = list(email.message.iter_attachments())
    assert (label.get_filename(), label.get_content_type()) == (
        "return-label.pdf",
        "application/pdf",
    )
    assert label.get_content() == LABEL

    # 7. The agent marks the ticket solved.
    page.locator("#status-form button[value=solved]").click()
    page.wait_for_url("**/tickets/TCK-1005/")
    expect(page.locator(".flash")).to_contain_text("Ticket marked solved.")
    expect(page.locator("#ticket-status")).to_have_text("Solved")
    wait_for_the_refunded_proposal(page)
    camera.shoot(page, "ticket-solved")

    # 7b. DESIGN §19: the solve emails Li Wei one satisfaction survey (to her alone), and she
    # rates it from the link in a browser of her own, with no login.
    wait_for(
        lambda: len(mail_server.received) == 2,
        timeout=DELIVERY_TIMEOUT_S,
        what="the satisfaction survey emailed",
        worker=worker,
    )
    survey = mail_server.received[1]
    assert survey.rcpt_to == [CUSTOMER]
    assert survey.header("Subject") == "[TCK-1005] How did we do?"
    good_link = re.search(r"^Good: (\S+)$", survey.text, re.M)
    assert good_link is not None, survey.text
    customer_context = browser.new_context(base_url=live_server.url, viewport=PHONE)
    customer = customer_context.new_page()
    customer.goto(urlsplit(good_link.group(1)).path)
    expect(customer.locator("#rating-good")).to_be_checked()
    customer.fill("#survey-comment", "Quick and kind, thank you.")
    customer.locator("#survey-send").click()
    expect(customer.locator("#survey-title")).to_have_text("Thank you!")
    camera.shoot(customer, "customer-rated")
    customer_context.close()
    page.reload()
    expect(page.locator("#satisfaction-rating")).to_have_text("Rated good")
    expect(page.locator("#satisfaction-comment")).to_contain_text("Quick and kind, thank you.")
    wait_for_the_refunded_proposal(page)
    camera.shoot(page, "ticket-rated")

    # 8. Li Wei answers the reply: the same ticket, open again, and the history says why.
    answered = email_from_the_customer(
        live_server,
        subject=f"Re: [TCK-1005] {SUBJECT}",
        body="Thank you, I can see the refund on my card statement.",
        message_id=ANSWER_EMAIL_ID,
    )
    assert answered == {"ticket": "TCK-1005", "created": False, "duplicate": False}
    page.reload()
    expect(page.locator("#ticket-status")).to_have_text("Open")
    expect(page.locator(".conversation .message-customer").last).to_contain_text(
        "I can see the refund on my card statement"
    )
    expect(history_row(page, "customer_replied", "Customer replied")).to_be_visible()
    expect(history_row(page, "status_changed", "Solved → Open (customer replied)")).to_be_visible()
    wait_for_the_refunded_proposal(page)
    camera.shoot(page, "ticket-reopened")

    page.locator("#customer-card").get_by_role("link", name="Li Wei").click()
    page.wait_for_url(re.compile(r"/customers/\d+/$"))
    expect(page.locator("#customer-tickets tr", has_text="TCK-1005")).to_contain_text("Open")
    camera.shoot(page, "customer")

    assert Ticket.objects.get(pk=ticket.pk).status == "open"
    assert len(mail_server.received) == 2  # the reply and the survey: reopening emails nobody
