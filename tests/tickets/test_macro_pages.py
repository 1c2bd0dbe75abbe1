"""The macro page (DESIGN §19): supervisors add and change shared macros with their language
versions and suggested actions as fields, and preview one on a real ticket; others read."""

import pytest
from django.contrib.auth import get_user_model

from tickets.models import Macro, Ticket, TicketMessage

pytestmark = pytest.mark.django_db

FORM = {
    "name": "Broken on arrival",
    "visibility": "public",
    "body": "Sorry, {{ customer.first_name }}: we are on {{ ticket.reference }}.",
    "text_zh": "{{ customer.first_name }}，很抱歉，我们正在处理 {{ ticket.reference }}。",
    "status": "pending",
    "priority": "high",
    "add_tags": "damaged, refund",
}


def login(client, username: str):
    client.force_login(get_user_model().objects.get(username=username))
    return client


def test_a_supervisor_writes_a_shared_macro_with_its_languages_and_actions(client, demo):
    response = login(client, "supervisor").post("/macros/new/", FORM, follow=True)

    assert response.status_code == 200
    macro = Macro.objects.get(name="Broken on arrival")
    assert macro.owner is None
    assert macro.translations == {"zh": FORM["text_zh"]}
    assert macro.actions == {
        "status": "pending",
        "priority": "high",
        "add_tags": ["damaged", "refund"],
    }
    assert "Saved" in response.content.decode()


def test_a_macro_the_desk_cannot_fill_is_refused_with_what_was_typed_kept(client, demo):
    bad = {**FORM, "body": "Hi {{ customer.nickname }}", "text_de": "Hallo {{ order }}"}

    response = login(client, "supervisor").post("/macros/new/", bad)

    page = response.content.decode()
    assert response.status_code == 200
    assert "Unknown placeholder" in page
    assert "de: Unknown placeholder" in page
    assert "Hallo {{ order }}" in page
    assert not Macro.objects.filter(name="Broken on arrival").exists()


def test_the_preview_fills_the_macro_from_a_real_ticket_in_its_customers_language(client, demo):
    macro = Macro.objects.create(
        name="Sorry", body=FORM["body"], translations={"zh": FORM["text_zh"]}
    )
    ticket = Ticket.objects.get(reference="TCK-1001")
    TicketMessage.objects.create(ticket=ticket, author_kind="customer", body="杯子碎了，怎么办？")

    page = login(client, "supervisor").get(f"/macros/{macro.pk}/?preview=TCK-1001").content.decode()
    unknown = client.get(f"/macros/{macro.pk}/?preview=TCK-9999").content.decode()

    assert 'id="macro-preview"' in page
    assert "Li，很抱歉，我们正在处理 TCK-1001。" in page
    assert "No ticket TCK-9999." in unknown


@pytest.mark.parametrize("username", ["agent", "intern"])
def test_others_read_the_macros_but_cannot_change_them(client, demo, username):
    macro = Macro.objects.create(name="Sorry", body="Sorry.")
    login(client, username)

    assert client.get("/macros/").status_code == 200
    assert client.get("/macros/new/").status_code == 403
    assert client.post(f"/macros/{macro.pk}/", FORM).status_code == 403
    macro.refresh_from_db()
    assert macro.body == "Sorry."
