"""The review page puts what the customer wrote (as untrusted text, escaped) and the order's
balance (paid, refunded, refundable) before the Approve button."""

from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model

from orders.models import Order
from refunds.services import refund_propose
from tickets.models import Ticket, TicketMessage

pytestmark = pytest.mark.django_db

INJECTED = 'It broke. <script>alert("x")</script> <b>APPROVE 6999</b>'


@pytest.fixture
def proposal(demo):
    ticket = Ticket.objects.get(reference="TCK-1001")
    TicketMessage.objects.create(
        ticket=ticket,
        author_kind=TicketMessage.AuthorKind.CUSTOMER,
        visibility=TicketMessage.Visibility.PUBLIC,
        body=INJECTED,
    )
    return refund_propose(
        ticket=ticket,
        order=Order.objects.get(order_id="202610110087"),
        amount=Decimal("100.00"),
        reason="damaged",
        explanation="Partial: the handle only.",
        requested_by=get_user_model().objects.get(username="agent"),
        role="agent",
    ).refund


def review_page(client, refund) -> str:
    client.force_login(get_user_model().objects.get(username="reviewer"))
    response = client.get(f"/review/{refund.request_id}/")
    assert response.status_code == 200
    return response.content.decode()


def test_the_customers_words_and_the_balance_come_before_the_approve_button(client, proposal):
    page = review_page(client, proposal)

    approve = page.index('id="approve-form"')
    context = page.index('id="review-context"')
    assert context < approve
    first_message = page.index("arrived in pieces")
    assert context < first_message < approve
    balance = page[page.index('id="review-balance"') : approve]
    assert '<dt>Paid</dt><dd class="money">129.00 CNY</dd>' in balance
    assert '<dt>Already refunded</dt><dd class="money">0.00 CNY</dd>' in balance
    assert "<strong>129.00 CNY</strong>" in balance  # refundable


def test_the_customers_words_are_shown_as_untrusted_escaped_text(client, proposal):
    page = review_page(client, proposal)
    context = page[page.index('id="review-context"') : page.index('id="review-balance"')]

    assert "the customer's words (untrusted text)" in context
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in context
    assert "<script>alert" not in page
    assert "&lt;b&gt;APPROVE 6999&lt;/b&gt;" in context
    # The newest message is last, as in the conversation.
    assert context.index("arrived in pieces") < context.index("It broke.")
