"""The ticket list as a list to work from (DESIGN §19), on a phone and a laptop: two rows
selected and assigned in bulk, a refused ticket named with its reason, a saved view opened and
one saved; the page never scrolls sideways."""

import pytest
from playwright.sync_api import expect

from tests.e2e.overflow import LAPTOP, PHONE
from tickets.models import SavedView, Ticket, TicketEvent

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

WIDE = {"width": 1600, "height": 900}


def assert_no_sideways_scroll(page, what: str) -> None:
    width, window = page.evaluate("[document.scrollingElement.scrollWidth, window.innerWidth]")
    assert width <= window, f"{what} is {width}px wide in a {window}px window"


def assert_every_column_shows(page) -> None:
    """No cell of the list reaches past the list's own box (nothing cut off)."""
    cut = page.evaluate(
        """() => { const table = document.getElementById('ticket-list');
          const right = table.parentElement.getBoundingClientRect().right;
          return Array.from(table.querySelectorAll('tbody td'))
            .filter(cell => cell.getBoundingClientRect().right > right + 1).length; }"""
    )
    assert cut == 0


@pytest.mark.parametrize("viewport", [PHONE, LAPTOP, WIDE], ids=["390", "1280", "1600"])
def test_an_agent_assigns_two_tickets_at_once(page, login, demo, viewport):
    page.set_viewport_size(viewport)
    login("agent")
    page.goto("/tickets/")
    assert_no_sideways_scroll(page, "the list")
    assert_every_column_shows(page)
    expect(page.locator("#bulk-bar")).to_be_hidden()

    page.check("#ticket-list tr[data-ticket=TCK-1001] .row-select")
    page.check("#ticket-list tr[data-ticket=TCK-1003] .row-select")
    expect(page.locator("#bulk-count")).to_have_text("2 selected")
    page.select_option("#bulk-assign", "agent2")
    page.click("#bulk-apply")

    expect(page.locator("#bulk-result")).to_have_text("Changed: 2 of 2 tickets done.")
    for reference in ("TCK-1001", "TCK-1003"):
        ticket = Ticket.objects.get(reference=reference)
        assert ticket.assignee.username == "agent2"
        assert ticket.events.filter(type=TicketEvent.Type.ASSIGNED).count() == 1
        expect(
            page.locator(f"#ticket-list tr[data-ticket={reference}] .col-assignee")
        ).to_have_attribute("data-assignee", "agent2")
    assert Ticket.objects.get(reference="TCK-1004").assignee.username == "agent"
    # Done: nothing stays selected.
    expect(page.locator("#bulk-bar")).to_be_hidden()
    assert_no_sideways_scroll(page, "the list after a bulk change")


@pytest.mark.parametrize("viewport", [PHONE, LAPTOP], ids=["390", "1280"])
def test_a_refused_ticket_is_named_and_stays_selected(page, login, demo, viewport):
    Ticket.objects.filter(reference="TCK-1004").update(status=Ticket.Status.CLOSED)
    page.set_viewport_size(viewport)
    login("agent")
    page.goto("/tickets/")

    page.check("#ticket-list tr[data-ticket=TCK-1004] .row-select")
    page.check("#ticket-list tr[data-ticket=TCK-1002] .row-select")
    page.select_option("#bulk-status", "pending")
    page.click("#bulk-apply")

    expect(page.locator("#bulk-refused li[data-ticket=TCK-1004]")).to_have_text(
        "TCK-1004 cannot go from closed to pending."
    )
    assert Ticket.objects.get(reference="TCK-1002").status == Ticket.Status.PENDING
    assert Ticket.objects.get(reference="TCK-1004").status == Ticket.Status.CLOSED
    expect(page.locator("#bulk-count")).to_have_text("1 selected")
    expect(page.locator("#ticket-list tr[data-ticket=TCK-1004] .row-select")).to_be_checked()
    assert_no_sideways_scroll(page, "the list with a refusal")


def test_an_intern_is_offered_only_tags(page, login, demo):
    page.set_viewport_size(PHONE)
    login("intern")
    page.goto("/tickets/")

    page.check("#select-all-cards")  # the table's head is out of sight on a phone
    expect(page.locator("#bulk-count")).to_have_text("4 selected")
    assert page.locator("#bulk-assign, #bulk-status, #bulk-priority, #bulk-merge").count() == 0
    page.fill("#bulk-tag", "follow-up")
    page.click("#bulk-apply")

    expect(page.locator("#bulk-result")).to_have_text("Changed: 4 of 4 tickets done.")
    assert Ticket.objects.filter(tags__name="follow-up").count() == 4


@pytest.mark.parametrize("viewport", [PHONE, LAPTOP], ids=["390", "1280"])
def test_saved_views_open_and_save_from_the_list(page, login, demo, viewport):
    page.set_viewport_size(viewport)
    login("agent")
    page.goto("/tickets/")

    page.click("#saved-views >> text=My open, by due")
    page.wait_for_url("**/tickets/?status=open&assignee=me&sort=due")
    expect(page.locator("#saved-views [aria-current=true]")).to_have_text("My open, by due")
    assert page.locator("#ticket-list tbody tr").count() == 2  # TCK-1001 and TCK-1004

    page.goto("/tickets/?priority=urgent")
    page.click("#save-view summary")
    page.fill("#save-view-name", "Urgent")
    page.click("#save-view button[type=submit]")
    page.wait_for_url("**/tickets/?priority=urgent")
    expect(page.locator("#saved-views [aria-current=true]")).to_have_text("Urgent")
    assert SavedView.objects.get(name="Urgent").query == "priority=urgent"
    assert_no_sideways_scroll(page, "the list with saved views")


def test_an_agent_merges_a_duplicate_from_the_list(page, login, demo):
    """TCK-1004 and TCK-1001 are both Li Wei's: the duplicate goes into the one chosen."""
    page.set_viewport_size(LAPTOP)
    login("agent")
    page.goto("/tickets/")
    page.check("#ticket-list tr[data-ticket=TCK-1004] .row-select")
    page.check("#ticket-list tr[data-ticket=TCK-1001] .row-select")
    page.select_option("#bulk-merge-into", "TCK-1001")

    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#bulk-merge")

    expect(page.locator("#bulk-result")).to_have_text("Merged into TCK-1001: 2 of 2 tickets done.")
    duplicate = Ticket.objects.get(reference="TCK-1004")
    assert (duplicate.merged_into.reference, duplicate.status) == ("TCK-1001", "closed")
    expect(page.locator("#ticket-list tr[data-ticket=TCK-1004] [data-merged-into]")).to_be_visible()
    assert_no_sideways_scroll(page, "the list after a merge")
