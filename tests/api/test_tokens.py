"""API tokens last API_TOKEN_TTL_DAYS from when they were issued, and no longer than the
password and the account they were issued for: a password change, on any path, or a
deactivation deletes them (issue 31, finding 15)."""

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone
from rest_framework.test import APIClient

from ops.authentication import api_token_issue
from ops.models import ApiToken
from tests.api.conftest import PASSWORD, user

pytestmark = pytest.mark.django_db

NEW_PASSWORD = "a-new-password-456"


def tickets_with(key: str):
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return api.get("/api/tickets/")


def token_issued(username: str, *, days_ago: float = 0) -> str:
    issued = api_token_issue(user=user(username))
    ApiToken.objects.filter(pk=issued.token.pk).update(
        created_at=timezone.now() - timedelta(days=days_ago)
    )
    return issued.key


def tokens() -> list[str]:
    return sorted(ApiToken.objects.values_list("user__username", flat=True))


def test_it_deletes_the_token_when_the_password_is_set_and_saved(demo):
    # Given tokens of agent and agent2
    key = token_issued("agent")
    token_issued("agent2")

    # When agent's password is changed the way every password form and command does it
    agent = user("agent")
    agent.set_password(NEW_PASSWORD)
    agent.save()

    # Then agent's token is gone and refused; agent2's stays
    assert tokens() == ["agent2"]
    assert tickets_with(key).status_code == 401


def test_it_deletes_the_token_when_an_admin_sets_the_password(demo, client):
    key = token_issued("agent")
    client.login(username="admin", password=PASSWORD)

    changed = client.post(
        f"/admin/auth/user/{user('agent').pk}/password/",
        {"password1": NEW_PASSWORD, "password2": NEW_PASSWORD},
    )

    assert changed.status_code == 302
    assert user("agent").check_password(NEW_PASSWORD)
    assert tokens() == []
    assert tickets_with(key).status_code == 401


def test_it_deletes_the_token_when_users_change_their_own_password(demo, client):
    key = token_issued("admin")
    client.login(username="admin", password=PASSWORD)

    changed = client.post(
        "/admin/password_change/",
        {"old_password": PASSWORD, "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD},
    )

    assert changed.status_code == 302
    assert tokens() == []
    assert tickets_with(key).status_code == 401


def test_it_deletes_the_token_when_the_user_is_deactivated(demo):
    key = token_issued("agent")

    agent = user("agent")
    agent.is_active = False
    agent.save()
    get_user_model().objects.filter(pk=agent.pk).update(is_active=True)

    # Reactivated, the user does not get the old token back.
    assert tokens() == []
    assert tickets_with(key).status_code == 401


def test_it_keeps_the_token_when_the_user_signs_in_or_is_edited(demo, client):
    key = token_issued("agent")

    assert client.login(username="agent", password=PASSWORD)
    agent = user("agent")
    agent.first_name = "Ada"
    agent.save()

    assert tokens() == ["agent"]
    assert tickets_with(key).status_code == 200


def test_it_refuses_an_expired_token_like_an_invalid_one_and_deletes_it(demo, settings):
    settings.API_TOKEN_TTL_DAYS = 30
    key = token_issued("agent", days_ago=30.001)

    response = tickets_with(key)

    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"
    assert response.json() == {
        "message": "The token has expired; get a new one from POST /api/auth/token/.",
        "code": "authentication_failed",
        "extra": {},
    }
    assert tokens() == []


def test_it_accepts_a_token_within_its_ttl_and_any_token_with_ttl_0(demo, settings):
    settings.API_TOKEN_TTL_DAYS = 30
    recent = token_issued("agent", days_ago=29.99)
    old = token_issued("agent2", days_ago=400)

    within = tickets_with(recent)
    settings.API_TOKEN_TTL_DAYS = 0
    never_expiring = tickets_with(old)

    assert (within.status_code, never_expiring.status_code) == (200, 200)
    assert tokens() == ["agent", "agent2"]


def test_the_token_endpoint_issues_a_new_token_at_each_sign_in_and_drops_expired_ones(
    demo, settings
):
    settings.API_TOKEN_TTL_DAYS = 30
    expired = token_issued("agent", days_ago=31)
    current = token_issued("agent2", days_ago=1)

    answers = [
        APIClient().post(
            "/api/auth/token/", {"username": name, "password": PASSWORD}, format="json"
        )
        for name in ("agent", "agent2")
    ]

    assert [answer.status_code for answer in answers] == [200, 200]
    fresh, another = answers[0].json()["token"], answers[1].json()["token"]
    assert list(answers[1].json()) == ["token"]
    # A stored key cannot be shown again: agent2 gets a second token, and keeps the first.
    assert another != current
    assert tokens() == ["agent", "agent2", "agent2"]
    assert fresh != expired
    assert [tickets_with(key).status_code for key in (fresh, another, current)] == [200] * 3
    assert tickets_with(expired).status_code == 401
