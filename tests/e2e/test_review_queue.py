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
    while "Succeeded" not in page.locator("#refund-status").inner_text():
        assert time.monotonic() < deadline, celery_worker.log()[-3000:]
        time.sleep(0.5)
        page.reload()
    pending_refund.refresh_from_db()
    assert pending_refund.status == "succeeded"
    assert pending_refund.provider_refund_id != ""
