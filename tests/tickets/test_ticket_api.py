"""The ticket API's writes per role (DESIGN §9's "who" column, with the demo users), and the
ticket's JSON shape."""

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from tests.agent.runs import drive, start_run
from tests.factories import UserFactory
from tickets import services
from tickets.models import Ticket, TicketMessage

pytestmark = pytest.mark.django_db

ROLES = ["intern", "agent", "agent2", "supervisor", "reviewer"]
AGENTS_AND_SUPERVISORS = {
    "intern": 403,
    "agent": 200,
    "agent2": 200,
    "supervisor": 200,
    "reviewer": 403,
}
INTERNS_AND_AGENTS = {
    "intern": 200,
    "agent": 200,
    "agent2": 200,
    "supervisor": 403,
    "reviewer": 403,
}
SUPERVISORS = {"intern": 403, "agent": 403, "agent2": 403, "supervisor": 200, "reviewer": 403}
SUPPORT = {"intern": 201, "agent": 201, "agent2": 201, "supervisor": 201, "reviewer": 403}
PUBLIC_REPLIERS = {"intern": 403, "agent": 201, "agent2": 201, "supervisor": 201, "reviewer": 403}


def api_as(username: str) -> APIClient:
    client = APIClient()
    client.force_authenticate(get_user_model().objects.get(username=username))
    return client


def snapshot(reference: str) -> tuple:
    ticket = Ticket.objects.get(reference=reference)
    messages = ticket.messages.order_by("id").values_list("id", "delivery")
    return (
        ticket.status,
        ticket.assignee_id,
        ticket.escalated,
        ticket.updated_at,
        list(messages),
        ticket.events.count(),
    )


def escalated(reference: str) -> Ticket:
    ticket = Ticket.objects.get(reference=reference)
    intern = get_user_model().objects.get(username="intern")
    return services.ticket_escalate(ticket=ticket, note="Please look.", actor=intern)


def failed_reply(reference: str) -> TicketMessage:
    return TicketMessage.objects.create(
        ticket=Ticket.objects.get(reference=reference),
        author_kind="agent",
        author=get_user_model().objects.get(username="agent"),
        body="We are sorry.",
        visibility="public",
        delivery="failed",
        delivery_error="connection refused",
    )


def assert_refused(response, reference: str, before: tuple) -> None:
    assert response.json()["code"] == "permission_denied"
    assert snapshot(reference) == before


# --- who may do what ------------------------------------------------------------------------


@pytest.mark.parametrize("role", ROLES)
def test_status_is_changed_by_agents_and_supervisors_only(demo, role):
    before = snapshot("TCK-1001")

    response = api_as(role).post(
        "/api/tickets/TCK-1001/status/", {"status": "pending"}, format="json"
    )

    assert response.status_code == AGENTS_AND_SUPERVISORS[role]
    if response.status_code == 200:
        assert Ticket.objects.get(reference="TCK-1001").status == "pending"
    else:
        assert_refused(response, "TCK-1001", before)


@pytest.mark.parametrize("role", ROLES)
def test_tickets_are_assigned_by_agents_and_supervisors_only(demo, role):
    before = snapshot("TCK-1003")

    response = api_as(role).post(
        "/api/tickets/TCK-1003/assign/", {"assignee": "agent2"}, format="json"
    )

    assert response.status_code == AGENTS_AND_SUPERVISORS[role]
    if response.status_code == 200:
        assert Ticket.objects.get(reference="TCK-1003").assignee.username == "agent2"
    else:
        assert_refused(response, "TCK-1003", before)


@pytest.mark.parametrize("role", ["intern", "reviewer"])
def test_a_refused_assigner_learns_nothing_about_the_assignee(demo, role):
    before = snapshot("TCK-1003")

    response = api_as(role).post(
        "/api/tickets/TCK-1003/assign/", {"assignee": "nobody-here"}, format="json"
    )

    assert response.status_code == 403
    assert_refused(response, "TCK-1003", before)


@pytest.mark.parametrize("role", ROLES)
def test_interns_and_agents_escalate(demo, role):
    before = snapshot("TCK-1001")

    response = api_as(role).post(
        "/api/tickets/TCK-1001/escalate/", {"note": "Needs a supervisor."}, format="json"
    )

    assert response.status_code == INTERNS_AND_AGENTS[role]
    if response.status_code == 200:
        assert Ticket.objects.get(reference="TCK-1001").escalated is True
    else:
        assert_refused(response, "TCK-1001", before)


@pytest.mark.parametrize("role", ROLES)
def test_only_a_supervisor_clears_an_escalation(demo, role):
    escalated("TCK-1001")
    before = snapshot("TCK-1001")

    response = api_as(role).post("/api/tickets/TCK-1001/deescalate/", {}, format="json")

    assert response.status_code == SUPERVISORS[role]
    if response.status_code == 200:
        assert Ticket.objects.get(reference="TCK-1001").escalated is False
    else:
        assert_refused(response, "TCK-1001", before)


def test_a_supervisor_clearing_a_ticket_that_is_not_escalated_gets_a_409(demo):
    before = snapshot("TCK-1001")

    response = api_as("supervisor").post("/api/tickets/TCK-1001/deescalate/", {}, format="json")

    assert response.status_code == 409
    assert response.json()["code"] == "not_escalated"
    assert snapshot("TCK-1001") == before


@pytest.mark.parametrize("role", ROLES)
def test_support_writes_internal_notes(demo, role):
    before = snapshot("TCK-1001")

    response = api_as(role).post(
        "/api/tickets/TCK-1001/messages/",
        {"body": "Checked the carrier.", "visibility": "internal"},
        format="json",
    )

    assert response.status_code == SUPPORT[role]
    if response.status_code == 201:
        assert (response.json()["visibility"], response.json()["delivery"]) == (
            "internal",
            "not_applicable",
        )
        assert response.json()["author"] == role
    else:
        assert_refused(response, "TCK-1001", before)


@pytest.mark.parametrize("role", ROLES)
def test_agents_and_supervisors_reply_publicly_and_interns_do_not(demo, role):
    before = snapshot("TCK-1001")

    response = api_as(role).post(
        "/api/tickets/TCK-1001/messages/",
        {"body": "A new mug is on its way.", "visibility": "public"},
        format="json",
    )

    assert response.status_code == PUBLIC_REPLIERS[role]
    if response.status_code == 201:
        assert (response.json()["visibility"], response.json()["delivery"]) == (
            "public",
            "queued",
        )
    else:
        assert_refused(response, "TCK-1001", before)


@pytest.mark.parametrize("role", ROLES)
def test_agents_and_supervisors_retry_a_failed_reply(demo, role):
    reply = failed_reply("TCK-1001")
    before = snapshot("TCK-1001")

    response = api_as(role).post(f"/api/tickets/TCK-1001/messages/{reply.pk}/retry/")

    assert response.status_code == AGENTS_AND_SUPERVISORS[role]
    if response.status_code == 200:
        assert response.json()["delivery"] == "queued"
    else:
        assert_refused(response, "TCK-1001", before)


ENDPOINTS = [
    ("GET", "/api/tickets/"),
    ("GET", "/api/tickets/TCK-1001/"),
    ("POST", "/api/tickets/TCK-1001/messages/"),
    ("POST", "/api/tickets/TCK-1001/messages/{reply}/retry/"),
    ("POST", "/api/tickets/TCK-1001/status/"),
    ("POST", "/api/tickets/TCK-1001/assign/"),
    ("POST", "/api/tickets/TCK-1001/escalate/"),
    ("POST", "/api/tickets/TCK-1001/deescalate/"),
    ("GET", "/api/customers/{customer}/"),
]
BODIES = {
    "messages": {"body": "Hello", "visibility": "internal"},
    "status": {"status": "solved"},
    "assign": {"assignee": "agent2"},
    "escalate": {"note": "Look."},
}


def fill(path: str) -> str:
    customer = Ticket.objects.get(reference="TCK-1001").customer_id
    return path.format(reply=failed_reply("TCK-1001").pk, customer=customer)


def call(client: APIClient, method: str, url: str):
    if method == "GET":
        return client.get(url)
    action = url.rstrip("/").rsplit("/", 1)[-1]
    return client.post(url, BODIES.get(action, {}), format="json")


@pytest.mark.parametrize(("method", "path"), ENDPOINTS, ids=[p for _, p in ENDPOINTS])
def test_an_anonymous_caller_gets_401_everywhere(demo, method, path):
    url = fill(path)
    before = snapshot("TCK-1001")

    response = call(APIClient(), method, url)

    assert response.status_code == 401
    assert response.json()["code"] == "not_authenticated"
    assert snapshot("TCK-1001") == before


@pytest.mark.parametrize(("method", "path"), ENDPOINTS, ids=[p for _, p in ENDPOINTS])
def test_a_user_without_a_desk_role_gets_403_everywhere(demo, method, path):
    client = APIClient()
    client.force_authenticate(UserFactory(username="stranger"))
    url = fill(path)
    before = snapshot("TCK-1001")

    response = call(client, method, url)

    assert response.status_code == 403
    assert response.json()["code"] == "permission_denied"
    assert snapshot("TCK-1001") == before


# --- the ticket's JSON (DESIGN §9) ----------------------------------------------------------

TICKET_KEYS = {
    "reference",
    "subject",
    "status",
    "assignee",
    "escalated",
    "customer",
    "customer_id",
    "customer_email",
    "order_id",
    "messages",
    "created_at",
    "updated_at",
}
MESSAGE_KEYS = {"id", "author_kind", "author", "body", "visibility", "delivery", "created_at"}


def test_a_ticket_has_the_design_s_shape(demo):
    ticket = Ticket.objects.get(reference="TCK-1001")

    body = api_as("reviewer").get("/api/tickets/TCK-1001/").json()

    assert set(body) >= TICKET_KEYS
    assert {key: body[key] for key in TICKET_KEYS - {"messages", "created_at", "updated_at"}} == {
        "reference": "TCK-1001",
        "subject": "My mug arrived broken",
        "status": "open",
        "assignee": "agent",
        "escalated": False,
        "customer": "Li Wei",
        "customer_id": ticket.customer_id,
        "customer_email": "li.wei@example.com",
        "order_id": "202610110087",
    }
    assert (body["created_at"], body["updated_at"]) == (
        ticket.created_at.isoformat().replace("+00:00", "Z"),
        ticket.updated_at.isoformat().replace("+00:00", "Z"),
    )
    [message] = body["messages"]
    assert set(message) >= MESSAGE_KEYS
    first = ticket.messages.get()
    assert {key: message[key] for key in MESSAGE_KEYS - {"body", "created_at"}} == {
        "id": first.pk,
        "author_kind": "customer",
        "author": None,
        "visibility": "public",
        "delivery": "not_applicable",
    }
    assert message["body"].startswith("Hello, the ceramic mug from order 202610110087")


def test_a_ticket_without_an_order_or_assignee_says_null(demo):
    Ticket.objects.filter(reference="TCK-1003").update(order=None)

    body = api_as("agent").get("/api/tickets/TCK-1003/").json()

    assert (body["order_id"], body["assignee"]) == (None, None)


def test_the_list_gives_each_ticket_the_same_shape(demo):
    results = api_as("agent").get("/api/tickets/").json()["results"]

    assert len(results) == 4
    for ticket in results:
        assert set(ticket) >= TICKET_KEYS
        assert all(set(message) >= MESSAGE_KEYS for message in ticket["messages"])


def test_the_demo_s_customer_messages_are_public(demo):
    results = api_as("agent").get("/api/tickets/").json()["results"]

    messages = [message for ticket in results for message in ticket["messages"]]
    assert len(messages) == 4
    assert {(m["author_kind"], m["visibility"]) for m in messages} == {("customer", "public")}


# The run's tools refuse to run inside a transaction, so this test commits.
@pytest.mark.django_db(transaction=True)
def test_an_assistant_answer_is_posted_as_an_internal_message(demo, settings):
    settings.LLM_PROVIDER = "offline"
    run = start_run("What did the customer pay?")

    drive(run)

    assert run.status == "completed"
    answer = api_as("agent").get("/api/tickets/TCK-1001/").json()["messages"][-1]
    assert (answer["author_kind"], answer["author"], answer["body"]) == (
        "assistant",
        None,
        run.final_answer,
    )
    assert (answer["visibility"], answer["delivery"]) == ("internal", "not_applicable")


def test_a_system_message_is_internal_unless_said_otherwise(demo):
    ticket = Ticket.objects.get(reference="TCK-1002")

    services.ticket_post_message(ticket=ticket, author_kind="system", body="Refund executed.")

    last = api_as("agent").get("/api/tickets/TCK-1002/").json()["messages"][-1]
    assert (last["author_kind"], last["visibility"]) == ("system", "internal")
