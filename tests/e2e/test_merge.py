"""Merging on the ticket page (DESIGN §19), on a phone and a laptop: a refusal keeps the typed
reference next to the form, a cancelled confirmation merges nothing, and a merge lands the
agent on the target with the duplicate's conversation."""

import pytest

from tests.e2e.overflow import LAPTOP, PHONE, assert_fits
from tests.factories import CustomerFactory, TicketFactory, TicketMessageFactory
from tickets.models import Ticket

pytestmark = [pytest.mark.e2e, pytest.mark.services, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def duplicate(demo) -> tuple[Ticket, Ticket, Ticket]:
    """A second ticket of TCK-1001's customer about the same order, and a stranger's ticket."""
    target = Ticket.objects.get(reference="TCK-1001")
    source = TicketFactory(
        reference="TCK-4001", customer=target.customer, order=target.order, subject="Mug again"
    )
    TicketMessageFactory(ticket=source, body="I wrote before: the mug is still broken.")
    stranger = TicketFactory(reference="TCK-4002", customer=CustomerFactory())
    return source, target, stranger


@pytest.mark.parametrize("viewport", [PHONE, LAPTOP], ids=["390", "1280"])
def test_an_agent_merges_a_duplicate_on_the_ticket_page(page, login, duplicate, viewport):
    source, target, stranger = duplicate
    page.set_viewport_size(viewport)
    login("agent")
    page.goto(f"/tickets/{source.reference}/")

    page.fill("#merge-into", stranger.reference)
    page.check("#merge-confirm")
    page.once("dialog", lambda dialog: dialog.dismiss())
    page.click("#merge-submit")
    assert Ticket.objects.get(pk=source.pk).merged_into is None  # cancelled: nothing sent

    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#merge-submit")
    page.wait_for_selector("#merge-error")
    assert "different customers" in page.inner_text("#merge-error")
    assert page.input_value("#merge-into") == stranger.reference
    assert_fits(page, "the refused merge")

    page.fill("#merge-into", target.reference)
    page.check("#merge-confirm")
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#merge-submit")
    page.wait_for_url(f"**/tickets/{target.reference}/")
    assert f"{source.reference} was merged into this ticket." in page.inner_text("body")
    assert "the mug is still broken" in page.inner_text(".conversation")
    assert_fits(page, "the target after the merge")

    page.goto(f"/tickets/{source.reference}/")
    assert target.reference in page.inner_text("#merged-notice")
    assert page.locator("#merge-form").count() == 0
    assert_fits(page, "the merged source")


def test_an_intern_is_not_offered_a_merge(page, login, duplicate):
    source, _, _ = duplicate
    page.set_viewport_size(PHONE)
    login("intern")

    page.goto(f"/tickets/{source.reference}/")

    assert page.locator("#ticket-live").count() == 1
    assert page.locator("#merge-form").count() == 0
