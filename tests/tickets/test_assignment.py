"""Who works a ticket: POST /api/tickets/<ref>/assign/ (a support member or nobody), and
escalation to supervisors, /escalate/ and /deescalate/ (DESIGN §9)."""

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone
from rest_framework.test import APIClient

from config.errors import Conflict
from tests.factories import UserFactory
from tests.services import require_postgres, run_in_threads
from tickets import services
from tickets.models import Ticket, TicketEvent, TicketMessage

pytestmark = pytest.mark.django_db

RACERS = 5


def api_as(username: str) -> APIClient:
    client = APIClient()
    client.force_authenticate(get_user_model().objects.get(username=username))
    return client


def assign(reference: str, assignee, *, by: str = "agent"):
    return api_as(by).post(
        f"/api/tickets/{reference}/assign/", {"assignee": assignee}, format="json"
    )


def escalate(reference: str, note, *, by: str = "agent"):
    return api_as(by).post(f"/api/tickets/{reference}/escalate/", {"note": note}, format="json")


def deescalate(reference: str, *, by: str = "supervisor"):
    return api_as(by).post(f"/api/tickets/{reference}/deescalate/", {}, format="json")


def snapshot(reference: str) -> tuple:
    ticket = Ticket.objects.get(reference=reference)
    return (
        ticket.status,
        ticket.assignee_id,
        ticket.escalated,
        ticket.updated_at,
        ticket.messages.count(),
        ticket.events.count(),
    )


def events(reference: str, type: str) -> list[tuple]:
    rows = TicketEvent.objects.filter(ticket__reference=reference, type=type).order_by("id")
    return [(event.actor.username, event.data) for event in rows]


def escalated_queue() -> list[str]:
    response = api_as("supervisor").get("/api/tickets/", {"view": "escalated"})
    assert response.status_code == 200
    return [ticket["reference"] for ticket in response.json()["results"]]


# --- assignment -----------------------------------------------------------------------------


def test_an_agent_takes_an_unassigned_ticket(demo):
    response = assign("TCK-1003", "agent", by="agent")

    assert response.status_code == 200
    assert response.json()["assignee"] == "agent"
    assert Ticket.objects.get(reference="TCK-1003").assignee.username == "agent"
    assert events("TCK-1003", "assigned") == [("agent", {"from": None, "to": "agent"})]


@pytest.mark.parametrize("assignee", ["agent2", "intern", "supervisor"])
def test_a_supervisor_hands_a_ticket_to_another_support_member(demo, assignee):
    response = assign("TCK-1001", assignee, by="supervisor")

    assert response.status_code == 200
    assert response.json()["assignee"] == assignee
    assert events("TCK-1001", "assigned") == [("supervisor", {"from": "agent", "to": assignee})]


def test_null_unassigns(demo):
    response = assign("TCK-1002", None, by="agent")

    assert response.status_code == 200
    assert response.json()["assignee"] is None
    assert Ticket.objects.get(reference="TCK-1002").assignee is None
    assert events("TCK-1002", "assigned") == [("agent", {"from": "agent2", "to": None})]


def test_assigning_the_current_assignee_records_nothing(demo):
    unchanged = snapshot("TCK-1001")

    response = assign("TCK-1001", "agent", by="supervisor")

    assert response.status_code == 200
    assert response.json()["assignee"] == "agent"
    assert snapshot("TCK-1001") == unchanged


def _deactivated(username: str) -> str:
    get_user_model().objects.filter(username=username).update(is_active=False)
    return username


def _with_no_desk_role(username: str) -> str:
    UserFactory(username=username)
    return username


def _as_is(username: str) -> str:
    return username


@pytest.mark.parametrize(
    ("make", "username"),
    [
        (_as_is, "reviewer"),
        (_deactivated, "agent2"),
        (_with_no_desk_role, "someone"),
        (_as_is, "nobody-here"),
    ],
    ids=["reviewer-only", "inactive", "no-desk-role", "unknown"],
)
def test_only_an_active_support_member_can_be_assigned(demo, make, username):
    assignee = make(username)
    unchanged = snapshot("TCK-1003")

    response = assign("TCK-1003", assignee)

    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "invalid_assignee"
    assert list(body["extra"]["fields"]) == ["assignee"]
    assert snapshot("TCK-1003") == unchanged


@pytest.mark.parametrize("body", [{}, {"assignee": 7}, {"assignee": ["agent"]}])
def test_an_assignee_that_is_not_a_username_or_null_is_a_400(demo, body):
    unchanged = snapshot("TCK-1003")

    response = api_as("agent").post("/api/tickets/TCK-1003/assign/", body, format="json")

    assert response.status_code == 400
    assert list(response.json()["extra"]["fields"]) == ["assignee"]
    assert snapshot("TCK-1003") == unchanged


def test_assignment_takes_json_only(demo):
    unchanged = snapshot("TCK-1003")

    # A form cannot say null: "null" or "" would be a username there.
    response = api_as("agent").post("/api/tickets/TCK-1003/assign/", {"assignee": "agent"})

    assert response.status_code == 415
    assert response.json()["code"] == "unsupported_media_type"
    assert snapshot("TCK-1003") == unchanged


# --- escalation -----------------------------------------------------------------------------


def test_an_agent_escalates_with_a_note_kept_as_an_internal_message(demo):
    response = escalate("TCK-1001", "  Customer asks for a supervisor.  ", by="agent")

    assert response.status_code == 200
    assert response.json()["escalated"] is True
    ticket = Ticket.objects.get(reference="TCK-1001")
    assert ticket.escalated is True
    note = ticket.messages.order_by("id").last()
    assert (note.author_kind, note.author.username, note.visibility, note.body) == (
        "agent",
        "agent",
        "internal",
        "Escalated to supervisors: Customer asks for a supervisor.",
    )
    assert response.json()["messages"][-1]["body"] == note.body
    assert events("TCK-1001", "escalated") == [
        ("agent", {"note": "Customer asks for a supervisor."})
    ]


def test_an_intern_escalates_too(demo):
    response = escalate("TCK-1003", "This looks like a scam, please check.", by="intern")

    assert response.status_code == 200
    assert events("TCK-1003", "escalated") == [
        ("intern", {"note": "This looks like a scam, please check."})
    ]


@pytest.mark.parametrize("note", ["", "   \n "])
def test_an_escalation_without_a_note_is_a_400(demo, note):
    unchanged = snapshot("TCK-1001")

    response = escalate("TCK-1001", note)

    assert response.status_code == 400
    assert list(response.json()["extra"]["fields"]) == ["note"]
    assert snapshot("TCK-1001") == unchanged


def test_a_closed_ticket_cannot_be_escalated(demo):
    Ticket.objects.filter(reference="TCK-1001").update(status="closed")
    unchanged = snapshot("TCK-1001")

    response = escalate("TCK-1001", "Customer insists.")

    assert response.status_code == 409
    assert response.json()["code"] == "ticket_closed"
    assert snapshot("TCK-1001") == unchanged


def test_an_escalated_ticket_waits_in_the_supervisors_queue_until_handled(demo):
    assert escalated_queue() == []
    escalate("TCK-1002", "Tracking is stuck; carrier claim needed.")
    assert escalated_queue() == ["TCK-1002"]

    response = deescalate("TCK-1002")

    assert response.status_code == 200
    assert response.json()["escalated"] is False
    assert escalated_queue() == []
    assert events("TCK-1002", "escalation_cleared") == [("supervisor", {"note": ""})]
    # The history stays: the escalation note is still on the ticket.
    assert TicketMessage.objects.filter(
        ticket__reference="TCK-1002", body__startswith="Escalated to supervisors:"
    ).exists()


def test_a_supervisor_notes_how_the_escalation_was_handled(demo):
    escalate("TCK-1002", "Tracking is stuck.")

    api_as("supervisor").post(
        "/api/tickets/TCK-1002/deescalate/", {"note": " Carrier claim filed. "}, format="json"
    )

    assert events("TCK-1002", "escalation_cleared") == [
        ("supervisor", {"note": "Carrier claim filed."})
    ]


def test_clearing_a_ticket_that_is_not_escalated_is_a_409(demo):
    unchanged = snapshot("TCK-1002")

    response = deescalate("TCK-1002")

    assert response.status_code == 409
    assert response.json()["code"] == "not_escalated"
    assert snapshot("TCK-1002") == unchanged


def test_an_escalation_moves_the_ticket_up_the_list(demo):
    Ticket.objects.filter(reference="TCK-1001").update(updated_at=timezone.now())

    escalate("TCK-1004", "Second broken item for this customer.")

    listing = api_as("supervisor").get("/api/tickets/").json()["results"]
    assert listing[0]["reference"] == "TCK-1004"


# --- concurrently ---------------------------------------------------------------------------


def _copies(reference: str, count: int) -> list[Ticket]:
    """The ticket as each of `count` people loaded it, before any of them acted."""
    return [Ticket.objects.get(reference=reference) for _ in range(count)]


def _users(*usernames: str) -> list:
    return [get_user_model().objects.get(username=name) for name in usernames]


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_simultaneous_assignments_leave_a_history_that_chains(demo):
    require_postgres()
    assignees = _users("agent2", "intern", "supervisor", "agent")
    actor = _users("supervisor")[0]
    copies = _copies("TCK-1003", len(assignees))

    run_in_threads(
        len(assignees),
        lambda i: services.ticket_assign(ticket=copies[i], assignee=assignees[i], actor=actor),
    )

    history = [event["data"] for event in _assigned_events("TCK-1003")]
    assert len(history) == len(assignees)
    assert [step["from"] for step in history] == [None] + [step["to"] for step in history[:-1]]
    final = Ticket.objects.get(reference="TCK-1003").assignee.username
    assert history[-1]["to"] == final


def _assigned_events(reference: str) -> list[dict]:
    rows = TicketEvent.objects.filter(ticket__reference=reference, type="assigned")
    return list(rows.order_by("id").values("data"))


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_of_simultaneous_clears_of_one_escalation_one_is_recorded(demo):
    require_postgres()
    intern, supervisor = _users("intern", "supervisor")
    services.ticket_escalate(
        ticket=Ticket.objects.get(reference="TCK-1002"), note="Stuck.", actor=intern
    )
    copies = _copies("TCK-1002", RACERS)

    outcomes = run_in_threads(
        RACERS,
        lambda i: services.ticket_clear_escalation(ticket=copies[i], actor=supervisor),
    )

    losers = [o for o in outcomes if isinstance(o, Conflict)]
    assert [loser.code for loser in losers] == ["not_escalated"] * (RACERS - 1), outcomes
    assert len(events("TCK-1002", "escalation_cleared")) == 1
