"""DESIGN §15 macros: placeholders checked at save, rendered from the ticket's state now (the
refund placeholders read the current refund), a missing value refused clearly, shared and
personal macros, and nothing sent or changed by applying one."""

from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError
from rest_framework.test import APIClient

from refunds.models import RefundRequest
from tests.factories import RefundRequestFactory, TicketFactory
from tickets.models import Macro, Ticket, TicketEvent, TicketMessage

BODY = (
    "Hi {{customer.first_name}}, about {{ticket.reference}} (order {{order.id}}): your refund of "
    "{{refund.amount}} is {{ refund.status }}. {{agent.name}}"
)


def api_as(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def refund_on(ticket: Ticket, amount: str, status: str) -> RefundRequest:
    return RefundRequestFactory(ticket=ticket, amount=Decimal(amount), status=status)


@pytest.mark.parametrize("body", ["Hi {{customer.nickname}}", "{{ refund.amount }} {{order}}"])
def test_a_macro_with_an_unknown_placeholder_cannot_be_saved(db, body):
    with pytest.raises(ValidationError) as refused:
        Macro.objects.create(name="Bad", body=body)
    assert "Unknown placeholder" in str(refused.value)
    assert not Macro.objects.exists()


@pytest.mark.parametrize(
    "actions",
    [{"status": "gone"}, {"priority": "asap"}, {"add_tags": "x"}, {"assign": "me"}, ["status"]],
)
def test_a_macro_with_bad_actions_cannot_be_saved(db, actions):
    with pytest.raises(ValidationError):
        Macro.objects.create(name="Bad", body="Hi", actions=actions)
    assert not Macro.objects.exists()


def test_applying_renders_the_current_state_and_changes_nothing(db, agent_user):
    agent_user.first_name, agent_user.last_name = "Mei", "Chen"
    agent_user.save()
    ticket = TicketFactory(customer__name="Li Wei")
    refund = refund_on(ticket, "129.00", "pending_approval")
    macro = Macro.objects.create(
        name="Refund update",
        body=BODY,
        actions={"status": "pending", "priority": "high", "add_tags": ["refund"]},
    )
    url = f"/api/tickets/{ticket.reference}/macros/{macro.pk}/apply/"
    client = api_as(agent_user)
    events_before = TicketEvent.objects.count()

    first = client.post(url)
    RefundRequest.objects.filter(pk=refund.pk).update(status="succeeded")
    second = client.post(url)

    assert first.status_code == 200, first.content
    assert first.json() == {
        "body": f"Hi Li, about {ticket.reference} (order {ticket.order.order_id}): your refund "
        "of 129.00 CNY is pending approval. Mei Chen",
        "visibility": "public",
        "actions": {"status": "pending", "priority": "high", "add_tags": ["refund"]},
    }
    assert "is succeeded." in second.json()["body"]
    ticket = Ticket.objects.get(pk=ticket.pk)
    assert (ticket.status, ticket.priority, list(ticket.tags.all())) == ("open", "normal", [])
    assert not TicketMessage.objects.filter(ticket=ticket).exists()
    assert TicketEvent.objects.count() == events_before


def test_a_missing_value_leaves_the_macro_unappliable(db, agent_user):
    ticket = TicketFactory()  # no refund on it
    macro = Macro.objects.create(name="Refund update", body=BODY)

    response = api_as(agent_user).post(f"/api/tickets/{ticket.reference}/macros/{macro.pk}/apply/")

    assert response.status_code == 409
    body = response.json()
    assert body["code"] == "macro_unappliable"
    assert body["extra"]["missing"] == ["refund.amount", "refund.status"]
    assert "{{refund.amount}}" in body["message"]


def test_the_list_has_the_shared_macros_and_mine_only(db, agent_user, agent2_user):
    shared = Macro.objects.create(name="Shared", body="Hello {{customer.name}}")
    mine = Macro.objects.create(name="Mine", body="Hi", owner=agent_user)
    theirs = Macro.objects.create(name="Theirs", body="Hi", owner=agent2_user)
    client = api_as(agent_user)

    listed = client.get("/api/macros/").json()["results"]

    assert [m["id"] for m in listed] == [mine.pk, shared.pk]
    assert listed[1]["shared"] is True
    ticket = TicketFactory()
    other = client.post(f"/api/tickets/{ticket.reference}/macros/{theirs.pk}/apply/")
    assert other.status_code == 404


def test_someone_outside_support_cannot_list_or_apply(db, reviewer):
    macro = Macro.objects.create(name="Shared", body="Hi")
    ticket = TicketFactory()
    client = api_as(reviewer)
    assert client.get("/api/macros/").status_code == 403
    assert (
        client.post(f"/api/tickets/{ticket.reference}/macros/{macro.pk}/apply/").status_code == 403
    )


def test_applying_to_an_unknown_ticket_or_macro_is_a_404(db, agent_user):
    macro = Macro.objects.create(name="Shared", body="Hi")
    client = api_as(agent_user)
    assert client.post(f"/api/tickets/TCK-999999/macros/{macro.pk}/apply/").status_code == 404
    ticket = TicketFactory()
    assert client.post(f"/api/tickets/{ticket.reference}/macros/999999/apply/").status_code == 404


# --- the ticket page ------------------------------------------------------------------------


def test_the_page_fills_the_reply_box_and_confirming_applies_the_actions(db, client, agent_user):
    ticket = TicketFactory(customer__name="Li Wei")
    macro = Macro.objects.create(
        name="Ask for a photo",
        body="Hi {{customer.first_name}}, could you send a photo?",
        actions={"status": "pending", "priority": "high", "add_tags": ["photo"]},
    )
    client.force_login(agent_user)

    page = client.get(f"/tickets/{ticket.reference}/?macro={macro.pk}").content.decode()

    assert "Hi Li, could you send a photo?</textarea>" in page
    assert 'id="macro-actions-form"' in page
    assert Ticket.objects.get(pk=ticket.pk).status == "open"  # nothing changed yet

    confirmed = client.post(
        f"/tickets/{ticket.reference}/macros/{macro.pk}/actions/",
        {"body": "Hi Li, a photo please.", "visibility": "public"},
    )

    # The text in the reply box comes back unsent, as the agent left it.
    assert "Hi Li, a photo please.</textarea>" in confirmed.content.decode()
    ticket = Ticket.objects.get(pk=ticket.pk)
    assert (ticket.status, ticket.priority) == ("pending", "high")
    assert [tag.name for tag in ticket.tags.all()] == ["photo"]
    assert not TicketMessage.objects.filter(ticket=ticket).exists()


def test_after_sending_the_macros_actions_stay_offered_and_the_reply_box_is_empty(
    db, client, agent_user
):
    ticket = TicketFactory(customer__name="Li Wei")
    macro = Macro.objects.create(
        name="Ask for a photo",
        body="Hi {{customer.first_name}}, could you send a photo?",
        actions={"status": "pending", "add_tags": ["photo"]},
    )
    client.force_login(agent_user)
    client.get(f"/tickets/{ticket.reference}/?macro={macro.pk}")

    sent = client.post(
        f"/tickets/{ticket.reference}/messages/",
        {"body": "Hi Li, could you send a photo?", "visibility": "internal", "macro": macro.pk},
        follow=True,
    )

    page = sent.content.decode()
    assert 'id="macro-actions-form"' in page
    assert 'id="macro-actions-dismiss"' in page
    assert "could you send a photo?</textarea>" not in page  # the sent text is not back
    assert TicketMessage.objects.filter(ticket=ticket).count() == 1
    # and the plain page (Dismiss) offers them no more
    plain = client.get(f"/tickets/{ticket.reference}/").content.decode()
    assert 'id="macro-actions-form"' not in plain


def test_the_page_says_why_a_macro_cannot_be_used(db, client, agent_user):
    ticket = TicketFactory()
    macro = Macro.objects.create(name="Refund done", body="{{refund.amount}} refunded.")
    client.force_login(agent_user)

    response = client.get(f"/tickets/{ticket.reference}/?macro={macro.pk}")

    assert response.status_code == 409
    assert "it has no value for {{refund.amount}}" in response.content.decode()


def test_an_intern_cannot_confirm_a_macro_s_status_change(db, client, intern):
    ticket = TicketFactory()
    macro = Macro.objects.create(name="Wait", body="Hi", actions={"status": "pending"})
    client.force_login(intern)

    response = client.post(f"/tickets/{ticket.reference}/macros/{macro.pk}/actions/")

    assert response.status_code == 403
    assert Ticket.objects.get(pk=ticket.pk).status == "open"


# --- In languages, and kept by supervisors (DESIGN §19) ------------------------------------

SORRY = {
    "name": "Sorry",
    "body": "Sorry, {{customer.first_name}}: we are on {{ticket.reference}}. {{agent.name}}",
    "translations": {"zh": "{{customer.first_name}}，很抱歉：我们正在处理 {{ticket.reference}}。"},
}


def test_a_supervisor_adds_a_shared_macro_in_languages(db, supervisor):
    response = api_as(supervisor).post("/api/macros/", SORRY, format="json")

    assert response.status_code == 201, response.content
    macro = Macro.objects.get(pk=response.json()["id"])
    assert macro.owner is None
    assert macro.translations == SORRY["translations"]
    assert response.json()["shared"] is True


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({**SORRY, "translations": {"xx": "Hi"}}, "translations"),
        ({**SORRY, "translations": {"zh": "你好 {{customer.nickname}}"}}, "translations"),
        ({**SORRY, "translations": {"zh": ""}}, "translations"),
        ({**SORRY, "translations": ["zh"]}, "translations"),
        ({**SORRY, "body": "Hi {{order}}"}, "body"),
    ],
)
def test_a_macro_that_cannot_be_kept_is_refused_naming_the_field(db, supervisor, body, field):
    response = api_as(supervisor).post("/api/macros/", body, format="json")

    assert response.status_code == 400
    assert field in response.json()["extra"]["fields"]
    assert not Macro.objects.exists()


def test_agents_use_macros_but_do_not_add_or_change_shared_ones(db, agent_user):
    macro = Macro.objects.create(name="Shared", body="Hello")
    client = api_as(agent_user)

    assert client.get("/api/macros/").status_code == 200
    assert client.post("/api/macros/", SORRY, format="json").status_code == 403
    assert (
        client.patch(f"/api/macros/{macro.pk}/", {"body": "Hi"}, format="json").status_code == 403
    )
    macro.refresh_from_db()
    assert macro.body == "Hello"


def test_a_supervisor_changes_a_shared_macros_translations(db, supervisor):
    macro = Macro.objects.create(name="Shared", body="Hello")

    response = api_as(supervisor).patch(
        f"/api/macros/{macro.pk}/", {"translations": {"de": "Hallo"}}, format="json"
    )

    assert response.status_code == 200, response.content
    macro.refresh_from_db()
    assert (macro.body, macro.translations) == ("Hello", {"de": "Hallo"})


@pytest.mark.parametrize(
    ("wrote", "starts"),
    [
        ("我的杯子碎了，请退款。", "Li，很抱歉"),
        ("Mi taza llegó rota, quiero un reembolso.", "Sorry, Li"),  # no Spanish text: the body
        ("My mug arrived broken.", "Sorry, Li"),
    ],
)
def test_applying_picks_the_customers_language(db, agent_user, wrote, starts):
    ticket = TicketFactory(customer__name="Li Wei")
    TicketMessage.objects.create(ticket=ticket, author_kind="customer", body=wrote)
    macro = Macro.objects.create(**SORRY)

    response = api_as(agent_user).post(f"/api/tickets/{ticket.reference}/macros/{macro.pk}/apply/")

    assert response.status_code == 200, response.content
    assert response.json()["body"].startswith(starts)
    assert ticket.reference in response.json()["body"]
