import re

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db


@pytest.fixture
def api():
    return APIClient()


def token_for(api, username, password="demo-pass-123"):
    response = api.post(
        "/api/auth/token/", {"username": username, "password": password}, format="json"
    )
    assert response.status_code == 200, response.content
    return response.json()["token"]


def test_it_issues_a_token_that_authenticates(api, demo):
    token = token_for(api, "agent")
    api.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    response = api.get("/api/tickets/")
    assert response.status_code == 200
    references = [t["reference"] for t in response.json()["results"]]
    assert sorted(references) == ["TCK-1001", "TCK-1002", "TCK-1003", "TCK-1004"]


def test_a_wrong_password_gets_a_clear_error(api, demo):
    response = api.post(
        "/api/auth/token/", {"username": "agent", "password": "nope"}, format="json"
    )
    assert response.status_code == 400
    body = response.json()
    assert body["message"] == "Unable to log in with provided credentials."
    assert body["code"] == "authorization"
    assert "token" not in body


def test_a_missing_password_names_the_field(api):
    response = api.post("/api/auth/token/", {"username": "agent"}, format="json")
    assert response.status_code == 400
    assert response.json()["extra"]["fields"]["password"] == ["This field is required."]


def test_an_anonymous_call_gets_401_with_the_error_shape(api, demo):
    response = api.get("/api/tickets/")
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"] == "Token"
    assert set(response.json()) == {"message", "code", "extra"}
    assert response.json()["code"] == "not_authenticated"


def test_a_bad_token_gets_401(api, demo):
    api.credentials(HTTP_AUTHORIZATION="Token not-a-token")
    assert api.get("/api/tickets/").status_code == 401


def test_a_user_outside_the_desk_gets_403(api, outsider):
    api.force_authenticate(outsider)
    response = api.get("/api/tickets/")
    assert response.status_code == 403
    assert response.json()["code"] == "permission_denied"


def test_an_unknown_ticket_is_a_404_json(api, demo):
    api.credentials(HTTP_AUTHORIZATION=f"Token {token_for(api, 'agent')}")
    response = api.get("/api/tickets/TCK-9999/")
    assert response.status_code == 404
    assert response.json() == {"message": "Not found.", "code": "not_found", "extra": {}}


def test_a_ticket_comes_with_its_messages(api, demo):
    api.credentials(HTTP_AUTHORIZATION=f"Token {token_for(api, 'reviewer')}")
    body = api.get("/api/tickets/TCK-1001/").json()
    assert body["reference"] == "TCK-1001"
    assert body["customer"] == "Li Wei"
    assert body["order_id"] == "202610110087"
    assert body["messages"][0]["author_kind"] == "customer"
    assert "arrived in pieces" in body["messages"][0]["body"]


def test_the_ticket_list_filters_by_status_and_search(api, demo):
    api.credentials(HTTP_AUTHORIZATION=f"Token {token_for(api, 'agent')}")
    body = api.get("/api/tickets/", {"q": "lamp"}).json()
    assert [t["reference"] for t in body["results"]] == ["TCK-1002"]
    assert api.get("/api/tickets/", {"status": "closed"}).json()["count"] == 0


def test_the_schema_and_docs_are_served(api, demo):
    api.credentials(HTTP_AUTHORIZATION=f"Token {token_for(api, 'agent')}")
    schema = api.get("/api/schema/", HTTP_ACCEPT="application/json")
    assert schema.status_code == 200
    assert "/api/tickets/{reference}/" in schema.json()["paths"]
    api.force_login(get_user_model().objects.get(username="agent"))
    docs = api.get("/api/docs/")
    assert docs.status_code == 200
    # Swagger UI comes from this site's static files, not a CDN. (Not a search for "cdn": the
    # page holds a random CSRF token, which spells it now and then.)
    assets = re.findall(rb'(?:src|href)="([^"]+)"', docs.content)
    assert assets and all(url.startswith(b"/static/") for url in assets)
    assert not re.search(rb"https?://", docs.content)


@pytest.mark.parametrize("page", ["", "0", "-1", "two", "1.5"])
def test_a_page_that_is_not_a_whole_number_from_1_is_a_400(api, demo, page):
    api.credentials(HTTP_AUTHORIZATION=f"Token {token_for(api, 'agent')}")
    response = api.get("/api/tickets/", {"page": page})
    assert response.status_code == 400
    assert response.json()["extra"]["fields"]["page"] == ["A page number is a whole number from 1."]


def test_a_page_past_the_end_is_a_404(api, demo):
    api.credentials(HTTP_AUTHORIZATION=f"Token {token_for(api, 'agent')}")
    assert api.get("/api/tickets/", {"page": "2"}).status_code == 404
