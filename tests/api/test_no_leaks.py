"""Bad input at every API endpoint, with DEBUG off and on: never a 5xx, never a traceback, SQL,
a secret or a local path in the body; unknown /api/ paths and crashes answer JSON."""

import uuid

import pytest
from django.db import connection
from django.test import Client

from tests.api.conftest import desk_state, token_header, user
from tests.api.crashing import CRASH_MESSAGE

pytestmark = pytest.mark.django_db

ON_POSTGRES = connection.vendor == "postgresql"

SECRET_KEY = "sentinel-secret-key-4f1c2a9e7b"
OPENAI_KEY = "sk-sentinel-openai-8d3e61"
STRIPE_KEY = "sk_test_sentinel_stripe_52b7"
LEAK_MARKERS = [
    "Traceback",
    'File "',
    "django.db",
    "SELECT ",
    "INSERT ",
    "psycopg",
    "sqlite3",
    SECRET_KEY,
    OPENAI_KEY,
    STRIPE_KEY,
    "/work/",
    "site-packages",
]


@pytest.fixture(params=[False, True], ids=["debug-off", "debug-on"])
def secrets(request, settings):
    settings.DEBUG = request.param
    settings.SECRET_KEY = SECRET_KEY
    settings.OPENAI_API_KEY = OPENAI_KEY
    settings.STRIPE_API_KEY = STRIPE_KEY
    return settings


def assert_no_leak(response) -> None:
    body = response.content.decode(errors="replace")
    assert response.status_code < 500, body
    for marker in LEAK_MARKERS:
        assert marker not in body, (marker, body[:500])


def assert_error_shape(response, status: int) -> dict:
    assert response.status_code == status, response.content[:500]
    assert response["Content-Type"] == "application/json"
    body = response.json()
    assert set(body) == {"message", "code", "extra"}
    return body


def bad_requests(desk) -> list[tuple]:
    """(method, path, body, content type, expected status) — each one malformed."""
    run, refund = desk.run.pk, desk.refund.request_id
    unknown_run = uuid.uuid4()
    json_ = "application/json"
    requests = [
        ("POST", "/api/auth/token/", "{not json", json_, 400),
        ("POST", "/api/auth/token/", {"username": ["agent"], "password": {"a": 1}}, json_, 400),
        ("POST", "/api/auth/token/", {"username": "agent\x00", "password": "x"}, json_, 400),
        ("POST", "/api/auth/token/", "username=agent", "text/plain", 415),
        ("GET", "/api/auth/token/", None, None, 405),
        ("GET", "/api/tickets/?status=done", None, None, 400),
        ("GET", "/api/tickets/?page=abc", None, None, 400),
        ("GET", "/api/tickets/?q=" + "x" * 20_000, None, None, 200),
        ("GET", "/api/tickets/?q=a%00b", None, None, 400),
        ("DELETE", "/api/tickets/", None, None, 405),
        ("GET", "/api/tickets/TCK-9999/", None, None, 404),
        ("GET", "/api/tickets/TCK%001001/", None, None, 404),
        ("PUT", "/api/tickets/TCK-1001/", {"subject": "x"}, json_, 405),
        ("POST", "/api/tickets/TCK-1001/runs/", '{"message": ', json_, 400),
        ("POST", "/api/tickets/TCK-1001/runs/", {"message": ["a"]}, json_, 400),
        ("POST", "/api/tickets/TCK-1001/runs/", {"message": 7}, json_, 400),
        ("POST", "/api/tickets/TCK-1001/runs/", {"message": "x" * 100_000}, json_, 400),
        ("POST", "/api/tickets/TCK-1001/runs/", "x" * 3_000_000, json_, 413),
        ("POST", "/api/tickets/TCK-1001/runs/", "message=hi", "text/plain", 415),
        ("POST", "/api/tickets/TCK-9999/runs/", {"message": "hi"}, json_, 404),
        ("GET", "/api/tickets/TCK-1001/runs/", None, None, 405),
        ("GET", f"/api/runs/{unknown_run}/", None, None, 404),
        ("GET", "/api/runs/not-a-uuid/", None, None, 404),
        ("DELETE", f"/api/runs/{run}/", None, None, 405),
        ("GET", f"/api/runs/{run}/events/?after=abc", None, None, 400),
        ("GET", f"/api/runs/{run}/events/?after=1e309", None, None, 400),
        ("GET", f"/api/runs/{run}/events/?after=99999999999999999999999", None, None, 200),
        ("GET", f"/api/runs/{unknown_run}/events/", None, None, 404),
        ("GET", f"/api/runs/{unknown_run}/events/stream/", None, None, 404),
        ("GET", f"/api/runs/{run}/events/stream/?after=x", None, None, 400),
        ("GET", f"/api/runs/{run}/events/?after=", None, None, 400),
        ("GET", f"/api/runs/{run}/events/stream/?after=", None, None, 400),
        ("GET", f"/api/runs/{unknown_run}/tool-calls/", None, None, 404),
        ("POST", f"/api/runs/{run}/tool-calls/", {}, json_, 405),
        ("GET", f"/api/runs/{run}/cancel/", None, None, 405),
        ("POST", f"/api/runs/{unknown_run}/cancel/", {}, json_, 404),
        ("GET", "/api/refunds/?status=" + "z" * 5_000, None, None, 400),
        ("GET", "/api/refunds/?reason=%00", None, None, 400),
        ("GET", "/api/refunds/rf_000000000000000000000000/", None, None, 404),
        ("GET", "/api/refunds/rf_%00/", None, None, 404),
        ("PATCH", f"/api/refunds/{refund}/", {"status": "approved"}, json_, 405),
        ("GET", f"/api/refunds/{refund}/approve/", None, None, 405),
        ("POST", "/api/refunds/rf_000000000000000000000000/approve/", {"version": 1}, json_, 404),
        ("POST", f"/api/refunds/{refund}/reject/", "[1, 2", json_, 400),
        ("POST", f"/api/refunds/{refund}/reject/", {"version": "one"}, json_, 400),
        ("POST", f"/api/refunds/{refund}/reject/", {"version": True}, json_, 400),
        (
            "POST",
            f"/api/refunds/{refund}/reject/",
            {"version": 1, "note": "n" * 50_000},
            json_,
            400,
        ),
    ]
    return requests


def send(client: Client, method: str, path: str, body, content_type: str | None, **headers):
    kwargs = dict(headers)
    if body is not None:
        kwargs["data"] = body
        kwargs["content_type"] = content_type
    return getattr(client, method.lower())(path, **kwargs)


def test_bad_input_at_every_endpoint_is_a_clean_4xx(desk, secrets):
    client = Client(raise_request_exception=False)
    agent, reviewer = token_header("agent"), token_header("reviewer")
    before = desk_state()

    for method, path, body, content_type, expected in bad_requests(desk):
        auth = reviewer if "/approve/" in path or "/reject/" in path else agent
        response = send(client, method, path, body, content_type, HTTP_AUTHORIZATION=auth)

        assert_no_leak(response)
        if expected == 200:
            assert response.status_code == 200
        else:
            assert_error_shape(response, expected)

    assert desk_state() == before


def test_approve_with_bad_bodies_answers_400_and_changes_nothing(desk, secrets):
    client = Client(raise_request_exception=False)
    url = f"/api/refunds/{desk.refund.request_id}/approve/"
    bodies = [
        {},
        {"version": 1},
        {"version": 1, "fingerprint": "x" * 64},
        {"version": 0, "fingerprint": desk.fingerprint},
        {"version": 1.5, "fingerprint": desk.fingerprint},
        {"version": [1], "fingerprint": desk.fingerprint},
        {"version": 1, "fingerprint": desk.fingerprint.upper()},
        {"version": 1, "fingerprint": desk.fingerprint, "note": {"a": 1}},
    ]
    reviewer = token_header("reviewer")
    before = desk_state()

    for body in bodies:
        response = client.post(
            url, body, content_type="application/json", HTTP_AUTHORIZATION=reviewer
        )
        assert_no_leak(response)
        assert_error_shape(response, 400)

    assert desk_state() == before


UNKNOWN_API_PATHS = [
    "/api/nope/",
    "/api/tickets/TCK-1001/nope/",
    "/api/runs/not-a-uuid/",
    "/api/refunds/rf_x/approve/extra/",
    "/api/",
]


@pytest.mark.parametrize("path", UNKNOWN_API_PATHS)
@pytest.mark.parametrize("method", ["GET", "POST"])
def test_an_unknown_api_path_is_a_json_404(client, secrets, path, method):
    response = getattr(client, method.lower())(path)

    assert_no_leak(response)
    assert assert_error_shape(response, 404) == {
        "message": "No API endpoint at this path.",
        "code": "not_found",
        "extra": {},
    }


def test_an_api_path_without_its_slash_names_the_right_one(client, secrets):
    response = client.post(
        "/api/tickets/TCK-1001/runs", {"message": "hi"}, content_type="application/json"
    )

    assert_no_leak(response)
    assert assert_error_shape(response, 404)["extra"] == {
        "did_you_mean": "/api/tickets/TCK-1001/runs/"
    }


def test_an_unknown_page_outside_the_api_is_the_html_404(client, settings):
    settings.DEBUG = False

    response = client.get("/nope/")

    assert response.status_code == 404
    assert response["Content-Type"].startswith("text/html")


def test_a_crash_in_an_api_view_is_a_json_500_without_a_traceback(secrets, desk, monkeypatch):
    def crash(**kwargs):
        raise RuntimeError(f"boom in /work/main SELECT * FROM auth_user {SECRET_KEY}")

    monkeypatch.setattr("tickets.selectors.ticket_list", crash)
    client = Client(raise_request_exception=False)

    response = client.get("/api/tickets/", HTTP_AUTHORIZATION=token_header("agent"))

    body = assert_error_shape(response, 500)
    assert body == {
        "message": "Something went wrong on our side.",
        "code": "server_error",
        "extra": {},
    }
    for marker in LEAK_MARKERS:
        assert marker not in response.content.decode()


def test_a_crash_outside_drf_under_the_api_is_a_json_500(settings, monkeypatch):
    settings.DEBUG = False

    def crash(path):
        raise RuntimeError(f"boom {path} SELECT 1")

    monkeypatch.setattr("config.api_errors.resolve", crash)
    client = Client(raise_request_exception=False)

    response = client.get("/api/tickets")

    body = assert_error_shape(response, 500)
    assert body == {
        "message": "Something went wrong on our side.",
        "code": "server_error",
        "extra": {},
    }


def test_a_crash_in_a_page_is_the_html_500(settings, desk, monkeypatch):
    settings.DEBUG = False

    def crash(**kwargs):
        raise RuntimeError("boom SELECT 1")

    monkeypatch.setattr("tickets.selectors.ticket_list", crash)
    client = Client(raise_request_exception=False)
    client.force_login(desk.run.started_by)

    response = client.get("/tickets/")

    assert response.status_code == 500
    assert response["Content-Type"].startswith("text/html")
    assert "boom" not in response.content.decode()


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/tickets/TCK%001001/", 404),
        ("/tickets/?q=%00", 400),
        ("/review/rf_%00/", 404),
        ("/review/?q=%00", 400),
    ],
)
def test_a_nul_byte_in_a_page_url_is_not_a_server_error(desk, path, expected):
    client = Client(raise_request_exception=False)
    client.force_login(user("reviewer"))

    response = client.get(path)

    assert response.status_code == expected


def test_a_nul_byte_in_a_token_is_a_401(demo):
    client = Client(raise_request_exception=False)

    response = client.get("/api/tickets/", HTTP_AUTHORIZATION="Token abc\x00def")

    assert_error_shape(response, 401)


@pytest.mark.urls("tests.api.crashing")
@pytest.mark.parametrize("path", ["/api/crash/", "/api/crash-in-middleware/"])
@pytest.mark.parametrize("accept", ["text/html", "application/json", "*/*"])
def test_it_answers_a_crash_under_the_api_with_the_json_500_whatever_debug_says(
    secrets, caplog, path, accept
):
    secrets.MIDDLEWARE = [*secrets.MIDDLEWARE, "tests.api.crashing.CrashUnderApi"]
    client = Client(raise_request_exception=False)

    response = client.get(path, HTTP_ACCEPT=accept)

    body = assert_error_shape(response, 500)
    assert body == {
        "message": "Something went wrong on our side.",
        "code": "server_error",
        "extra": {},
    }
    for marker in [*LEAK_MARKERS, CRASH_MESSAGE, "boom"]:
        assert marker not in response.content.decode()
    [logged] = [record for record in caplog.records if record.exc_info]
    assert logged.getMessage() == f"Internal Server Error: {path}"
    assert str(logged.exc_info[1]) == CRASH_MESSAGE


NOT_FOUND_PAGES = [
    "/no-such-page/",
    "/tickets/TCK-9999/",
    "/review/rf_000000000000000000000000/",
    "/admin/no-such-page/",
]


@pytest.mark.parametrize("path", NOT_FOUND_PAGES)
def test_it_answers_a_missing_page_with_the_plain_404_even_with_debug_on(desk, settings, path):
    client = Client()
    client.force_login(user("reviewer"))
    settings.DEBUG = False
    plain = client.get(path)

    settings.DEBUG = True
    response = client.get(path)

    assert response.status_code == 404
    assert response["Content-Type"] == "text/html; charset=utf-8"
    assert response.content == plain.content
    body = response.content.decode()
    for pattern in [
        "Using the URLconf",
        "api/",
        "admin/",
        "tickets/",
        "review/",
        "login/",
        "Raised by",
    ]:
        assert pattern not in body


def test_it_still_adds_the_missing_slash_to_a_page_with_debug_on(desk, settings):
    settings.DEBUG = True
    client = Client()
    client.force_login(user("reviewer"))

    response = client.get("/tickets")

    assert (response.status_code, response["Location"]) == (301, "/tickets/")
