"""The customer's satisfaction page (DESIGN §19) in a browser, on a phone (390 px) and a laptop
(1280 px): it fits the window, the link's rating is preselected, sending records it once with
the comment, and the agent's ticket page shows it."""

from datetime import timedelta

import pytest
from django.utils import timezone

from tests.e2e.overflow import LAPTOP, PHONE, assert_fits
from tickets import satisfaction
from tickets.models import SatisfactionSurvey, Ticket

pytestmark = [pytest.mark.e2e, pytest.mark.services, pytest.mark.django_db(transaction=True)]

LONG_COMMENT = "The courier left the parcel at the wrong door and nobody answered the phone. " * 4


def survey_for(reference: str) -> SatisfactionSurvey:
    ticket = Ticket.objects.get(reference=reference)
    Ticket.objects.filter(pk=ticket.pk).update(
        status="solved", subject="My order arrived broken and " + "very " * 20 + "late"
    )
    return SatisfactionSurvey.objects.create(
        ticket=ticket, expires_at=timezone.now() + timedelta(days=14), sent_at=timezone.now()
    )


@pytest.mark.parametrize(("window", "reference"), [(PHONE, "TCK-1001"), (LAPTOP, "TCK-1002")])
def test_the_customer_rates_from_the_link_and_the_agent_sees_it(
    page, login, demo, live_server, settings, window, reference
):
    settings.DESK_URL = live_server.url
    survey = survey_for(reference)
    links = satisfaction.survey_links(survey)
    page.set_viewport_size(window)

    # The customer, not logged in, opens the Bad link from the email.
    page.goto(links["bad"])
    assert page.locator("#rating-bad").is_checked()
    assert not page.locator("#rating-good").is_checked()
    assert_fits(page, "the survey page")
    assert SatisfactionSurvey.objects.get(pk=survey.pk).rated_at is None  # opening records nothing

    page.fill("#survey-comment", LONG_COMMENT)
    page.click("#survey-send")

    assert page.locator("#survey-title").inner_text() == "Thank you!"
    assert page.locator("#survey-rating").inner_text() == "Bad"
    assert_fits(page, "the thank-you page")
    survey.refresh_from_db()
    assert (survey.rating, survey.comment) == ("bad", LONG_COMMENT.strip())

    # The same link again: already rated, nothing to send.
    page.goto(links["good"])
    assert "You already rated this" in page.locator("#survey-note").inner_text()
    assert page.locator("#survey-form").count() == 0
    assert_fits(page, "the already-rated page")

    # The agent's ticket page shows it.
    login("agent")
    page.goto(f"/tickets/{reference}/")
    assert page.locator("#satisfaction-rating").inner_text() == "Rated bad"
    card = page.locator("#satisfaction-card").bounding_box()
    assert card["x"] + card["width"] <= window["width"]
    assert_fits(page, "the ticket page")

    # The list's figures count it for the team, within the window.
    page.goto("/tickets/")
    assert "1 bad" in page.locator("#satisfaction-team").inner_text()
    summary = page.locator("#satisfaction-summary").bounding_box()
    assert summary["x"] + summary["width"] <= window["width"]


def test_the_comment_can_be_added_after_the_rating_on_a_phone(page, demo, live_server, settings):
    settings.DESK_URL = live_server.url
    survey = survey_for("TCK-1001")
    page.set_viewport_size(PHONE)

    page.goto(satisfaction.survey_links(survey)["good"])
    page.click("#survey-send")
    page.fill("#survey-comment", "Quick and kind, thank you.")
    page.click("#survey-comment-send")

    assert page.locator("#survey-comment-given").inner_text() == "Quick and kind, thank you."
    assert_fits(page, "the thank-you page with the comment")
    survey.refresh_from_db()
    assert (survey.rating, survey.comment) == ("good", "Quick and kind, thank you.")
