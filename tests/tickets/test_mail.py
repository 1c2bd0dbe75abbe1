"""What a public reply becomes: one email to the customer, after commit, threaded under the
customer's own mail; an internal note never leaves the desk. Django's locmem backend (which
the test run uses) keeps what was sent in `django.core.mail.outbox`."""

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core import mail
from django.db import IntegrityError, transaction
from rest_framework.test import APIClient

from tests.factories import UserFactory
from tickets import services
from tickets.models import Ticket, TicketEvent, TicketMessage
from tickets.tasks import send_reply

pytestmark = pytest.mark.django_db

SEND_REPLY = "tickets.tasks.send_reply"
REPLY = "I am sorry about the mug. We are looking into it and will write again today."


def deliver(published) -> None:
    for name, args in published:
        assert name == SEND_REPLY
        send_reply.apply(args=args)


def staff(username: str):
    return get_user_model().objects.get(username=username)


def write(api, username: str, body: str, visibility: str, reference: str = "TCK-1001"):
    api.force_authenticate(staff(username))
    return api.post(
        f"/api/tickets/{reference}/messages/",
        {"body": body, "visibility": visibility},
        format="json",
    )


def parsed(email):
    """The message as it goes on the wire (Django builds it from the EmailMessage)."""
    return email.message()


@pytest.fixture
def api():
    return APIClient()


def test_a_public_reply_is_emailed_to_the_customer_once_after_commit(
    api, demo, published, django_capture_on_commit_callbacks
):
    # When an agent replies publicly on Li Wei's ticket
    with django_capture_on_commit_callbacks(execute=True):
        response = write(api, "agent", REPLY, "public")
        assert published == []  # nothing leaves before the transaction commits

    # Then the reply is stored queued, and exactly one delivery task follows the commit
    assert response.status_code == 201, response.content
    assert response.json()["delivery"] == "queued"
    reply = TicketMessage.objects.get(pk=response.json()["id"])
    assert (reply.visibility, reply.delivery, reply.delivery_attempts) == ("public", "queued", 0)
    assert published == [(SEND_REPLY, (reply.pk,))]
    assert mail.outbox == []

    # and when the worker runs it, one email goes to the customer
    deliver(published)
    [email] = mail.outbox
    assert email.to == ["li.wei@example.com"]
    assert email.from_email == settings.DEFAULT_FROM_EMAIL
    assert email.subject == "[TCK-1001] My mug arrived broken"
    assert email.body.startswith(REPLY + "\n")
    assert email.body.endswith(
        "\n-- \nAlex Morgan\nRefund Desk support\n"
        "Reply to this email to continue; please keep [TCK-1001] in the subject.\n"
    )
    headers = parsed(email)
    assert headers["Message-ID"] == reply.message_id
    assert reply.message_id.startswith("<") and reply.message_id.endswith("@refund-desk.local>")
    assert headers["X-Desk-Ticket"] == "TCK-1001"
    assert headers["From"] == settings.DEFAULT_FROM_EMAIL
    assert headers["To"] == "li.wei@example.com"
    # The demo ticket did not come by email: there is nothing to answer yet.
    assert headers["In-Reply-To"] is None

    # and the reply is sent, once, with the event on the ticket's history
    reply.refresh_from_db()
    assert (reply.delivery, reply.delivery_attempts, reply.delivery_error) == ("sent", 1, "")
    assert reply.sent_at is not None
    [event] = TicketEvent.objects.filter(type=TicketEvent.Type.REPLY_SENT)
    assert (event.ticket.reference, event.actor.username) == ("TCK-1001", "agent")
    assert event.data == {"message": reply.pk}


def test_a_reply_threads_under_the_customers_latest_email(api, demo, published):
    # Given a ticket Li Wei opened by email, and a second email of hers on it (her gateway
    # sends that Message-ID without angle brackets)
    opened = services.ticket_receive_email(
        sender="li.wei@example.com",
        name="Li Wei",
        subject="Where is my refund?",
        body="I was told a refund was coming.",
        message_id="<first.li@mail.example.com>",
    )
    reference = opened.ticket.reference
    services.ticket_receive_email(
        sender="li.wei@example.com",
        name="Li Wei",
        subject=f"Re: [{reference}] Where is my refund?",
        body="Any news?",
        message_id="second.li@mail.example.com",
    )

    # When an agent replies
    response = write(api, "agent", "It went out this morning.", "public", reference)
    send_reply.apply(args=[response.json()["id"]])

    # Then the email answers her latest email and references the whole thread
    [email] = mail.outbox
    headers = parsed(email)
    assert email.subject == f"[{reference}] Where is my refund?"
    assert headers["In-Reply-To"] == "<second.li@mail.example.com>"
    assert headers["References"] == "<first.li@mail.example.com> <second.li@mail.example.com>"


def test_a_second_reply_threads_under_the_first_when_the_customer_never_emailed(api, demo):
    first = write(api, "agent", "First answer.", "public").json()["id"]
    second = write(api, "agent", "Second answer.", "public").json()["id"]
    for pk in (first, second):
        send_reply.apply(args=[pk])

    first_mail, second_mail = (parsed(email) for email in mail.outbox)
    first_id = TicketMessage.objects.get(pk=first).message_id
    assert first_mail["In-Reply-To"] is None
    assert second_mail["In-Reply-To"] == first_id
    assert second_mail["References"] == first_id
    assert second_mail["Message-ID"] == TicketMessage.objects.get(pk=second).message_id


def test_an_internal_note_is_never_emailed(
    api, demo, published, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = write(api, "agent", "Customer sounds upset; be gentle.", "internal")

    assert response.status_code == 201, response.content
    note = TicketMessage.objects.get(pk=response.json()["id"])
    assert (note.visibility, note.delivery, note.message_id) == (
        "internal",
        "not_applicable",
        None,
    )
    assert response.json()["delivery"] == "not_applicable"
    assert published == []
    assert mail.outbox == []
    assert not TicketEvent.objects.filter(type=TicketEvent.Type.REPLY_SENT).exists()


@pytest.mark.parametrize("delivery", ["queued", "sent", "failed"])
def test_the_database_refuses_an_internal_message_with_an_email_delivery(demo, delivery):
    ticket = Ticket.objects.get(reference="TCK-1001")
    with pytest.raises(IntegrityError), transaction.atomic():
        TicketMessage.objects.create(
            ticket=ticket,
            author_kind="agent",
            body="A note that must not be mailed",
            visibility="internal",
            delivery=delivery,
        )
    assert not ticket.messages.filter(visibility="internal").exists()


def test_an_intern_cannot_send_a_public_reply(
    api, demo, published, django_capture_on_commit_callbacks
):
    ticket = Ticket.objects.get(reference="TCK-1001")
    before = list(ticket.messages.values_list("pk", flat=True))

    with django_capture_on_commit_callbacks(execute=True):
        response = write(api, "intern", REPLY, "public")

    assert response.status_code == 403
    assert response.json()["code"] == "permission_denied"
    assert list(ticket.messages.values_list("pk", flat=True)) == before
    assert published == []
    assert mail.outbox == []


def test_an_intern_can_write_an_internal_note(api, demo, published):
    response = write(api, "intern", "Photo of the box is attached to the order.", "internal")

    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["author"], body["visibility"], body["delivery"]) == (
        "intern",
        "internal",
        "not_applicable",
    )


def test_a_reply_on_a_closed_ticket_is_a_conflict(
    api, demo, published, django_capture_on_commit_callbacks
):
    ticket = Ticket.objects.get(reference="TCK-1001")
    Ticket.objects.filter(pk=ticket.pk).update(status=Ticket.Status.CLOSED)
    before = ticket.messages.count()

    with django_capture_on_commit_callbacks(execute=True):
        response = write(api, "agent", REPLY, "public")

    assert response.status_code == 409
    assert response.json()["code"] == "ticket_closed"
    assert ticket.messages.count() == before
    assert published == []
    assert mail.outbox == []


def test_a_reply_whose_author_left_meanwhile_is_still_sent(demo, published):
    # Given a reply queued by an agent whose account is deleted before the mail goes out
    leaver = UserFactory(username="t_leaver", role="agent")
    ticket = Ticket.objects.get(reference="TCK-1001")
    reply = services.ticket_write(ticket=ticket, author=leaver, body=REPLY, visibility="public")
    leaver.delete()

    # When the delivery task runs
    send_reply.apply(args=[reply.pk])

    # Then the customer still gets it, signed by the desk
    [email] = mail.outbox
    assert "\n-- \nRefund Desk support\n" in email.body
    reply.refresh_from_db()
    assert reply.delivery == "sent"
