"""Schemathesis against /api/schema/: no 5xx, and every answer is the documented one."""

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import negative_data_rejection, positive_data_acceptance

from agent import api as agent_api
from config.wsgi import application
from tests.api.conftest import token_header

pytestmark = pytest.mark.django_db


def _set_example(raw: dict, path: str, name: str, value: str) -> None:
    for operation in raw["paths"][path].values():
        for parameter in operation.get("parameters", []):
            if parameter["in"] == "path" and parameter["name"] == name:
                parameter["example"] = value


INBOUND_SECRET = "fuzz-inbound-secret-0123456789-abcdef"


@pytest.fixture
def api_schema(desk, client, request, settings, monkeypatch):
    settings.INBOUND_SECRET = INBOUND_SECRET
    # A ticket's stream, a list's and the notification count's have no end of their own: under
    # WSGI they end when their time is up, here at once.
    monkeypatch.setattr(agent_api, "STREAM_MAX_S", 0.05)
    # schemathesis' lazy loader renames the node per operation through `_nodeid`, which
    # pytest 9.2 no longer sets.
    request.node._nodeid = request.node.nodeid
    client.force_login(user_model().objects.get(username="admin"))
    response = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    raw = response.json()
    for path in raw["paths"]:
        if "{reference}" in path:
            _set_example(raw, path, "reference", "TCK-1001")
        if "{request_id}" in path:
            _set_example(raw, path, "request_id", desk.refund.request_id)
        if "{run_id}" in path:
            # The stream of a finished run ends at once; a live one would stream for minutes.
            run = desk.finished_run if path.endswith("/stream/") else desk.run
            _set_example(raw, path, "run_id", str(run.pk))
    schema = schemathesis.openapi.from_dict(raw)
    schema.app = application
    # Requests go through the real WSGI handler inside the test transaction: like Django's
    # test client, keep the start and end of a request from closing the connection that
    # holds it. (Done after the test client's last request, which reconnects them.)
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield schema
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


def user_model():
    from django.contrib.auth import get_user_model

    return get_user_model()


def lenient_checks(case) -> list:
    """Checks a case may skip, each for a documented reason."""
    excluded = []
    if case.operation.path in ("/api/auth/token/", "/api/tickets/{reference}/assign/"):
        # Well-formed but wrong credentials, or a username nobody has, are a documented 400,
        # not a schema violation.
        excluded.append(positive_data_acceptance)
    if case.operation.path in ("/api/tickets/bulk/", "/api/views/"):
        # Documented 400s the schema cannot say: a bulk change names at least one action and a
        # merge goes alone, its assignee and merge target must exist; a saved view's query
        # must be the ticket list's filters with values the list takes.
        excluded.append(positive_data_acceptance)
    if case.operation.path == "/api/notifications/read/":
        # Exactly one of "ids" and "all": true, which the schema cannot say.
        excluded.append(positive_data_acceptance)
    if any(isinstance(value, list) for value in (case.query or {}).values()):
        # A repeated query parameter is not rejected: Django reads the last one.
        excluded.append(negative_data_rejection)
    return excluded


lazy_schema = schemathesis.pytest.from_fixture("api_schema")
FUZZ = settings(
    max_examples=15, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck)
)


@lazy_schema.exclude(path_regex="(approve|reject)/$").parametrize()
@FUZZ
def test_every_endpoint_answers_as_documented_for_an_agent(case):
    case.call_and_validate(
        headers={"Authorization": token_header("agent"), "X-Inbound-Secret": INBOUND_SECRET},
        excluded_checks=lenient_checks(case),
    )


@lazy_schema.include(path_regex="(approve|reject)/$").parametrize()
@FUZZ
def test_the_decision_endpoints_answer_as_documented_for_a_reviewer(case):
    case.call_and_validate(
        headers={"Authorization": token_header("reviewer")}, excluded_checks=lenient_checks(case)
    )
