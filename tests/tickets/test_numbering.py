"""Ticket references: TCK-1001 onwards, one number per new ticket from a counter whose row a
new ticket holds until it commits, so new tickets arriving together never take the same
number, and a mail gateway never hears 4xx for a well-formed email."""

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from orders.models import Customer
from tests.factories import TicketFactory
from tests.services import require_postgres, run_in_threads
from tickets.models import Ticket

pytestmark = pytest.mark.django_db

URL = "/api/inbound/email/"
SECRET = "gateway-secret-0123456789-abcdefghij"


def new_email(n: int) -> dict:
    return {
        "from": f"sender{n}@example.org",
        "subject": f"Question {n}",
        "body": "Where is my parcel?",
        "message_id": f"<new-{n}@example.org>",
    }


def post(email: dict):
    return APIClient().post(URL, email, format="json", headers={"X-Inbound-Secret": SECRET})


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_it_numbers_sixteen_new_emails_arriving_at_once_one_after_another(settings, demo):
    require_postgres()
    settings.INBOUND_SECRET = SECRET

    def deliver(n: int):
        response = post(new_email(n))
        return response.status_code, response.json()

    outcomes = run_in_threads(16, deliver)

    assert [status for status, _ in outcomes] == [201] * 16, outcomes
    references = sorted(body["ticket"] for _, body in outcomes)
    assert references == [f"TCK-{number}" for number in range(1005, 1021)]
    assert Ticket.objects.count() == 20


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_it_makes_one_customer_of_a_new_sender_whose_emails_arrive_at_once(settings, demo):
    require_postgres()
    settings.INBOUND_SECRET = SECRET

    def deliver(n: int):
        # One new sender, the address written in different ASCII cases
        sender = "New.Sender@Example.org" if n % 2 else "new.sender@example.org"
        response = post({**new_email(n), "from": sender})
        return response.status_code, response.json()

    outcomes = run_in_threads(8, deliver)

    assert [status for status, _ in outcomes] == [201] * 8, outcomes
    [customer] = Customer.objects.filter(email_key="new.sender@example.org")
    assert customer.tickets.count() == 8
    assert len({body["ticket"] for _, body in outcomes}) == 8


def test_it_numbers_the_first_new_ticket_after_the_demo_tickets(settings, demo):
    settings.INBOUND_SECRET = SECRET

    response = post(new_email(1))

    assert response.status_code == 201, response.content
    assert response.json()["ticket"] == "TCK-1005"


def test_it_numbers_past_references_given_outside_the_counter(settings, demo):
    # Given the counter at TCK-1005 and tickets that came with references of their own
    settings.INBOUND_SECRET = SECRET
    post(new_email(1))
    TicketFactory(reference="TCK-1006")
    TicketFactory(reference="TCK-1100")

    # When the next new email arrives
    response = post(new_email(2))

    # Then it takes the number after the highest, not one that is taken
    assert response.status_code == 201, response.content
    assert response.json()["ticket"] == "TCK-1101"
    assert Ticket.objects.get(reference="TCK-1101").subject == "Question 2"


def test_it_numbers_tickets_from_the_new_ticket_page_and_from_mail_in_one_series(
    settings, client, demo
):
    settings.INBOUND_SECRET = SECRET
    client.force_login(get_user_model().objects.get(username="agent"))

    page = client.post(
        "/tickets/new/", {"email": "caller@example.org", "subject": "By phone", "body": "Hi"}
    )
    mail = post(new_email(1))
    page_again = client.post(
        "/tickets/new/", {"email": "caller@example.org", "subject": "Again", "body": "Hi"}
    )

    assert (page.status_code, page["Location"]) == (302, "/tickets/TCK-1005/")
    assert mail.json()["ticket"] == "TCK-1006"
    assert (page_again.status_code, page_again["Location"]) == (302, "/tickets/TCK-1007/")
