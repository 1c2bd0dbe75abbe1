"""What a refused or crashing request leaves in the log: a 403 is one line without a
traceback, a crash is one record with its traceback, printed once, with DEBUG on or off."""

import logging

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


@pytest.fixture(params=[False, True], ids=["debug-off", "debug-on"])
def debug(request, settings):
    settings.DEBUG = request.param


@pytest.fixture
def crash(monkeypatch):
    def ticket_list(**kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr("tickets.selectors.ticket_list", ticket_list)


def client_for(user) -> Client:
    client = Client(raise_request_exception=False, HTTP_X_REQUEST_ID="r-1")
    client.force_login(user)
    return client


def test_it_logs_a_forbidden_page_as_one_line(debug, intern, printed):
    response = client_for(intern).get("/review/")

    assert response.status_code == 403
    assert printed.getvalue() == "Forbidden (Permission denied): /review/ [req=r-1]\n"


def test_it_logs_a_forbidden_api_call_as_one_line(debug, outsider, printed):
    response = client_for(outsider).get("/api/tickets/")

    assert response.status_code == 403
    assert printed.getvalue() == "Forbidden: /api/tickets/ [req=r-1]\n"


@pytest.mark.parametrize("path", ["/api/tickets/", "/tickets/"])
def test_it_logs_a_crash_once_with_its_traceback(debug, agent_user, crash, printed, caplog, path):
    response = client_for(agent_user).get(path)

    assert response.status_code == 500
    [record] = [record for record in caplog.records if record.levelno >= logging.WARNING]
    assert record.getMessage() == f"Internal Server Error: {path}"
    assert str(record.exc_info[1]) == "boom"
    output = printed.getvalue()
    assert output.startswith(
        f"Internal Server Error: {path} [req=r-1]\nTraceback (most recent call last):"
    )
    assert output.endswith("RuntimeError: boom\n")
    assert output.count("Traceback") == 1
