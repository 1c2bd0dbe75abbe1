"""Every endpoint of DESIGN §9 and every page, for every role: the status, and a refused call
changes nothing."""

import pytest
from django.test import Client

from agent.models import AgentRun
from orders.models import Customer
from refunds.models import RefundRequest
from tests.api.conftest import PASSWORD, desk_state, token_header, user
from tests.factories import UserFactory
from tickets import services as ticket_services
from tickets.models import Macro, Ticket, TicketEvent, TicketMessage

pytestmark = pytest.mark.django_db

ROLES = ["intern", "agent", "supervisor", "reviewer", "outsider", "anonymous"]
STAFF = {
    "intern": 200,
    "agent": 200,
    "supervisor": 200,
    "reviewer": 200,
    "outsider": 403,
    "anonymous": 401,
}
RUNNERS = {
    "intern": 202,
    "agent": 202,
    "supervisor": 202,
    "reviewer": 403,
    "outsider": 403,
    "anonymous": 401,
}
# The run is started by `agent`.
CANCELLERS = {
    "intern": 403,
    "agent": 200,
    "supervisor": 200,
    "reviewer": 403,
    "outsider": 403,
    "anonymous": 401,
}
# The OpenAPI schema and its docs page: anyone logged in.
LOGGED_IN = {
    "intern": 200,
    "agent": 200,
    "supervisor": 200,
    "reviewer": 200,
    "outsider": 200,
    "anonymous": 401,
}
# The refund is requested by `reviewer2`; `reviewer` is another reviewer.
DECIDERS = {
    "intern": 403,
    "agent": 403,
    "supervisor": 403,
    "reviewer": 200,
    "outsider": 403,
    "anonymous": 401,
}

# Writing on a ticket (an internal note here; public replies are agents' and supervisors').
WRITERS = {
    "intern": 201,
    "agent": 201,
    "supervisor": 201,
    "reviewer": 403,
    "outsider": 403,
    "anonymous": 401,
}
# Status, assignment, resending a failed reply.
TICKET_WORKERS = {
    "intern": 403,
    "agent": 200,
    "supervisor": 200,
    "reviewer": 403,
    "outsider": 403,
    "anonymous": 401,
}
# Support members, whatever their rank: tags, macros.
SUPPORT = {
    "intern": 200,
    "agent": 200,
    "supervisor": 200,
    "reviewer": 403,
    "outsider": 403,
    "anonymous": 401,
}
ESCALATORS = {
    "intern": 200,
    "agent": 200,
    "supervisor": 403,
    "reviewer": 403,
    "outsider": 403,
    "anonymous": 401,
}
# TCK-1004 is escalated (tickets_at_work).
SUPERVISORS = {
    "intern": 403,
    "agent": 403,
    "supervisor": 200,
    "reviewer": 403,
    "outsider": 403,
    "anonymous": 401,
}
# Withdrawal: whoever proposed the refund (`reviewer2`, not among the roles) or a supervisor.
WITHDRAWERS = {
    "intern": 403,
    "agent": 403,
    "supervisor": 200,
    "reviewer": 403,
    "outsider": 403,
    "anonymous": 401,
}

API = [
    ("GET", "/api/schema/", LOGGED_IN),
    ("GET", "/api/tickets/", STAFF),
    ("GET", "/api/tickets/TCK-1001/", STAFF),
    ("POST", "/api/tickets/TCK-1001/runs/", RUNNERS),
    ("GET", "/api/runs/{run}/", STAFF),
    ("GET", "/api/runs/{run}/events/", STAFF),
    ("GET", "/api/runs/{finished_run}/events/stream/", STAFF),
    ("GET", "/api/runs/{run}/tool-calls/", STAFF),
    ("POST", "/api/runs/{run}/cancel/", CANCELLERS),
    ("GET", "/api/refunds/", STAFF),
    ("GET", "/api/refunds/{refund}/", STAFF),
    ("POST", "/api/refunds/{refund}/approve/", DECIDERS),
    ("POST", "/api/refunds/{refund}/reject/", DECIDERS),
    ("POST", "/api/refunds/{refund}/withdraw/", WITHDRAWERS),
    ("POST", "/api/tickets/TCK-1001/messages/", WRITERS),
    ("POST", "/api/tickets/TCK-1001/messages/{failed_reply}/retry/", TICKET_WORKERS),
    ("POST", "/api/tickets/TCK-1001/status/", TICKET_WORKERS),
    ("POST", "/api/tickets/TCK-1001/assign/", TICKET_WORKERS),
    ("POST", "/api/tickets/TCK-1002/escalate/", ESCALATORS),
    ("POST", "/api/tickets/TCK-1004/deescalate/", SUPERVISORS),
    ("POST", "/api/tickets/TCK-1001/priority/", TICKET_WORKERS),
    ("POST", "/api/tickets/TCK-1001/tags/", SUPPORT),
    ("POST", "/api/tickets/TCK-1001/cc/", TICKET_WORKERS),
    ("GET", "/api/macros/", SUPPORT),
    ("POST", "/api/tickets/TCK-1001/macros/{macro}/apply/", SUPPORT),
    ("GET", "/api/customers/{customer}/", STAFF),
    ("GET", "/api/tickets/TCK-1001/events/", STAFF),
    ("GET", "/api/notifications/", STAFF),
    ("GET", "/api/sla/calendar/", STAFF),
]


@pytest.fixture
def tickets_at_work(desk) -> dict:
    """A reply to TCK-1001 whose delivery failed, and TCK-1004 escalated by the intern."""
    reply = TicketMessage.objects.create(
        ticket=Ticket.objects.get(reference="TCK-1001"),
        author_kind="agent",
        author=user("agent"),
        body="We are sorry about the mug.",
        visibility="public",
        delivery="failed",
        delivery_error="connection refused",
    )
    ticket_services.ticket_escalate(
        ticket=Ticket.objects.get(reference="TCK-1004"), note="Please look.", actor=user("intern")
    )
    macro = Macro.objects.create(name="Hello", body="Hi {{customer.first_name}}")
    return {
        "failed_reply": reply.pk,
        "customer": Customer.objects.get(name="Li Wei").pk,
        "macro": macro.pk,
    }


def tickets_state() -> tuple:
    tickets = Ticket.objects.order_by("pk")
    return (
        list(tickets.values_list("pk", "status", "assignee", "escalated", "updated_at")),
        list(TicketMessage.objects.order_by("pk").values_list("pk", "delivery")),
        TicketEvent.objects.count(),
    )


def state() -> tuple:
    """desk_state() and the tickets: what a refused call must leave as it was."""
    return desk_state(), tickets_state()


def username_for(role: str) -> str | None:
    if role == "anonymous":
        return None
    if role == "outsider":
        UserFactory(username="outsider", password=PASSWORD)
    return role


def fill(path: str, desk, work: dict | None = None) -> str:
    return path.format(
        run=desk.run.pk,
        finished_run=desk.finished_run.pk,
        refund=desk.refund.request_id,
        **(work or {}),
    )


def body_for(path: str, desk) -> dict:
    if path.endswith("/runs/"):
        return {"message": "What did the mug cost?"}
    if path.endswith("/approve/"):
        return {"version": 1, "fingerprint": desk.fingerprint, "note": "ok"}
    if path.endswith("/reject/"):
        return {"version": 1, "note": "no"}
    return TICKET_BODIES.get(action_of(path), {})


TICKET_BODIES = {
    "messages": {"body": "Checked with the carrier.", "visibility": "internal"},
    "status": {"status": "pending"},
    "assign": {"assignee": "agent2"},
    "escalate": {"note": "The customer asks for a supervisor."},
    "priority": {"priority": "urgent"},
    "tags": {"add": ["damaged"]},
    "cc": {"cc": ["partner@example.com"]},
}


def action_of(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


def call(method: str, path: str, body: dict, username: str | None):
    headers = {"HTTP_AUTHORIZATION": token_header(username)} if username else {}
    client = Client()
    if method == "GET":
        return client.get(path, **headers)
    return client.post(path, body, content_type="application/json", **headers)


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize(("method", "path", "expected"), API, ids=[f"{m} {p}" for m, p, _ in API])
def test_the_api_answers_each_role_as_designed(desk, tickets_at_work, method, path, expected, role):
    username = username_for(role)
    url = fill(path, desk, tickets_at_work)
    body = body_for(path, desk)
    if username:
        token_header(username)
    before = state()

    response = call(method, url, body, username)

    assert response.status_code == expected[role], response.content
    if response.status_code >= 400:
        assert set(response.json()) == {"message", "code", "extra"}
    if method == "GET" or response.status_code >= 400:
        assert state() == before
    elif action_of(path) in TICKET_CHANGES:
        TICKET_CHANGES[action_of(path)](username, tickets_at_work)
    else:
        assert_done(path, username, desk)


def assert_done(path: str, username: str, desk) -> None:
    """What an allowed call on a run or a refund changed."""
    if path.endswith("/runs/"):
        run = AgentRun.objects.exclude(pk__in=[desk.run.pk, desk.finished_run.pk]).get()
        assert (run.started_by.username, run.status) == (username, "queued")
    elif path.endswith("/cancel/"):
        desk.run.refresh_from_db()
        assert (desk.run.status, desk.run.cancel_requested) == ("cancelled", True)
    elif path.endswith("/withdraw/"):
        desk.refund.refresh_from_db()
        confirmation = desk.refund.confirmations.get()
        assert (desk.refund.status, confirmation.status, confirmation.decided_by.username) == (
            "withdrawn",
            "withdrawn",
            username,
        )
    else:
        desk.refund.refresh_from_db()
        confirmation = desk.refund.confirmations.get()
        decided = "approved" if path.endswith("/approve/") else "rejected"
        assert (desk.refund.status, confirmation.status, confirmation.decided_by.username) == (
            decided,
            decided,
            "reviewer",
        )


# What an allowed call on a ticket changed, by whom.


def _last_event(reference: str, type: str) -> TicketEvent:
    return TicketEvent.objects.filter(ticket__reference=reference, type=type).latest("id")


def _note_written(username: str, work: dict) -> None:
    note = TicketMessage.objects.latest("id")
    assert (note.author.username, note.body, note.visibility) == (
        username,
        TICKET_BODIES["messages"]["body"],
        "internal",
    )


def _reply_requeued(username: str, work: dict) -> None:
    reply = TicketMessage.objects.get(pk=work["failed_reply"])
    assert (reply.delivery, reply.delivery_error) == ("queued", "")


def _status_changed(username: str, work: dict) -> None:
    event = _last_event("TCK-1001", "status_changed")
    assert (event.actor.username, event.data["to"]) == (username, "pending")
    assert Ticket.objects.get(reference="TCK-1001").status == "pending"


def _assigned(username: str, work: dict) -> None:
    event = _last_event("TCK-1001", "assigned")
    assert (event.actor.username, event.data) == (username, {"from": "agent", "to": "agent2"})


def _escalated(username: str, work: dict) -> None:
    event = _last_event("TCK-1002", "escalated")
    assert event.actor.username == username
    assert Ticket.objects.get(reference="TCK-1002").escalated is True


def _escalation_cleared(username: str, work: dict) -> None:
    event = _last_event("TCK-1004", "escalation_cleared")
    assert event.actor.username == username
    assert Ticket.objects.get(reference="TCK-1004").escalated is False


def _priority_set(username: str, work: dict) -> None:
    event = _last_event("TCK-1001", "priority_changed")
    assert (event.actor.username, event.data["to"]) == (username, "urgent")


def _tagged(username: str, work: dict) -> None:
    event = _last_event("TCK-1001", "tags_changed")
    assert (event.actor.username, event.data["added"]) == (username, ["damaged"])


def _cc_set(username: str, work: dict) -> None:
    assert Ticket.objects.get(reference="TCK-1001").cc == ["partner@example.com"]
    assert _last_event("TCK-1001", "cc_changed").actor.username == username


def _macro_rendered(username: str, work: dict) -> None:
    # Applying only renders: no message was written.
    assert not TicketMessage.objects.filter(body="Hi Li").exists()


TICKET_CHANGES = {
    "messages": _note_written,
    "retry": _reply_requeued,
    "status": _status_changed,
    "assign": _assigned,
    "escalate": _escalated,
    "deescalate": _escalation_cleared,
    "priority": _priority_set,
    "tags": _tagged,
    "cc": _cc_set,
    "apply": _macro_rendered,
}


@pytest.mark.parametrize("action", ["approve", "reject"])
def test_the_requesting_reviewer_may_not_decide_their_own_refund(desk, action):
    token_header("reviewer2")
    before = state()

    response = call(
        "POST",
        f"/api/refunds/{desk.refund.request_id}/{action}/",
        body_for(f"/{action}/", desk),
        "reviewer2",
    )

    assert response.status_code == 403
    assert response.json()["code"] == "own_request"
    assert state() == before
    assert RefundRequest.objects.get(pk=desk.refund.pk).status == "pending_approval"


@pytest.mark.parametrize("role", ROLES)
def test_anyone_gets_a_token_with_good_credentials_and_a_400_with_bad_ones(demo, role):
    username = username_for(role)
    client = Client()

    if username is None:
        response = client.post(
            "/api/auth/token/",
            {"username": "agent", "password": "wrong"},
            content_type="application/json",
        )
        assert response.status_code == 400
        assert response.json()["code"] == "authorization"
        return
    response = client.post(
        "/api/auth/token/",
        {"username": username, "password": PASSWORD},
        content_type="application/json",
    )
    assert response.status_code == 200
    assert list(response.json()) == ["token"]
    key = response.json()["token"]
    # The key authenticates: an outsider's 403 is about the role, a bad key would be 401.
    answer = client.get("/api/tickets/", HTTP_AUTHORIZATION=f"Token {key}")
    assert answer.status_code == (403 if role == "outsider" else 200)


STAFF_PAGE = {
    "intern": 200,
    "agent": 200,
    "supervisor": 200,
    "reviewer": 200,
    "outsider": 403,
    "anonymous": 302,
}
REVIEW_PAGE = {
    "intern": 403,
    "agent": 403,
    "supervisor": 403,
    "reviewer": 200,
    "outsider": 403,
    "anonymous": 302,
}
# Django admin lets in `is_staff` users (reviewers and the superuser); others go to its login.
ADMIN_PAGE = {
    "intern": 302,
    "agent": 302,
    "supervisor": 302,
    "reviewer": 200,
    "outsider": 302,
    "anonymous": 302,
    "admin": 200,
}
LOGGED_IN_PAGE = {
    "intern": 200,
    "agent": 200,
    "supervisor": 200,
    "reviewer": 200,
    "outsider": 200,
    "anonymous": 302,
}

PAGES = [
    ("/tickets/", STAFF_PAGE, "/login/"),
    ("/tickets/TCK-1001/", STAFF_PAGE, "/login/"),
    ("/review/", REVIEW_PAGE, "/login/"),
    ("/review/{refund}/", REVIEW_PAGE, "/login/"),
    ("/admin/", ADMIN_PAGE, "/admin/login/"),
    ("/api/docs/", LOGGED_IN_PAGE, "/login/"),
]


PAGE_CASES = [
    pytest.param(path, expected[role], login_url, role, id=f"{path}-{role}")
    for path, expected, login_url in PAGES
    for role in expected
]


@pytest.mark.parametrize(("path", "expected", "login_url", "role"), PAGE_CASES)
def test_the_pages_answer_each_role_as_designed(desk, path, expected, login_url, role):
    username = username_for(role)
    client = Client()
    if username:
        client.force_login(UserFactory._meta.model.objects.get(username=username))
    url = fill(path, desk)
    before = state()

    response = client.get(url)

    assert response.status_code == expected
    if response.status_code == 302:
        assert response["Location"] == f"{login_url}?next={url}"
    assert state() == before


@pytest.mark.parametrize(
    "accept",
    [
        None,
        "*/*",
        "application/vnd.oai.openapi",
        "application/yaml",
        "application/vnd.oai.openapi+json",
        "application/json",
    ],
)
def test_it_refuses_the_schema_to_an_anonymous_caller_with_a_json_401(client, accept):
    headers = {"HTTP_ACCEPT": accept} if accept else {}

    response = client.get("/api/schema/", **headers)

    assert (response.status_code, response["Content-Type"]) == (401, "application/json")
    assert response.json() == {
        "message": "Authentication credentials were not provided.",
        "code": "not_authenticated",
        "extra": {},
    }
    assert response["WWW-Authenticate"] == "Token"
