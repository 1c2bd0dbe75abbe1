"""Refunds tell their ticket what happened through refunds.signals; the tickets app posts it."""

import pytest

from refunds.signals import tell_ticket
from tests.factories import OrderFactory, RefundRequestFactory
from tickets.models import TicketMessage

pytestmark = pytest.mark.django_db


def test_it_posts_a_refund_note_on_the_refunds_ticket_as_a_system_message():
    refund = RefundRequestFactory()

    tell_ticket(refund, "Refund rf_x approved; executing.")

    [message] = refund.ticket.messages.all()
    assert (message.author_kind, message.author, message.body) == (
        "system",
        None,
        "Refund rf_x approved; executing.",
    )
    refund.ticket.refresh_from_db()
    assert refund.ticket.updated_at == message.created_at


def test_it_posts_nothing_for_a_refund_made_outside_a_ticket():
    refund = RefundRequestFactory(ticket=None, order=OrderFactory())

    tell_ticket(refund, "Refund rf_y succeeded.")

    assert TicketMessage.objects.exists() is False
