from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model

from refunds.services import refund_propose
from tickets.models import Ticket

pytestmark = pytest.mark.django_db


def test_the_desk_requires_login(client):
    response = client.get("/tickets/")
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


def test_a_wrong_password_is_shown_on_the_login_page(client, demo):
    response = client.post("/login/", {"username": "agent", "password": "wrong"})
    assert response.status_code == 200
    assert b"didn't match" in response.content


def test_an_agent_sees_the_list_and_opens_a_ticket(client, demo):
    assert client.login(username="agent", password="demo-pass-123")
    listing = client.get("/tickets/", {"q": "mug"})
    assert b"TCK-1001" in listing.content and b"TCK-1002" not in listing.content
    page = client.get("/tickets/TCK-1001/")
    assert page.status_code == 200
    for text in (b"Li Wei", b"202610110087", b"Ceramic mug", b"129.00", b"arrived in pieces"):
        assert text in page.content


def test_the_assignee_filter_me(client, demo):
    client.login(username="agent2", password="demo-pass-123")
    listing = client.get("/tickets/", {"assignee": "me"})
    assert b"TCK-1002" in listing.content and b"TCK-1001" not in listing.content


def test_an_unknown_ticket_page_is_404(client, demo):
    client.login(username="agent", password="demo-pass-123")
    assert client.get("/tickets/TCK-9999/").status_code == 404


def test_someone_outside_the_desk_is_refused(client, outsider):
    client.force_login(outsider)
    assert client.get("/tickets/").status_code == 403


def test_the_ticket_page_lists_its_refunds_with_their_status(client, demo):
    ticket = Ticket.objects.get(reference="TCK-1001")
    agent = get_user_model().objects.get(username="agent")
    refund_propose(
        ticket=ticket,
        order=ticket.order,
        amount=Decimal("129.00"),
        reason="damaged",
        explanation="Broken.",
        requested_by=agent,
        role="agent",
    )
    client.login(username="agent", password="demo-pass-123")

    page = client.get("/tickets/TCK-1001/").content.decode()

    assert 'id="refunds-panel"' in page
    assert "129.00 CNY" in page and "Waiting for a reviewer" in page
