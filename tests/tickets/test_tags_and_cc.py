"""DESIGN §15 tags and CC: by service and API, bad input refused with nothing changed, an event
per change, the list's tag filter, inbound CC kept and public replies copied to it."""

import pytest
from django.core import mail as django_mail
from django.db import IntegrityError
from rest_framework.test import APIClient

from config.errors import ApplicationError, Forbidden
from tests.factories import CustomerFactory, TicketFactory, UserFactory
from tickets import services
from tickets.models import Tag, Ticket, TicketEvent, TicketMessage


def api_as(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def tag_names(ticket: Ticket) -> list[str]:
    return sorted(tag.name for tag in Ticket.objects.get(pk=ticket.pk).tags.all())


def events(ticket: Ticket, type: str) -> list[dict]:
    return [e.data for e in TicketEvent.objects.filter(ticket=ticket, type=type).order_by("id")]


# --- tags -----------------------------------------------------------------------------------


def test_tag_names_are_unique_ignoring_case(db):
    Tag.objects.create(name="Damaged")
    with pytest.raises(IntegrityError):
        Tag.objects.create(name="dAMAGED")


def test_adding_and_removing_tags_records_one_event(db, intern):
    ticket = TicketFactory()
    Tag.objects.create(name="Damaged")

    services.ticket_change_tags(ticket=ticket, actor=intern, add=["damaged", " VIP  customer "])
    services.ticket_change_tags(ticket=ticket, actor=intern, add=["DAMAGED"])  # nothing new
    services.ticket_change_tags(ticket=ticket, actor=intern, remove=["vip CUSTOMER", "absent"])

    assert tag_names(ticket) == ["Damaged"]
    assert Tag.objects.count() == 2
    assert events(ticket, "tags_changed") == [
        {"added": ["Damaged", "VIP customer"], "removed": []},
        {"added": [], "removed": ["VIP customer"]},
    ]


@pytest.mark.parametrize(
    "add",
    [[""], ["   "], ["x" * 51], ["<script>"], ["-leading"], [f"t{i}" for i in range(21)]],
)
def test_a_bad_tag_name_changes_nothing(db, agent_user, add):
    ticket = TicketFactory()
    with pytest.raises(ApplicationError):
        services.ticket_change_tags(ticket=ticket, actor=agent_user, add=["fine", *add])
    assert tag_names(ticket) == []
    assert not Tag.objects.exists()
    assert events(ticket, "tags_changed") == []


def test_a_tag_both_added_and_removed_is_left_as_it_is(db, agent_user):
    ticket = TicketFactory()
    services.ticket_change_tags(ticket=ticket, actor=agent_user, add=["a", "b"])

    services.ticket_change_tags(ticket=ticket, actor=agent_user, add=["A", "c"], remove=["a"])
    services.ticket_change_tags(ticket=ticket, actor=agent_user, add=["d"], remove=["D"])

    assert tag_names(ticket) == ["a", "b", "c"]
    assert events(ticket, "tags_changed")[1:] == [{"added": ["c"], "removed": []}]


def test_one_change_takes_as_many_tags_as_the_limit(db, agent_user):
    ticket = TicketFactory()
    names = [f"t{i:02}" for i in range(services.TAGS_PER_CHANGE)]

    services.ticket_change_tags(ticket=ticket, actor=agent_user, add=names)

    assert tag_names(ticket) == names


def test_someone_outside_support_cannot_tag(db, reviewer):
    ticket = TicketFactory()
    with pytest.raises(Forbidden):
        services.ticket_change_tags(ticket=ticket, actor=reviewer, add=["damaged"])
    assert tag_names(ticket) == []


def test_the_tags_api_and_the_tag_filter(db, agent_user):
    tagged, other = TicketFactory(), TicketFactory()
    client = api_as(agent_user)

    response = client.post(
        f"/api/tickets/{tagged.reference}/tags/", {"add": ["Damaged", "mug"]}, format="json"
    )

    assert response.status_code == 200, response.content
    assert sorted(response.json()["tags"]) == ["Damaged", "mug"]
    listed = client.get("/api/tickets/?tag=DAMAGED").json()["results"]
    assert [row["reference"] for row in listed] == [tagged.reference]
    assert other.reference not in [row["reference"] for row in listed]


@pytest.mark.parametrize(
    "body",
    [
        {"add": "damaged"},
        {"add": [1]},
        {"add": [None]},
        {"remove": {"a": 1}},
        {"add": ["x" * 51]},
        {"add": ["x" * 1_000_000]},
        {"add": [f"t{i}" for i in range(1000)]},
    ],
)
def test_the_tags_api_refuses_wrong_types_with_400(db, agent_user, body):
    ticket = TicketFactory()
    response = api_as(agent_user).post(
        f"/api/tickets/{ticket.reference}/tags/", body, format="json"
    )
    assert response.status_code == 400, response.content
    assert tag_names(ticket) == []


def test_the_tags_api_refuses_a_reviewer_and_an_unknown_ticket(db, reviewer, agent_user):
    ticket = TicketFactory()
    url = f"/api/tickets/{ticket.reference}/tags/"
    assert api_as(reviewer).post(url, {"add": ["x"]}, format="json").status_code == 403
    missing = api_as(agent_user).post(
        "/api/tickets/TCK-999999/tags/", {"add": ["x"]}, format="json"
    )
    assert missing.status_code == 404


# --- CC -------------------------------------------------------------------------------------


def test_the_cc_list_is_validated_deduplicated_and_leaves_out_the_customer(db, agent_user):
    customer = CustomerFactory(email="li.wei@example.com")
    ticket = TicketFactory(customer=customer)

    services.ticket_set_cc(
        ticket=ticket,
        actor=agent_user,
        cc=["Ana@Example.com", "ana@example.com", "LI.WEI@example.com", "bo@example.org"],
    )

    assert Ticket.objects.get(pk=ticket.pk).cc == ["Ana@Example.com", "bo@example.org"]
    assert events(ticket, "cc_changed") == [
        {"from": [], "to": ["Ana@Example.com", "bo@example.org"]}
    ]


@pytest.mark.parametrize(
    "cc", [["not-an-address"], ["a@b@c.com"], [""], [f"p{i}@example.com" for i in range(11)]]
)
def test_a_bad_cc_list_changes_nothing(db, agent_user, cc):
    ticket = TicketFactory(cc=["kept@example.com"])
    with pytest.raises(ApplicationError):
        services.ticket_set_cc(ticket=ticket, actor=agent_user, cc=cc)
    assert Ticket.objects.get(pk=ticket.pk).cc == ["kept@example.com"]


def test_the_cc_api_edits_it_and_refuses_interns_and_wrong_types(db, agent_user, intern):
    ticket = TicketFactory()
    url = f"/api/tickets/{ticket.reference}/cc/"

    assert api_as(intern).post(url, {"cc": ["a@example.com"]}, format="json").status_code == 403
    assert api_as(agent_user).post(url, {"cc": "a@example.com"}, format="json").status_code == 400
    assert api_as(agent_user).post(url, {"cc": ["nope"]}, format="json").status_code == 400
    assert api_as(agent_user).post(url, {}, format="json").status_code == 400
    many = {"cc": [f"p{i}@example.com" for i in range(1000)]}
    assert api_as(agent_user).post(url, many, format="json").status_code == 400
    assert api_as(agent_user).post(url, {"cc": [None]}, format="json").status_code == 400
    assert Ticket.objects.get(pk=ticket.pk).cc == []

    response = api_as(agent_user).post(url, {"cc": ["a@example.com"]}, format="json")
    assert response.status_code == 200
    assert response.json()["cc"] == ["a@example.com"]


INBOUND_SECRET = "tags-and-cc-inbound-secret-0123456789"


@pytest.fixture
def inbound(settings):
    settings.INBOUND_SECRET = INBOUND_SECRET
    client = APIClient()

    def post(**email):
        return client.post(
            "/api/inbound/email/", email, format="json", HTTP_X_INBOUND_SECRET=INBOUND_SECRET
        )

    return post


def test_inbound_cc_is_kept_and_a_later_email_adds_to_it(db, inbound):
    first = inbound(
        **{"from": "li.wei@example.com"},
        subject="Cracked mug",
        body="Photo attached.",
        message_id="<cc-1@example.com>",
        cc=["partner@example.com", "li.wei@example.com"],
    )
    assert first.status_code == 201, first.content
    reference = first.json()["ticket"]
    inbound(
        **{"from": "li.wei@example.com"},
        subject=f"Re: [{reference}] Cracked mug",
        body="And my sister.",
        message_id="<cc-2@example.com>",
        cc=["sister@example.com"],
    )

    assert Ticket.objects.get(reference=reference).cc == [
        "partner@example.com",
        "sister@example.com",
    ]


def test_inbound_mail_copying_more_than_the_limit_keeps_the_first_addresses(db):
    cc = [f"p{i}@example.com" for i in range(services.CC_MAX + 2)]

    received = services.ticket_receive_email(
        sender="li.wei@example.com",
        name="Li Wei",
        subject="Cracked mug",
        body="Copying the whole family.",
        message_id="<cc-many@example.com>",
        cc=cc,
    )

    assert Ticket.objects.get(pk=received.ticket.pk).cc == cc[: services.CC_MAX]


def test_inbound_with_a_bad_cc_is_a_400_and_opens_nothing(db, inbound):
    response = inbound(
        **{"from": "li.wei@example.com"},
        body="Hi",
        message_id="<cc-bad@example.com>",
        cc=["not an address"],
    )
    assert response.status_code == 400
    assert not Ticket.objects.exists()


def test_a_public_reply_is_emailed_to_the_customer_and_the_cc(db, agent_user, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    ticket = TicketFactory(cc=["partner@example.com"])
    message = services.ticket_write(
        ticket=ticket, author=agent_user, body="A refund is on its way.", visibility="public"
    )

    services.reply_send(message_pk=message.pk)

    assert TicketMessage.objects.get(pk=message.pk).delivery == "sent"
    [sent] = django_mail.outbox
    assert (sent.to, sent.cc) == ([ticket.customer.email], ["partner@example.com"])


def test_pages_add_and_remove_tags_and_edit_cc(db, client):
    agent = UserFactory(username="page_agent", role="agent")
    ticket = TicketFactory()
    client.force_login(agent)
    base = f"/tickets/{ticket.reference}"

    client.post(f"{base}/tags/", {"add": "damaged, mug"})
    client.post(f"{base}/tags/", {"remove": "mug"})
    client.post(f"{base}/cc/", {"cc": "a@example.com, b@example.com"})
    refused = client.post(f"{base}/cc/", {"cc": "nonsense"})

    assert tag_names(ticket) == ["damaged"]
    assert Ticket.objects.get(pk=ticket.pk).cc == ["a@example.com", "b@example.com"]
    assert refused.status_code == 400
    page = client.get(f"{base}/").content.decode()
    assert 'data-tag="damaged"' in page
    assert "a@example.com, b@example.com" in page


def test_a_cc_on_mail_naming_another_customers_ticket_never_reaches_that_ticket(db, inbound):
    theirs = TicketFactory(cc=["their.partner@example.com"])

    response = inbound(
        **{"from": "intruder@example.com"},
        subject=f"Re: [{theirs.reference}] hello",
        body="Copy me in.",
        message_id="<cc-intruder@example.com>",
        cc=["intruder.friend@example.com"],
    )

    assert response.status_code == 201
    assert response.json()["ticket"] != theirs.reference
    assert Ticket.objects.get(pk=theirs.pk).cc == ["their.partner@example.com"]
    own = Ticket.objects.get(reference=response.json()["ticket"])
    assert own.cc == ["intruder.friend@example.com"]
