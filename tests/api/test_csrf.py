"""Every form POST and every session-authenticated API POST needs the CSRF token: without it
403 and nothing changes; with it the action happens. Token-authenticated API calls need none."""

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.test import Client

from agent.models import AgentRun
from tests.api.conftest import PASSWORD, desk_state, token_header, user

pytestmark = pytest.mark.django_db


def session_client(username: str) -> tuple[Client, str]:
    """A browser logged in as `username` that enforces CSRF, and the token its pages carry."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(user(username))
    page = client.get("/login/")
    assert page.status_code == 200
    return client, client.cookies["csrftoken"].value


@pytest.mark.parametrize("with_token", [False, True])
def test_the_login_form_needs_the_csrf_token(demo, with_token):
    client = Client(enforce_csrf_checks=True)
    csrf = client.get("/login/").cookies["csrftoken"].value
    data = {"username": "agent", "password": PASSWORD}
    if with_token:
        data["csrfmiddlewaretoken"] = csrf

    response = client.post("/login/", data)

    if with_token:
        assert (response.status_code, response["Location"]) == (302, "/")
        assert client.session["_auth_user_id"] == str(user("agent").pk)
    else:
        assert response.status_code == 403
        assert "_auth_user_id" not in client.session


@pytest.mark.parametrize("with_token", [False, True])
def test_the_logout_form_needs_the_csrf_token(demo, with_token):
    client, csrf = session_client("agent")

    response = client.post("/logout/", {"csrfmiddlewaretoken": csrf} if with_token else {})

    if with_token:
        assert (response.status_code, response["Location"]) == (302, "/login/")
        assert "_auth_user_id" not in client.session
    else:
        assert response.status_code == 403
        assert client.session["_auth_user_id"] == str(user("agent").pk)


def review_post(desk, action: str) -> dict:
    data = {"version": 1, "note": "checked"}
    if action == "approve":
        data["fingerprint"] = desk.fingerprint
    if action == "reject":
        data["confirm_reject"] = "yes"
    return data


def admin_post(desk, action: str) -> dict:
    pk = desk.refund.pk
    data = {
        "action": f"{action}_refunds",
        ACTION_CHECKBOX_NAME: [pk],
        "confirm": "yes",
        f"version_{pk}": "1",
        "note": "checked",
    }
    if action == "approve":
        data[f"fingerprint_{pk}"] = desk.fingerprint
    return data


FORMS = [
    ("review", lambda desk, action: f"/review/{desk.refund.request_id}/{action}/", review_post),
    ("admin", lambda desk, action: "/admin/refunds/refundrequest/", admin_post),
]


@pytest.mark.parametrize("with_token", [False, True])
@pytest.mark.parametrize("action", ["approve", "reject"])
@pytest.mark.parametrize(("form", "url", "data"), FORMS, ids=[f for f, _, _ in FORMS])
def test_the_decision_forms_need_the_csrf_token(desk, form, url, data, action, with_token):
    client, csrf = session_client("reviewer")
    body = data(desk, action)
    if with_token:
        body["csrfmiddlewaretoken"] = csrf
    before = desk_state()

    response = client.post(url(desk, action), body)

    desk.refund.refresh_from_db()
    if with_token:
        assert response.status_code == 302
        assert desk.refund.status == {"approve": "approved", "reject": "rejected"}[action]
        assert desk.refund.confirmations.get().decided_by == user("reviewer")
    else:
        assert response.status_code == 403
        assert desk_state() == before
        assert desk.refund.status == "pending_approval"


def api_posts(desk) -> list:
    return [
        ("agent", "/api/tickets/TCK-1001/runs/", {"message": "What did the mug cost?"}, 202),
        ("agent", f"/api/runs/{desk.run.pk}/cancel/", {}, 200),
        (
            "reviewer",
            f"/api/refunds/{desk.refund.request_id}/approve/",
            {"version": 1, "fingerprint": desk.fingerprint},
            200,
        ),
        ("reviewer", f"/api/refunds/{desk.refund.request_id}/reject/", {"version": 1}, 200),
    ]


ENDPOINTS = ["start run", "cancel", "approve", "reject"]


def check_done(desk, endpoint: str) -> None:
    desk.run.refresh_from_db()
    desk.refund.refresh_from_db()
    if endpoint == "start run":
        assert AgentRun.objects.count() == 3
    elif endpoint == "cancel":
        assert desk.run.status == "cancelled"
    else:
        assert desk.refund.status == ("approved" if endpoint == "approve" else "rejected")


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_a_session_api_post_without_the_csrf_token_is_refused(desk, endpoint):
    username, url, body, _ = api_posts(desk)[ENDPOINTS.index(endpoint)]
    client, _ = session_client(username)
    before = desk_state()

    response = client.post(url, body, content_type="application/json")

    assert response.status_code == 403
    assert response.json() == {
        "message": "CSRF Failed: CSRF token missing.",
        "code": "permission_denied",
        "extra": {},
    }
    assert desk_state() == before


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_a_session_api_post_with_the_csrf_token_works(desk, endpoint):
    username, url, body, expected = api_posts(desk)[ENDPOINTS.index(endpoint)]
    client, csrf = session_client(username)

    response = client.post(url, body, content_type="application/json", HTTP_X_CSRFTOKEN=csrf)

    assert response.status_code == expected, response.content
    check_done(desk, endpoint)


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_a_token_api_post_needs_no_csrf_token(desk, endpoint):
    username, url, body, expected = api_posts(desk)[ENDPOINTS.index(endpoint)]
    client = Client(enforce_csrf_checks=True)

    response = client.post(
        url, body, content_type="application/json", HTTP_AUTHORIZATION=token_header(username)
    )

    assert response.status_code == expected, response.content
    check_done(desk, endpoint)
