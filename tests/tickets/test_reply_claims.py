# ruff: noqa: RUF001 (Chinese punctuation is what these texts are written in)
"""A public reply whose claims the records contradict is refused (409 claim_contradicts_state)
unless confirmed; the confirmation is a ticket event. Internal notes are never checked
(DESIGN §13)."""

from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from rest_framework.test import APIClient

from orders.models import Order
from tests.factories import RefundRequestFactory
from tickets.models import Ticket, TicketEvent, TicketMessage

pytestmark = pytest.mark.django_db

FALSE_CLAIM = "Dear Li Wei, your refund of 899.00 CNY has been processed."
HEADPHONES = "202610150012"


def api_as(username: str = "agent") -> APIClient:
    client = APIClient()
    client.force_authenticate(get_user_model().objects.get(username=username))
    return client


def reply(body: str, *, visibility: str = "public", reference: str = "TCK-1004", **extra):
    return api_as().post(
        f"/api/tickets/{reference}/messages/",
        {"body": body, "visibility": visibility, **extra},
        format="json",
    )


def public_replies(reference: str = "TCK-1004"):
    return TicketMessage.objects.filter(ticket__reference=reference, visibility="public").exclude(
        author_kind="customer"
    )


def test_a_false_claim_in_a_public_reply_is_refused_with_the_claims(demo):
    response = reply(FALSE_CLAIM)

    assert response.status_code == 409
    body = response.json()
    assert body["code"] == "claim_contradicts_state"
    assert body["extra"] == {
        "claims": [{"text": FALSE_CLAIM, "order_id": None, "claimed": "refunded", "actual": "none"}]
    }
    assert not public_replies().exists()
    assert not TicketEvent.objects.filter(type="claims_confirmed").exists()


@pytest.mark.parametrize(
    "text",
    [
        "已退款 899.00 元，请查收。",
        "Ihre Rückerstattung wurde bearbeitet.",
        "Votre remboursement a été effectué.",
        "Refund completed: 899.00 CNY.",
    ],
)
def test_false_claims_in_any_language_are_refused(demo, text):
    assert reply(text).status_code == 409


def test_confirming_sends_it_and_records_the_claims(demo):
    response = reply(FALSE_CLAIM, confirm_claims=True)

    assert response.status_code == 201
    message = public_replies().get()
    assert (message.body, message.delivery) == (FALSE_CLAIM, "queued")
    event = TicketEvent.objects.get(type="claims_confirmed")
    assert event.actor.username == "agent"
    assert event.data == {
        "message": message.pk,
        "claims": [
            {"text": FALSE_CLAIM, "order_id": None, "claimed": "refunded", "actual": "none"}
        ],
    }


def test_a_true_claim_passes_without_confirmation_and_leaves_no_event(demo):
    ticket = Ticket.objects.get(reference="TCK-1004")
    RefundRequestFactory(
        ticket=ticket,
        order=Order.objects.get(order_id=HEADPHONES),
        amount=Decimal("899.00"),
        status="succeeded",
    )

    response = reply("Your headphones have been refunded: 899.00 CNY.")

    assert response.status_code == 201
    assert not TicketEvent.objects.filter(type="claims_confirmed").exists()


def test_the_claim_is_judged_per_order(demo):
    ticket = Ticket.objects.get(reference="TCK-1004")
    for order_id, status in (("202610110087", "succeeded"), (HEADPHONES, "pending_approval")):
        order = Order.objects.get(order_id=order_id)
        RefundRequestFactory(ticket=ticket, order=order, status=status)

    response = reply("Your headphones have been refunded.")

    assert response.status_code == 409
    assert response.json()["extra"]["claims"][0]["order_id"] == HEADPHONES
    assert response.json()["extra"]["claims"][0]["actual"] == "pending_approval"


def test_an_internal_note_is_never_checked(demo):
    response = reply(FALSE_CLAIM, visibility="internal")

    assert response.status_code == 201
    assert TicketMessage.objects.filter(body=FALSE_CLAIM, visibility="internal").exists()


def test_an_intern_hears_403_before_any_claim_is_read(demo):
    response = api_as("intern").post(
        "/api/tickets/TCK-1004/messages/",
        {"body": FALSE_CLAIM, "visibility": "public"},
        format="json",
    )

    assert response.status_code == 403


def test_the_page_shows_the_claims_and_a_confirm_button_that_sends_it(demo):
    browser = Client()
    browser.force_login(get_user_model().objects.get(username="agent"))
    url = "/tickets/TCK-1004/messages/"

    refused = browser.post(url, {"body": FALSE_CLAIM, "visibility": "public"})
    confirmed = browser.post(
        url, {"body": FALSE_CLAIM, "visibility": "public", "confirm_claims": "1"}
    )

    assert refused.status_code == 409
    page = refused.content.decode()
    assert 'id="reply-claims"' in page
    assert 'name="confirm_claims"' in page
    assert "no refund request" in page
    assert confirmed.status_code == 302
    assert public_replies().get().body == FALSE_CLAIM
    assert TicketEvent.objects.filter(type="claims_confirmed").count() == 1


@pytest.mark.parametrize("value", [1, "1", "yes", "on", None])
def test_confirm_claims_must_be_true_or_false(demo, value):
    response = reply(FALSE_CLAIM, confirm_claims=value)

    assert response.status_code == 400
    assert response.json()["extra"]["fields"]["confirm_claims"]
    assert not public_replies().exists()
