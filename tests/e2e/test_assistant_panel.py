import re

import pytest
from playwright.sync_api import expect

from refunds.models import RefundRequest

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def offline_planner(settings):
    settings.LLM_PROVIDER = "offline"


def test_it_shows_live_progress_and_the_proposal(page, login, demo, offline_planner, celery_worker):
    login("agent")
    page.goto("/tickets/TCK-1001/")
    assert page.locator("#provider-label").inner_text() == "Offline planner"

    page.fill("#assistant-message", "The mug arrived broken, please refund it")
    page.click("#assistant-ask")

    progress = page.locator("#assistant-progress")
    looking_up = progress.locator("text=Looking up order 202610110087")
    looking_up.wait_for(state="attached", timeout=30_000)
    proposal = page.locator("#assistant-proposal")
    proposal.wait_for(state="visible", timeout=30_000)
    assert "Proposed refund 129.00 CNY — waiting for a reviewer" in proposal.inner_text()
    answer = page.locator("#assistant-answer")
    answer.wait_for(state="visible", timeout=30_000)
    assert "R-1" in answer.inner_text()
    refund = RefundRequest.objects.get(order__order_id="202610110087")
    assert refund.status == "pending_approval"

    # Progress survives a reload: the events are replayed from the database.
    page.reload()
    # (replayed as fast as the stream delivers: wait for the line, not for the first one)
    page.locator("#assistant-progress li", has_text="Looking up order 202610110087").wait_for(
        state="attached"
    )
    page.locator("#assistant-answer").wait_for(state="visible")
    # the trail is fetched once the replay reaches the end of the run
    page.locator("#assistant-trail tbody tr").nth(3).wait_for(state="attached")
    tools = page.locator("#assistant-trail tbody tr td:first-child").all_text_contents()
    assert tools == ["get_order", "search_policies", "get_refund_status", "create_refund"]


def test_a_reviewer_sees_no_assistant_form(page, login, demo):
    login("reviewer")
    page.goto("/tickets/TCK-1001/")
    assert page.locator("#assistant-form").count() == 0
    assert "Only support interns, agents and supervisors" in page.locator("#assistant").inner_text()


def test_the_progress_folds_when_the_run_ends_and_the_answer_shows_once(
    page, login, demo, offline_planner, celery_worker
):
    # Given an agent asking the assistant on the mug ticket
    login("agent")
    page.goto("/tickets/TCK-1001/")
    page.fill("#assistant-message", "What did the customer pay?")
    page.click("#assistant-ask")

    # When the run ends, its progress lines fold into one line saying so
    steps = page.locator("#assistant-steps")
    expect(page.locator("#assistant-steps-summary")).to_have_text(
        re.compile(r"^Done · \d+ steps \(show\)$"), timeout=30_000
    )
    assert steps.evaluate("el => el.open") is False
    assert not page.locator("#assistant-progress li").first.is_visible()
    answer = page.locator("#assistant-answer-text")
    expect(answer).to_contain_text("paid 129.00 CNY")
    # (and open again when asked)
    page.locator("#assistant-steps-summary").click()
    assert page.locator("#assistant-progress li").first.is_visible()

    # Then after a reload the answer is in full once: in the panel; the conversation's note of
    # it is folded
    page.reload()
    expect(page.locator("#assistant-answer-text")).to_contain_text("paid 129.00 CNY")
    expect(page.locator("#assistant-steps-summary")).to_have_text(re.compile(r"^Done · "))
    note = page.locator(".message-assistant details.message-in-panel")
    assert note.count() == 1 and note.evaluate("el => el.open") is False
    shown = page.get_by_text(re.compile("paid 129.00 CNY")).filter(visible=True)
    assert shown.count() == 1
    # and a fresh question opens the steps again
    page.fill("#assistant-message", "What did the customer pay?")
    page.click("#assistant-ask")
    expect(steps).to_have_attribute("open", "")
