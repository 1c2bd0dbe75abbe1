"""DESIGN §15 on the pages, in a real browser: the agent tags a ticket, raises its priority
(the SLA badge turns to breached on the list), copies the customer's partner, and the first
public reply stops the first-response clock. The ticket and the list fit a laptop and a phone.

Screenshots go to $STORY_SHOTS_DIR if set (to look at them), else to the test's tmp_path."""

import os
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from tests.e2e.overflow import LAPTOP, PHONE, assert_fits
from tickets.models import Macro, Ticket, TicketMessage

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def photograph(page, folder: Path, name: str) -> None:
    for label, size in (("laptop", LAPTOP), ("phone", PHONE)):
        page.set_viewport_size(size)
        page.screenshot(path=str(folder / f"{name}-{label}.png"), full_page=True)
        assert_fits(page, f"{name} at {label} width")
    page.set_viewport_size(LAPTOP)


def test_tags_priority_cc_and_the_sla_badge(page, login, demo, tmp_path):
    shots = Path(os.environ.get("STORY_SHOTS_DIR") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    # Opened two hours ago: urgent's one-hour first response is then overdue.
    opened = timezone.now() - timedelta(hours=2)
    Ticket.objects.filter(reference="TCK-1001").update(created_at=opened)
    login("agent")
    page.goto("/tickets/TCK-1001/")

    page.fill("#tag-add", "damaged, Mug")
    page.click("#tag-form button")
    expect(page.locator("#ticket-tags [data-tag]")).to_have_count(2)

    page.select_option("#priority-select", "urgent")
    page.click("#priority-form button")
    expect(page.locator("#ticket-priority")).to_have_text("Urgent priority")
    expect(page.locator("#helpdesk-panel [data-sla=breached]")).to_be_visible()

    page.fill("#cc-input", "partner@example.com")
    page.click("#cc-form button")
    expect(page.locator("#ticket-cc")).to_have_text("partner@example.com")
    photograph(page, shots, "essentials-ticket")

    page.goto("/tickets/?tag=DAMAGED&sort=due")
    rows = page.locator("#ticket-list tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first.locator("[data-sla=breached]")).to_be_visible()
    photograph(page, shots, "essentials-list")

    page.goto("/tickets/TCK-1001/")
    page.check("#reply-public")
    page.fill("#reply-body", "Sorry about the mug: we are looking into it and write again today.")
    page.click("#reply-send")
    expect(page.locator("#sla-first-response")).to_contain_text("given")
    # The first response is given; the resolution (8 h for urgent) is not yet due.
    expect(page.locator("#helpdesk-panel [data-sla]")).to_have_count(0)
    assert Ticket.objects.get(reference="TCK-1001").cc == ["partner@example.com"]


def test_a_macro_fills_the_reply_box_and_its_actions_wait_for_confirmation(
    page, login, demo, tmp_path
):
    shots = Path(os.environ.get("STORY_SHOTS_DIR") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    Macro.objects.create(
        name="Ask for a photo",
        body="Hi {{customer.first_name}}, could you send a photo of {{order.id}}? {{agent.name}}",
        actions={"status": "pending", "add_tags": ["photo requested"]},
    )
    login("agent")
    page.goto("/tickets/TCK-1001/")

    page.select_option("#macro-select", label="Ask for a photo")
    page.click("#macro-use")
    expect(page.locator("#reply-body")).to_have_value(
        "Hi Li, could you send a photo of 202610110087? Alex Morgan"
    )
    expect(page.locator("#macro-actions-form")).to_contain_text("status pending")
    assert Ticket.objects.get(reference="TCK-1001").status == "open"
    photograph(page, shots, "essentials-macro")

    page.fill("#reply-body", "Hi Li, could you send a photo of the crack?")
    page.click("#macro-actions-confirm")
    expect(page.locator("#ticket-status")).to_have_text("Pending")
    expect(page.locator("#ticket-tags [data-tag='photo requested']")).to_be_visible()
    # The edited text is still in the box, unsent.
    expect(page.locator("#reply-body")).to_have_value("Hi Li, could you send a photo of the crack?")
    replies = TicketMessage.objects.filter(ticket__reference="TCK-1001", author_kind="agent")
    assert not replies.exists()
