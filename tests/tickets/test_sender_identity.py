"""Who a sender is (DESIGN invariant 11): an address matches a customer only when it is equal
after IDNA-encoding the domain and lower-casing ASCII. Look-alikes that PostgreSQL's Unicode
case rules fold into a customer's address (the dotless i, the long s, the Kelvin sign), fullwidth
letters and Cyrillic homoglyphs never reach that customer's tickets; everything else is a new
customer. Run on PostgreSQL (whose folding the attacks used) and on SQLite."""

import importlib

import pytest
from django.apps import apps as django_apps
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from rest_framework.test import APIClient

from orders.addresses import BadAddress, email_key
from orders.models import Customer
from tests.factories import CustomerFactory, TicketFactory
from tickets.models import Ticket, TicketEvent, TicketMessage

pytestmark = pytest.mark.django_db

URL = "/api/inbound/email/"
SECRET = "gateway-secret-0123456789-abcdefghij"


@pytest.fixture
def inbound(settings):
    settings.INBOUND_SECRET = SECRET

    def post(sender: str, subject: str, message_id: str):
        email = {"from": sender, "subject": subject, "body": "Reply to me."}
        email["message_id"] = message_id
        return APIClient().post(URL, email, format="json", headers={"X-Inbound-Secret": SECRET})

    return post


def conversation(reference: str) -> list[tuple[str, str | None]]:
    return list(
        TicketMessage.objects.filter(ticket__reference=reference)
        .order_by("id")
        .values_list("body", "message_id")
    )


def history(reference: str) -> list[str]:
    return list(
        TicketEvent.objects.filter(ticket__reference=reference).values_list("type", flat=True)
    )


def counts() -> tuple[int, int, int]:
    return Customer.objects.count(), Ticket.objects.count(), TicketMessage.objects.count()


# --- look-alikes of a customer's address ----------------------------------------------------


@pytest.mark.parametrize(
    ("real", "look_alike", "reference"),
    [
        ("li.wei@example.com", "l\u0131.we\u0131@example.com", "TCK-1001"),  # dotless i
        ("sam.carter@example.com", "\u017fam.carter@example.com", "TCK-1003"),  # long s
        ("maria.garcia@example.com", "maria.garcia@ex\u0430mple.com", "TCK-1002"),  # Cyrillic a
    ],
    ids=["dotless-i", "long-s", "cyrillic-a-in-the-domain"],
)
def test_it_gives_a_look_alike_sender_a_customer_and_ticket_of_their_own(
    inbound, demo, real, look_alike, reference
):
    # Given the real customer's open ticket
    customer = Customer.objects.get(email=real)
    before, events, (customers, tickets, _) = conversation(reference), history(reference), counts()

    # When a look-alike address writes naming that ticket
    response = inbound(look_alike, f"Re: [{reference}] Send the refund here", "<look@alike>")

    # Then it is a new customer with a new ticket, and the real customer's got nothing
    assert response.status_code == 201, response.content
    assert response.json() == {"ticket": "TCK-1005", "created": True, "duplicate": False}
    opened = Ticket.objects.get(reference="TCK-1005")
    assert opened.customer.email == look_alike
    assert opened.customer != customer
    assert conversation("TCK-1005") == [("Reply to me.", "<look@alike>")]
    assert conversation(reference) == before
    assert history(reference) == events
    assert counts()[:2] == (customers + 1, tickets + 1)
    assert Customer.objects.get(pk=customer.pk).email == real


def test_it_gives_a_sender_differing_only_in_a_kelvin_sign_a_customer_of_their_own(inbound, db):
    # Given Kate and her open ticket
    kate = CustomerFactory(name="Kate", email="kate@example.com")
    TicketFactory(reference="TCK-1001", customer=kate, order=None)
    before = conversation("TCK-1001")

    # When "\u212aate" (KELVIN SIGN, which PostgreSQL lower-cases to k) writes naming it
    response = inbound("\u212aate@example.com", "Re: [TCK-1001] hello", "<kelvin@x>")

    # Then a new customer and ticket, not a 500, and Kate's ticket got nothing
    assert response.status_code == 201, response.content
    assert response.json() == {"ticket": "TCK-1002", "created": True, "duplicate": False}
    assert Ticket.objects.get(reference="TCK-1002").customer.email == "\u212aate@example.com"
    assert conversation("TCK-1001") == before
    assert Customer.objects.count() == 2


@pytest.mark.parametrize(
    ("look_alike", "real"),
    [
        ("\u017fam@example.org", "sam@example.org"),
        ("l\u0131@example.org", "li@example.org"),
        ("\u212aim@example.org", "kim@example.org"),
    ],
    ids=["long-s", "dotless-i", "kelvin-sign"],
)
def test_it_never_hands_a_real_senders_mail_to_a_look_alike_that_wrote_first(
    inbound, db, look_alike, real
):
    # Given a look-alike that wrote first
    first = inbound(look_alike, "Hello", "<first@x>")

    # When the real address writes
    second = inbound(real, "Where is my order?", "<second@x>")

    # Then the real sender is a customer of their own, with their own ticket
    assert (first.status_code, second.status_code) == (201, 201), second.content
    theirs = Ticket.objects.get(reference=second.json()["ticket"])
    assert theirs.customer.email == real
    assert conversation(theirs.reference) == [("Reply to me.", "<second@x>")]
    impostor = Ticket.objects.get(reference=first.json()["ticket"])
    assert impostor.customer.email == look_alike
    assert conversation(impostor.reference) == [("Reply to me.", "<first@x>")]


@pytest.mark.parametrize(
    "sender",
    [
        "\uff53am.carter@example.com",  # fullwidth s in the local part
        "m\u0430ria.garcia@example.com",  # Cyrillic a in the local part
        "sam.carter@\uff45xample.com",  # fullwidth e in the domain
        "sam.carter@\u212axample.com",  # Kelvin sign in the domain
        "li.wei@EX\u00c4MPLE.com",  # a capital outside ASCII in the domain
    ],
    ids=["fullwidth-local", "cyrillic-local", "fullwidth-domain", "kelvin-domain", "capital-a-"],
)
def test_it_refuses_an_address_that_is_not_exact_without_touching_anything(inbound, demo, sender):
    before = counts()
    tickets = {ref: conversation(ref) for ref in ("TCK-1001", "TCK-1002", "TCK-1003")}

    response = inbound(sender, "Re: [TCK-1001] [TCK-1002] [TCK-1003] hi", "<refused@x>")

    assert response.status_code == 400, response.content
    assert list(response.json()["extra"]["fields"]) == ["from"]
    assert counts() == before
    assert {ref: conversation(ref) for ref in tickets} == tickets


# --- the same address, written differently ------------------------------------------------


def test_it_matches_an_address_whatever_the_case_of_its_ascii_letters(inbound, demo):
    li = Customer.objects.get(email="li.wei@example.com")

    response = inbound("LI.Wei@EXAMPLE.Com", "Re: [TCK-1001] My mug", "<case@x>")

    assert response.status_code == 201, response.content
    assert response.json() == {"ticket": "TCK-1001", "created": False, "duplicate": False}
    assert conversation("TCK-1001")[-1] == ("Reply to me.", "<case@x>")
    assert Ticket.objects.get(reference="TCK-1001").customer == li
    assert Customer.objects.count() == 3


@pytest.mark.parametrize(
    ("first", "then"),
    [
        ("joerg@b\u00fccher.de", "Joerg@XN--BCHER-KVA.de"),
        ("joerg@xn--bcher-kva.de", "joerg@B\u00fcCHER.de"),
    ],
    ids=["unicode-then-punycode", "punycode-then-unicode"],
)
def test_it_matches_an_international_domain_in_unicode_and_in_punycode(inbound, db, first, then):
    # Given a customer who first wrote from one spelling of the domain
    opened = inbound(first, "Broken kettle", "<one@x>")
    reference = opened.json()["ticket"]

    # When the other spelling names the ticket
    response = inbound(then, f"Re: [{reference}] Broken kettle", "<two@x>")

    # Then it is the same customer, on the same ticket
    assert response.status_code == 201, response.content
    assert response.json() == {"ticket": reference, "created": False, "duplicate": False}
    assert conversation(reference) == [("Reply to me.", "<one@x>"), ("Reply to me.", "<two@x>")]
    [customer] = Customer.objects.all()
    assert (customer.email, customer.email_key) == (first, "joerg@xn--bcher-kva.de")


# --- the key ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("address", "key"),
    [
        ("Li.Wei@Example.COM", "li.wei@example.com"),
        ("l\u0131.we\u0131@example.com", "l\u0131.we\u0131@example.com"),
        ("\u017fAM@example.com", "\u017fam@example.com"),
        ("\u212aate@example.com", "\u212aate@example.com"),
        ("\u00c4rger@example.com", "\u00c4rger@example.com"),  # non-ASCII stays as it is
        ("joerg@B\u00fccher.DE", "joerg@xn--bcher-kva.de"),
        ("joerg@XN--BCHER-KVA.DE", "joerg@xn--bcher-kva.de"),
        ("a@stra\u00dfe.de", "a@xn--strae-oqa.de"),  # not strasse.de, as IDNA 2003 had it
        ('"a@b"@Example.com', '"a@b"@example.com'),
        ("a@[127.0.0.1]", "a@[127.0.0.1]"),
    ],
)
def test_it_keys_an_address_on_its_ascii_lower_case_and_idna_domain(address, key):
    assert email_key(address) == key


@pytest.mark.parametrize(
    "address",
    [
        "no-at-sign",
        "@example.com",
        "a@",
        "a@\uff45xample.com",
        "a@B\u00dcCHER.de",
        "a@xn--zz.\u00fc",
    ],
)
def test_it_refuses_to_key_an_address_without_an_encodable_domain(address):
    with pytest.raises(BadAddress):
        email_key(address)


def test_it_stores_the_key_with_every_customer_and_keeps_it_unique(db):
    bob = Customer.objects.create(name="Bob", email="Bob@Example.com")

    assert Customer.objects.get(pk=bob.pk).email_key == "bob@example.com"
    with pytest.raises(IntegrityError), transaction.atomic():
        Customer.objects.create(name="bob", email="bob@EXAMPLE.com")


def test_it_lets_addresses_that_only_unicode_folding_would_join_be_two_customers(db):
    Customer.objects.create(name="Kate", email="kate@example.com")
    Customer.objects.create(name="Impostor", email="\u212aate@example.com")
    Customer.objects.create(name="Sam", email="sam@example.com")
    Customer.objects.create(name="Long s", email="\u017fam@example.com")

    assert Customer.objects.count() == 4


@pytest.mark.parametrize(
    ("address", "error"),
    [
        ("LI.WEI@example.com", "Another customer has this address."),
        ("li.wei@\uff45xample.com", "cannot be used: its domain is not a valid"),
    ],
)
def test_it_tells_whoever_edits_a_customer_why_an_address_cannot_be_theirs(demo, address, error):
    sam = Customer.objects.get(email="sam.carter@example.com")
    sam.email = address

    with pytest.raises(ValidationError) as refused:
        sam.full_clean()

    [message] = refused.value.message_dict["email"]
    assert error in message
    assert Customer.objects.get(pk=sam.pk).email == "sam.carter@example.com"


def test_it_keys_existing_customers_oldest_first_and_leaves_a_younger_duplicate_unkeyed(db):
    # Given customers from before the key: one address in Unicode and, younger, in punycode,
    # and one whose domain cannot be encoded (bulk_create skips save, which sets the key)
    Customer.objects.bulk_create(
        [
            Customer(name="Older", email="joerg@b\u00fccher.de"),
            Customer(name="Younger", email="joerg@xn--bcher-kva.de"),
            Customer(name="Fullwidth", email="x@\uff45xample.com"),
            Customer(name="Bob", email="Bob@Example.com"),
        ]
    )
    migration = importlib.import_module("orders.migrations.0003_customer_email_key")

    migration.fill_email_keys(django_apps, None)

    assert dict(Customer.objects.values_list("name", "email_key")) == {
        "Older": "joerg@xn--bcher-kva.de",
        "Younger": None,
        "Fullwidth": None,
        "Bob": "bob@example.com",
    }


# --- the new ticket page ------------------------------------------------------------------


@pytest.fixture
def agent_client(client, demo):
    client.force_login(get_user_model().objects.get(username="agent"))
    return client


def test_the_new_ticket_page_does_not_give_a_look_alike_the_real_customers_order(agent_client):
    before = counts()

    response = agent_client.post(
        "/tickets/new/",
        {
            "email": "l\u0131.we\u0131@example.com",
            "subject": "Refund to my new address",
            "body": "Same person, new address.",
            "order_id": "202610110087",  # Li Wei's
        },
    )

    assert response.status_code == 400
    assert "has no order 202610110087" in response.content.decode()
    assert counts() == before


def test_the_new_ticket_page_opens_a_look_alikes_ticket_on_a_customer_of_their_own(agent_client):
    li = Customer.objects.get(email="li.wei@example.com")

    response = agent_client.post(
        "/tickets/new/",
        {"email": "l\u0131.we\u0131@example.com", "subject": "Hello", "body": "Hi"},
    )

    assert response.status_code == 302
    opened = Ticket.objects.get(subject="Hello")
    assert opened.customer != li
    assert opened.customer.email == "l\u0131.we\u0131@example.com"


def test_the_new_ticket_page_refuses_a_domain_that_cannot_be_encoded(agent_client):
    before = counts()

    response = agent_client.post(
        "/tickets/new/",
        {"email": "sam.carter@\uff45xample.com", "subject": "Hello", "body": "Hi"},
    )

    assert response.status_code == 400
    assert 'id="error-email"' in response.content.decode()
    assert counts() == before
