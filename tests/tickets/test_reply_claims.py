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


def test_the_page_says_each_stopped_claim_once_in_the_desks_status_words(demo):
    ticket = Ticket.objects.get(reference="TCK-1004")
    RefundRequestFactory(
        ticket=ticket,
        order=Order.objects.get(order_id=HEADPHONES),
        amount=Decimal("899.00"),
        status="pending_approval",
    )
    browser = Client()
    browser.force_login(get_user_model().objects.get(username="agent"))

    refused = browser.post(
        "/tickets/TCK-1004/messages/", {"body": FALSE_CLAIM, "visibility": "public"}
    )

    page = refused.content.decode()
    panel = page[
        page.index('id="reply-claims"') : page.index("</div>", page.index('id="reply-claims"'))
    ]
    assert refused.status_code == 409
    assert panel.count("has been processed") == 1
    assert "waiting for a reviewer" in panel
    assert "pending_approval" not in panel
    assert 'id="reply-error"' not in page  # the panel says it; no second line above it


@pytest.mark.parametrize("value", [1, "1", "yes", "on", None])
def test_confirm_claims_must_be_true_or_false(demo, value):
    response = reply(FALSE_CLAIM, confirm_claims=value)

    assert response.status_code == 400
    assert response.json()["extra"]["fields"]["confirm_claims"]
    assert not public_replies().exists()


# --- Read without a model, and by one ----------------------------------------------------------


def _pending_mug(reference: str = "TCK-1001") -> None:
    ticket = Ticket.objects.get(reference=reference)
    RefundRequestFactory(
        ticket=ticket,
        order=Order.objects.get(order_id="202610110087"),
        amount=Decimal("129.00"),
        status="pending_approval",
    )


def test_a_claim_only_the_word_lists_find_is_refused_until_confirmed(demo, settings):
    settings.LLM_PROVIDER = "offline"
    _pending_mug()
    text = "Li Wei，您好！款项已原路返回。"

    refused = reply(text, reference="TCK-1001")
    confirmed = reply(text, reference="TCK-1001", confirm_claims=True)

    assert refused.status_code == 409
    assert refused.json()["code"] == "claim_contradicts_state"
    assert refused.json()["extra"] == {
        "claims": [
            {
                "text": "款项已原路返回。",
                "order_id": None,
                "claimed": "refunded",
                "actual": "pending_approval",
            }
        ]
    }
    assert confirmed.status_code == 201
    assert public_replies("TCK-1001").get().body == text
    event = TicketEvent.objects.get(type="claims_confirmed")
    assert event.data["claims"] == refused.json()["extra"]["claims"]


def test_a_hedged_reply_is_sent_without_confirmation(demo, settings):
    settings.LLM_PROVIDER = "offline"
    _pending_mug()

    response = reply(
        "Once approved, it takes 3–5 business days to reach your card.", reference="TCK-1001"
    )

    assert response.status_code == 201
    assert not TicketEvent.objects.filter(type="claims_confirmed").exists()


def test_an_internal_note_the_word_lists_would_stop_is_written(demo, settings):
    settings.LLM_PROVIDER = "offline"
    _pending_mug()

    response = reply("退款搞定了", visibility="internal", reference="TCK-1001")

    assert response.status_code == 201


def test_with_a_model_a_refund_of_something_never_bought_is_refused(demo, fake_openai, settings):
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            "LOCATION": "reply-claims-backpack",
        }
    }
    ticket = Ticket.objects.get(reference="TCK-1001")
    RefundRequestFactory(
        ticket=ticket,
        order=Order.objects.get(order_id="202610110087"),
        amount=Decimal("129.00"),
        status="succeeded",
    )
    text = "The refund for your backpack has been processed."
    fake_openai.read_claims_with(lambda read: [("backpack", "refunded", read)])
    browser = Client()
    browser.force_login(get_user_model().objects.get(username="agent"))

    response = reply(text, reference="TCK-1001")
    page = browser.post("/tickets/TCK-1001/messages/", {"body": text, "visibility": "public"})

    assert response.status_code == 409
    assert response.json()["extra"]["claims"] == [
        {"text": text, "order_id": None, "claimed": "refunded", "actual": "not_ordered"}
    ]
    assert "not one of the customer's orders" in response.json()["message"]
    assert page.status_code == 409
    assert "not one of this customer's orders" in page.content.decode()
    assert not public_replies("TCK-1001").exists()
    assert fake_openai.requests == []
