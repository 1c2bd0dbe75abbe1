"""The review page puts what the customer wrote (as untrusted text, escaped) and the order's
balance (paid, refunded, refundable) before the Approve button."""

import hashlib
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.core.files.base import ContentFile

from orders.models import Order
from refunds.services import refund_propose
from tickets.models import Attachment, Ticket, TicketMessage

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


PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 40
PDF = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<<>>\nendobj\ntrailer\n<<>>\n%%EOF\n"
SVG = b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'


def _file(message: TicketMessage, name: str, content: bytes, content_type: str) -> Attachment:
    return Attachment.objects.create(
        message=message,
        file=ContentFile(content, name=name),
        filename=name,
        content_type=content_type,
        size=len(content),
        sha256=hashlib.sha256(content).hexdigest(),
    )


def test_the_review_shows_the_customers_files_beside_their_words(
    client, proposal, settings, tmp_path
):
    settings.MEDIA_ROOT = tmp_path
    wrote = proposal.ticket.messages.filter(author_kind="customer").last()
    photo = _file(wrote, "broken mug.png", PNG, "image/png")
    receipt = _file(wrote, "receipt.pdf", PDF, "application/pdf")
    drawing = _file(wrote, "sketch.svg", SVG, "image/svg+xml")
    reply = TicketMessage.objects.create(
        ticket=proposal.ticket, author_kind=TicketMessage.AuthorKind.AGENT, body="Label attached."
    )
    label = _file(reply, "return-label.pdf", PDF, "application/pdf")

    page = review_page(client, proposal)

    evidence = page[
        page.index('id="customer-files"') : page.index("</ul>", page.index('id="customer-files"'))
    ]
    url = "/api/tickets/TCK-1001/attachments/{}/"
    # An image as a thumbnail and a link; other files (an SVG too: it can carry script) a link.
    assert f'<img src="{url.format(photo.pk)}"' in evidence
    assert f'href="{url.format(receipt.pk)}"' in evidence
    assert f'href="{url.format(drawing.pk)}"' in evidence
    assert f'<img src="{url.format(drawing.pk)}"' not in evidence
    assert f'<img src="{url.format(receipt.pk)}"' not in evidence
    # The agent's own files are not the customer's evidence.
    assert url.format(label.pk) not in evidence
    # and the reviewer can open what the page shows.
    assert client.get(url.format(photo.pk)).status_code == 200
