import time
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model

from orders.models import Order
from refunds.models import RefundRequest
from refunds.services import refund_propose
from tickets.models import Ticket

pytestmark = [pytest.mark.e2e, pytest.mark.services, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def pending_refund(demo) -> RefundRequest:
    """The agent's proposal on TCK-1001: the broken mug, 129.00 CNY."""
    agent = get_user_model().objects.get(username="agent")
    return refund_propose(
        ticket=Ticket.objects.get(reference="TCK-1001"),
        order=Order.objects.get(order_id="202610110087"),
        amount=Decimal("129.00"),
        reason="damaged",
        explanation="The mug arrived in pieces; photo on the ticket.",
        requested_by=agent,
        role="agent",
    ).refund


def test_it_keeps_support_agents_out_of_the_review_queue(page, login, pending_refund):
    login("agent")
    assert page.locator("header nav").get_by_text("Review queue").count() == 0

    response = page.goto("/review/")

    assert response.status == 403
    assert pending_refund.request_id not in page.content()


def test_a_reviewer_approves_a_pending_refund_and_sees_it_succeed(
    page, login, pending_refund, celery_worker
):
    login("reviewer")
    page.locator("header nav").get_by_text("Review queue").click()
    page.wait_for_url("**/review/")
    row = page.locator("#review-queue tbody tr", has_text=pending_refund.request_id)
    assert "129.00 CNY" in row.inner_text()
    assert "Li Wei" in row.inner_text()

    row.get_by_role("link", name=pending_refund.request_id).click()
    page.wait_for_url(f"**/review/{pending_refund.request_id}/")
    assert "The mug arrived in pieces" in page.locator("#proposal").inner_text()
    assert "R-1" in page.locator("#policy").inner_text()
    page.fill("#approve-form textarea[name=note]", "Photo checks out.")
    page.locator("#approve-form button[type=submit]").click()
    page.wait_for_load_state()
    assert f"Refund {pending_refund.request_id} approved." in page.locator(".flash").inner_text()

    deadline = time.monotonic() + 45
    while "Refunded" not in page.locator("#refund-status").inner_text():
        assert time.monotonic() < deadline, celery_worker.log()[-3000:]
        time.sleep(0.5)
        page.reload()
    pending_refund.refresh_from_db()
    assert pending_refund.status == "succeeded"
    assert pending_refund.provider_refund_id != ""


def test_a_support_agent_sees_why_the_review_queue_is_closed_to_them(page, login, demo):
    login("agent")

    response = page.goto("/review/")

    assert response.status == 403
    assert (
        "Only refund reviewers can open the review queue" in page.locator("#forbidden").inner_text()
    )
    assert page.locator("header nav").get_by_text("Tickets").is_visible()


def test_a_reviewer_logs_in_to_the_review_queue(page, login, demo):
    login("reviewer")

    assert page.url.endswith("/review/")
    assert page.locator("h1").inner_text() == "Review queue"


def test_a_reviewer_must_confirm_a_rejection_twice(page, login, pending_refund):
    login("reviewer")
    page.goto(f"/review/{pending_refund.request_id}/")
    reject = page.locator("#reject-form")
    dialogs = []

    # Without the tick the browser does not even send the form.
    reject.locator("button[type=submit]").click()
    assert reject.locator("input[name=confirm_reject]").evaluate("el => !el.validity.valid")

    # With it, the page asks once more; saying no sends nothing.
    reject.locator("input[name=confirm_reject]").check()
    page.once("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    reject.locator("button[type=submit]").click()
    pending_refund.refresh_from_db()
    assert pending_refund.status == "pending_approval"
    assert dialogs == [
        f"Reject refund {pending_refund.request_id}? It cannot be approved afterwards."
    ]

    page.once("dialog", lambda dialog: dialog.accept())
    with page.expect_navigation():
        reject.locator("button[type=submit]").click()
    assert f"Refund {pending_refund.request_id} rejected." in page.locator(".flash").inner_text()
    pending_refund.refresh_from_db()
    assert pending_refund.status == "rejected"
