"""One vocabulary for a refund's status: every page that shows one says it with its label in
config/refund_statuses.py — the ticket list, the ticket's Refunds panel, the customer page, the
review queue and review page, the admin list — and the proposal box's script keeps the same
words."""

import re
from decimal import Decimal
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from config.refund_statuses import RefundStatus
from orders.models import Order
from refunds.models import RefundRequest
from refunds.services import refund_propose
from tickets.models import Ticket

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parent.parent.parent


def _refund_on_tck_1001(status: str) -> RefundRequest:
    ticket = Ticket.objects.get(reference="TCK-1001")
    refund = refund_propose(
        ticket=ticket,
        order=Order.objects.get(order_id="202610110087"),
        amount=Decimal("129.00"),
        reason="damaged",
        explanation="Arrived in pieces.",
        requested_by=get_user_model().objects.get(username="agent"),
        role="agent",
    ).refund
    # The pages only read the status: set it directly rather than walk the state machine.
    RefundRequest.objects.filter(pk=refund.pk).update(status=status)
    return refund


def _section(page: str, start: str, end: str) -> str:
    assert start in page, start
    return page.split(start, 1)[1].split(end, 1)[0]


def _shown_labels(section: str) -> set[str]:
    """Every refund status label the section shows as a whole element's text."""
    texts = {text.strip() for text in re.findall(r">([^<>]+)<", section)}
    return texts & set(RefundStatus.labels)


@pytest.mark.parametrize("status", RefundStatus.values)
def test_every_page_says_a_refund_status_with_its_one_label(client, demo, status):
    refund = _refund_on_tck_1001(status)
    label = RefundStatus(status).label
    client.force_login(get_user_model().objects.get(username="reviewer"))
    customer_id = refund.order.customer_id

    pages = {
        "ticket list": (client.get("/tickets/"), 'id="ticket-list"', "</table>"),
        "ticket sidebar": (client.get("/tickets/TCK-1001/"), 'id="refunds-panel"', "</section>"),
        "customer page": (
            client.get(f"/customers/{customer_id}/"),
            'id="customer-refunds"',
            "</section>",
        ),
        "review queue": (
            client.get(f"/review/?status=all&q={refund.request_id}"),
            'id="review-queue"',
            "</table>",
        ),
        "review page": (client.get(f"/review/{refund.request_id}/"), 'class="page-head"', "</div>"),
        "admin list": (
            client.get(f"/admin/refunds/refundrequest/?q={refund.request_id}"),
            'id="result_list"',
            "</table>",
        ),
    }
    for name, (response, start, end) in pages.items():
        assert response.status_code == 200, name
        assert _shown_labels(_section(response.content.decode(), start, end)) == {label}, name


def test_the_labels_are_distinct_and_the_proposal_box_script_uses_them():
    script = (ROOT / "static/js/assistant.js").read_text()
    words = re.search(r"const REFUND_STATUS = \{(.*?)\n  \};", script, re.S)
    assert words is not None
    first_words = dict(re.findall(r'^\s*(\w+): \["([^"]+)"', words.group(1), re.M))

    assert first_words == {status.value: status.label for status in RefundStatus}
    assert len(set(RefundStatus.labels)) == len(RefundStatus.labels)
