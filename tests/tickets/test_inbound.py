"""Customer email from the mail gateway: POST /api/inbound/email/ with X-Inbound-Secret.
A subject naming the sender's own open ticket appends to it; anything else is a new ticket
(and a new customer for an unknown sender). The same message_id twice is one message."""

import hmac

import pytest
from django.db import IntegrityError, connections, transaction
from rest_framework.test import APIClient

from orders.models import Customer
from tests.services import require_postgres, run_in_threads
from tickets.models import Ticket, TicketEvent, TicketMessage

pytestmark = pytest.mark.django_db

URL = "/api/inbound/email/"
SECRET = "gateway-secret-0123456789-abcdefghij"


@pytest.fixture
def inbound(settings):
    """POST an email as the gateway does, with the right secret unless told otherwise."""
    settings.INBOUND_SECRET = SECRET

    def post(headers=None, **email):
        headers = {"X-Inbound-Secret": SECRET} if headers is None else headers
        return APIClient().post(URL, email, format="json", headers=headers)

    return post


def email_from_li(**overrides) -> dict:
    return {
        "from": "li.wei@example.com",
        "name": "Li Wei",
        "subject": "Re: [TCK-1001] My mug arrived broken",
        "body": "Here is a photo of the box.",
        "message_id": "<photo.li@mail.example.com>",
        **overrides,
    }


def counts() -> tuple[int, int, int]:
    return Customer.objects.count(), Ticket.objects.count(), TicketMessage.objects.count()


def messages_of(reference: str) -> list[tuple[str, str, str, str | None]]:
    return list(
        TicketMessage.objects.filter(ticket__reference=reference)
        .order_by("id")
        .values_list("author_kind", "visibility", "body", "message_id")
    )


# --- the gateway's secret ------------------------------------------------------------------


def test_inbound_email_is_unavailable_until_a_secret_is_configured(inbound, settings, demo):
    settings.INBOUND_SECRET = ""
    before = counts()

    response = inbound(**email_from_li())

    assert response.status_code == 503
    assert response.json()["code"] == "inbound_disabled"
    assert counts() == before


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"X-Inbound-Secret": ""},
        {"X-Inbound-Secret": "wrong"},
        {"X-Inbound-Secret": SECRET[:-1] + "X"},  # differs in the last character only
        {"X-Inbound-Secret": SECRET + "9"},
        {"X-Inbound-Secret": SECRET[:-1]},
    ],
    ids=["missing", "empty", "wrong", "last-char", "longer", "shorter"],
)
def test_inbound_email_with_a_wrong_or_missing_secret_is_refused(inbound, demo, headers):
    before = counts()

    response = inbound(headers=headers, **email_from_li())

    assert response.status_code == 401
    assert response.json()["code"] == "authentication_failed"
    assert counts() == before


def test_the_secret_is_compared_in_constant_time(inbound, demo, monkeypatch):
    compared = []
    real_compare = hmac.compare_digest

    def recording_compare(given, expected):
        compared.append((given, expected))
        return real_compare(given, expected)

    monkeypatch.setattr(hmac, "compare_digest", recording_compare)

    inbound(headers={"X-Inbound-Secret": "guess"}, **email_from_li())

    assert compared == [(b"guess", SECRET.encode())]


# --- new tickets ---------------------------------------------------------------------------


def test_an_unknown_sender_gets_a_new_customer_and_a_new_ticket(inbound, demo):
    response = inbound(
        **{
            "from": "new.person@example.org",
            "name": "New Person",
            "subject": "Broken zipper",
            "body": "The zipper on my jacket broke on day one.",
            "message_id": "<zip@example.org>",
        }
    )

    assert response.status_code == 201, response.content
    assert response.json() == {"ticket": "TCK-1005", "created": True, "duplicate": False}
    ticket = Ticket.objects.get(reference="TCK-1005")
    assert (ticket.customer.name, ticket.customer.email) == ("New Person", "new.person@example.org")
    assert (ticket.subject, ticket.status, ticket.order) == ("Broken zipper", "open", None)
    assert messages_of("TCK-1005") == [
        ("customer", "public", "The zipper on my jacket broke on day one.", "<zip@example.org>")
    ]
    [event] = ticket.events.all()
    assert (event.type, event.actor, event.data) == ("created", None, {"via": "email"})


def test_an_unknown_sender_without_a_name_is_named_after_the_address(inbound, demo):
    response = inbound(
        **{"from": "jo.b@example.org", "subject": "Hi", "body": "Hello", "message_id": "<j@x>"}
    )

    assert response.status_code == 201, response.content
    assert Customer.objects.get(email="jo.b@example.org").name == "jo.b"


def test_a_known_senders_email_without_a_reference_is_a_new_ticket_of_theirs(inbound, demo):
    li = Customer.objects.get(email="li.wei@example.com")
    customers = Customer.objects.count()

    # The address as her mail program writes it: the case differs
    response = inbound(**email_from_li(**{"from": "Li.Wei@EXAMPLE.com", "subject": "A new one"}))

    assert response.status_code == 201, response.content
    assert response.json()["created"] is True
    ticket = Ticket.objects.get(reference=response.json()["ticket"])
    assert ticket.customer == li
    assert Customer.objects.count() == customers


# --- replies to a ticket -------------------------------------------------------------------


def test_an_email_naming_the_senders_ticket_is_appended_to_it(inbound, demo):
    before = messages_of("TCK-1001")

    response = inbound(**email_from_li())

    assert response.status_code == 201, response.content
    assert response.json() == {"ticket": "TCK-1001", "created": False, "duplicate": False}
    assert messages_of("TCK-1001") == [
        *before,
        ("customer", "public", "Here is a photo of the box.", "<photo.li@mail.example.com>"),
    ]
    assert Ticket.objects.count() == 4
    ticket = Ticket.objects.get(reference="TCK-1001")
    assert ticket.status == "open"
    assert list(ticket.events.values_list("type", flat=True)) == ["created", "customer_replied"]


def test_the_same_email_delivered_twice_is_one_message(inbound, demo):
    first = inbound(**email_from_li())
    before = counts()

    again = inbound(**email_from_li())

    assert first.status_code == 201
    assert again.status_code == 200
    assert again.json() == {"ticket": "TCK-1001", "created": False, "duplicate": True}
    assert counts() == before
    assert TicketEvent.objects.filter(type="customer_replied").count() == 1


def test_the_same_new_email_delivered_twice_opens_one_ticket(inbound, demo):
    email = email_from_li(subject="Something else", message_id="<other.li@mail.example.com>")
    first = inbound(**email)
    before = counts()

    again = inbound(**email)

    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json() == {"ticket": first.json()["ticket"], "created": False, "duplicate": True}
    assert counts() == before


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "email",
    [
        email_from_li(),
        {
            "from": "new.person@example.org",
            "name": "New Person",
            "subject": "Broken zipper",
            "body": "The zipper broke.",
            "message_id": "<zip@example.org>",
        },
    ],
    ids=["reply-to-a-ticket", "new-sender"],
)
def test_the_same_email_delivered_many_times_at_once_is_one_message(settings, demo, email):
    require_postgres()
    settings.INBOUND_SECRET = SECRET
    before = counts()

    def post(_):
        client = APIClient()
        response = client.post(URL, email, format="json", headers={"X-Inbound-Secret": SECRET})
        connections.close_all()
        return response.status_code, response.json()

    outcomes = run_in_threads(6, post)

    statuses = sorted(status for status, _ in outcomes)
    assert statuses == [200, 200, 200, 200, 200, 201], outcomes
    assert len({body["ticket"] for _, body in outcomes}) == 1
    assert TicketMessage.objects.filter(message_id=email["message_id"]).count() == 1
    new_customer = 0 if email["from"] == "li.wei@example.com" else 1
    new_ticket = 0 if "[TCK-1001]" in email["subject"] else 1
    assert counts() == (before[0] + new_customer, before[1] + new_ticket, before[2] + 1)


def test_an_email_naming_another_customers_ticket_does_not_touch_it(inbound, demo):
    before = messages_of("TCK-1001")

    # Maria names Li's ticket
    response = inbound(
        **email_from_li(**{"from": "maria.garcia@example.com", "message_id": "<m@example.com>"})
    )

    assert response.status_code == 201, response.content
    assert response.json()["created"] is True
    assert response.json()["ticket"] not in ("TCK-1001", "TCK-1002")
    ticket = Ticket.objects.get(reference=response.json()["ticket"])
    assert ticket.customer.email == "maria.garcia@example.com"
    assert messages_of("TCK-1001") == before
    assert (
        not TicketEvent.objects.filter(ticket__reference="TCK-1001")
        .exclude(type="created")
        .exists()
    )


def test_a_subject_naming_several_tickets_lands_on_the_senders_own(inbound, demo):
    maria_before = messages_of("TCK-1002")

    # Li's subject names Maria's ticket first, then her own
    response = inbound(**email_from_li(subject="Like [TCK-1002]? Re: [TCK-1001] My mug"))

    assert response.status_code == 201, response.content
    assert response.json() == {"ticket": "TCK-1001", "created": False, "duplicate": False}
    assert messages_of("TCK-1002") == maria_before


@pytest.mark.parametrize("status", ["pending", "solved"])
def test_an_email_on_a_pending_or_solved_ticket_reopens_it(inbound, demo, status):
    Ticket.objects.filter(reference="TCK-1001").update(status=status)

    response = inbound(**email_from_li())

    assert response.status_code == 201, response.content
    assert response.json()["ticket"] == "TCK-1001"
    ticket = Ticket.objects.get(reference="TCK-1001")
    assert ticket.status == "open"
    changed = ticket.events.get(type="status_changed")
    assert changed.actor is None
    assert changed.data == {"from": status, "to": "open", "reason": "customer replied"}


def test_an_email_naming_a_closed_ticket_opens_a_new_one(inbound, demo):
    Ticket.objects.filter(reference="TCK-1001").update(status="closed")
    before = messages_of("TCK-1001")

    response = inbound(**email_from_li())

    assert response.status_code == 201, response.content
    assert response.json() == {"ticket": "TCK-1005", "created": True, "duplicate": False}
    assert Ticket.objects.get(reference="TCK-1001").status == "closed"
    assert messages_of("TCK-1001") == before
    assert Ticket.objects.get(reference="TCK-1005").customer.email == "li.wei@example.com"


# --- orders named in the email ---------------------------------------------------------------


def test_a_new_ticket_is_linked_to_the_senders_order_named_in_the_body(inbound, demo):
    response = inbound(
        **email_from_li(subject="Headphones again", body="Order 202610150012 is faulty too.")
    )

    assert response.status_code == 201, response.content
    ticket = Ticket.objects.get(reference=response.json()["ticket"])
    assert ticket.order.order_id == "202610150012"


def test_another_customers_order_named_in_the_body_is_not_linked(inbound, demo):
    # 202610250777 is Maria's desk lamp
    response = inbound(**email_from_li(subject="A lamp?", body="What about order 202610250777?"))

    assert response.status_code == 201, response.content
    assert Ticket.objects.get(reference=response.json()["ticket"]).order is None


# --- bad input ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"from": None}, "from"),
        ({"from": "not-an-email"}, "from"),
        ({"from": "li.wei@"}, "from"),
        ({"message_id": None}, "message_id"),
        ({"message_id": ""}, "message_id"),
        ({"message_id": "   "}, "message_id"),
        ({"message_id": 42}, "message_id"),
        ({"message_id": "<a@b>\r\nBcc: everyone@example.com"}, "message_id"),
        ({"message_id": "<two words@example.com>"}, "message_id"),
        ({"body": None}, "body"),
        ({"body": 123}, "body"),
        ({"body": ["a", "b"]}, "body"),
        ({"subject": {"x": 1}}, "subject"),
        ({"name": 7}, "name"),
    ],
)
def test_bad_input_is_a_400_naming_the_field_and_creates_nothing(inbound, demo, change, field):
    email = email_from_li(subject="Fresh topic")
    for key, value in change.items():
        if value is None:
            del email[key]
        else:
            email[key] = value
    before = counts()

    response = inbound(**email)

    assert response.status_code == 400, response.content
    assert field in response.json()["extra"]["fields"]
    assert counts() == before


def test_two_customers_cannot_share_an_address_that_differs_only_in_case(db):
    Customer.objects.create(name="Bob", email="Bob@example.com")

    with pytest.raises(IntegrityError), transaction.atomic():
        Customer.objects.create(name="bob", email="bob@EXAMPLE.com")
