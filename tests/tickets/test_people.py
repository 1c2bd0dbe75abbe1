"""DESIGN §19 people: a desk user's display name and signature (`GET`/`PATCH /api/me/`, the
/me/ page), carried exactly once by every public reply they send (the team's signature when
they have none, never the bare username once a name is set) and by macros' {{agent.name}}."""

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from rest_framework.test import APIClient

from desk.demo import NAMES
from tests.factories import UserFactory
from tests.tickets.test_mail import deliver, write
from tickets import people
from tickets.models import Macro, StaffProfile


def me_api(username: str) -> APIClient:
    client = APIClient()
    client.force_authenticate(get_user_model().objects.get(username=username))
    return client


def sent_body(api, demo_published, capture, username: str) -> str:
    with capture(execute=True):
        response = write(api, username, "Your parcel is on its way back to us.", "public")
    assert response.status_code == 201, response.content
    deliver(demo_published)
    [email] = mail.outbox
    return email.body


@pytest.fixture
def api():
    return APIClient()


def test_demo_users_have_real_names(demo):
    for username, name in NAMES.items():
        user = get_user_model().objects.get(username=username)
        assert people.display_name(user) == name
        assert user.get_full_name() == name


def test_me_shows_the_name_customers_see_and_the_signature(demo):
    response = me_api("agent").get("/api/me/")

    assert response.status_code == 200
    assert response.json() == {"username": "agent", "display_name": "Alex Morgan", "signature": ""}


def test_me_changes_what_is_given_and_keeps_the_rest(demo):
    client = me_api("agent")

    renamed = client.patch("/api/me/", {"display_name": "  Alex M.  "}, format="json")
    signed = client.patch("/api/me/", {"signature": "Alex · **Refunds team**"}, format="json")

    assert renamed.json()["display_name"] == "Alex M."
    assert signed.json() == {
        "username": "agent",
        "display_name": "Alex M.",
        "signature": "Alex · **Refunds team**",
    }


@pytest.mark.parametrize(
    "body",
    [
        {"display_name": "x" * 81},
        {"display_name": "Alex\nBcc: all@example.com"},
        {"signature": "y" * 1001},
        {"username": "admin", "display_name": ["Alex"]},
    ],
)
def test_me_refuses_what_it_cannot_keep_and_changes_nothing(demo, body):
    response = me_api("agent").patch("/api/me/", body, format="json")

    assert response.status_code == 400
    assert set(response.json()["extra"]["fields"]) <= {"display_name", "signature"}
    assert StaffProfile.objects.get(user__username="agent").display_name == "Alex Morgan"
    assert get_user_model().objects.filter(username="agent").exists()


def test_me_is_for_desk_staff_only(demo):
    outsider = UserFactory(username="t_outsider")
    client = APIClient()
    client.force_authenticate(outsider)

    assert client.get("/api/me/").status_code == 403
    assert APIClient().get("/api/me/").status_code in (401, 403)


def test_a_reply_carries_the_senders_name_and_signature_once(
    api, demo, published, django_capture_on_commit_callbacks
):
    me_api("agent").patch(
        "/api/me/", {"signature": "Refunds team · Mon-Fri 9-18 CET"}, format="json"
    )

    body = sent_body(api, published, django_capture_on_commit_callbacks, "agent")

    assert body.count("Alex Morgan") == 1
    assert body.count("Refunds team · Mon-Fri 9-18 CET") == 1
    assert "\n-- \nAlex Morgan\nRefunds team · Mon-Fri 9-18 CET\n" in body
    assert "Refund Desk support" not in body


def test_a_reply_from_someone_without_a_signature_carries_the_teams(
    api, demo, published, settings, django_capture_on_commit_callbacks
):
    settings.TEAM_SIGNATURE = "Acme Customer Care"

    body = sent_body(api, published, django_capture_on_commit_callbacks, "agent2")

    assert "\n-- \nPriya Shah\nAcme Customer Care\n" in body
    assert body.count("Acme Customer Care") == 1


def test_a_reply_never_carries_the_bare_username_once_a_name_is_set(
    api, demo, published, django_capture_on_commit_callbacks
):
    UserFactory(username="t_zoe", role="agent")
    me_api("t_zoe").patch("/api/me/", {"display_name": "Zoë Martin"}, format="json")

    body = sent_body(api, published, django_capture_on_commit_callbacks, "t_zoe")

    assert "Zoë Martin" in body
    assert "t_zoe" not in body


def test_a_macro_signs_with_the_display_name(demo):
    me_api("agent").patch("/api/me/", {"display_name": "Alex from Refunds"}, format="json")
    macro = Macro.objects.create(name="Sign", body="Best, {{agent.name}}")

    response = me_api("agent").post(f"/api/tickets/TCK-1001/macros/{macro.pk}/apply/")

    assert response.json()["body"] == "Best, Alex from Refunds"


def test_the_page_saves_and_keeps_what_was_typed_when_refused(client, demo):
    client.force_login(get_user_model().objects.get(username="agent"))

    shown = client.get("/me/")
    refused = client.post("/me/", {"display_name": "A" * 81, "signature": "Kept text"})
    saved = client.post("/me/", {"display_name": "Alex M.", "signature": "Refunds"}, follow=True)

    assert shown.status_code == 200
    assert b"Alex Morgan" in shown.content
    assert refused.status_code == 200
    assert b"Kept text" in refused.content
    assert b'aria-invalid="true"' in refused.content
    assert saved.status_code == 200
    assert b"-- \nAlex M.\nRefunds" in saved.content
    assert StaffProfile.objects.get(user__username="agent").signature == "Refunds"
