"""The ticket's state machine (DESIGN §4), every pair of statuses, at the service and through
POST /api/tickets/<ref>/status/; and a compare-and-swap that lets one of many racers win."""

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from config.errors import Conflict
from tests.factories import TicketFactory, UserFactory
from tests.services import require_postgres, run_in_threads
from tickets import services
from tickets.models import Ticket, TicketEvent

STATUSES = ["open", "pending", "solved", "closed"]
# DESIGN §4, written out here rather than read from TICKET_ALLOWED, so the table is checked.
ALLOWED = {
    ("open", "pending"),
    ("open", "solved"),
    ("pending", "open"),
    ("pending", "solved"),
    ("solved", "closed"),
    ("solved", "open"),
}
PAIRS = [(before, after) for before in STATUSES for after in STATUSES]
ALLOWED_PAIRS = [pair for pair in PAIRS if pair in ALLOWED]
REFUSED_PAIRS = [pair for pair in PAIRS if pair not in ALLOWED]


def allowed_from(status: str) -> list[str]:
    return sorted(after for before, after in ALLOWED if before == status)


def ticket_in(status: str) -> Ticket:
    return TicketFactory(status=status)


def snapshot(ticket: Ticket) -> tuple:
    ticket = Ticket.objects.get(pk=ticket.pk)
    return ticket.status, ticket.updated_at, ticket.events.count()


def api_as(username: str) -> APIClient:
    client = APIClient()
    client.force_authenticate(get_user_model().objects.get(username=username))
    return client


def post_status(client: APIClient, ticket: Ticket, status) -> object:
    return client.post(
        f"/api/tickets/{ticket.reference}/status/", {"status": status}, format="json"
    )


def test_the_table_is_the_design_s_state_machine():
    table = {
        (before, after) for before, afters in services.TICKET_ALLOWED.items() for after in afters
    }
    assert table == ALLOWED
    assert set(services.TICKET_ALLOWED) == set(STATUSES)


# --- the service ----------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(("before", "after"), ALLOWED_PAIRS)
def test_the_service_makes_an_allowed_move_and_records_it(agent_user, before, after):
    ticket = ticket_in(before)

    services.ticket_set_status(ticket=ticket, to_status=after, actor=agent_user)

    assert Ticket.objects.get(pk=ticket.pk).status == after
    event = TicketEvent.objects.get(ticket=ticket, type="status_changed")
    assert (event.actor, event.data) == (agent_user, {"from": before, "to": after, "reason": ""})


@pytest.mark.django_db
@pytest.mark.parametrize(("before", "after"), REFUSED_PAIRS)
def test_the_service_refuses_any_other_move_and_changes_nothing(agent_user, before, after):
    ticket = ticket_in(before)
    unchanged = snapshot(ticket)

    with pytest.raises(Conflict) as refused:
        services.ticket_set_status(ticket=ticket, to_status=after, actor=agent_user)

    assert refused.value.code == "illegal_transition"
    assert refused.value.extra == {"from": before, "to": after, "allowed": allowed_from(before)}
    assert snapshot(ticket) == unchanged


# --- the API --------------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(("before", "after"), ALLOWED_PAIRS)
def test_the_api_makes_an_allowed_move_and_answers_the_ticket(demo, before, after):
    ticket = ticket_in(before)

    response = post_status(api_as("agent"), ticket, after)

    assert response.status_code == 200, response.content
    assert (response.json()["reference"], response.json()["status"]) == (ticket.reference, after)
    assert Ticket.objects.get(pk=ticket.pk).status == after
    event = TicketEvent.objects.get(ticket=ticket, type="status_changed")
    assert (event.actor.username, event.data["from"], event.data["to"]) == ("agent", before, after)


@pytest.mark.django_db
@pytest.mark.parametrize(("before", "after"), REFUSED_PAIRS)
def test_the_api_refuses_any_other_move_with_409_and_changes_nothing(demo, before, after):
    ticket = ticket_in(before)
    unchanged = snapshot(ticket)

    response = post_status(api_as("supervisor"), ticket, after)

    assert response.status_code == 409
    body = response.json()
    assert body["code"] == "illegal_transition"
    assert body["extra"]["allowed"] == allowed_from(before)
    assert snapshot(ticket) == unchanged


@pytest.mark.django_db
@pytest.mark.parametrize("status", ["done", "", "OPEN", None, 1, ["solved"]])
def test_a_status_that_is_not_one_of_the_four_is_a_400(demo, status):
    ticket = ticket_in("open")
    unchanged = snapshot(ticket)

    response = post_status(api_as("agent"), ticket, status)

    assert response.status_code == 400
    assert list(response.json()["extra"]["fields"]) == ["status"]
    assert snapshot(ticket) == unchanged


@pytest.mark.django_db
def test_a_missing_status_is_a_400(demo):
    response = api_as("agent").post("/api/tickets/TCK-1001/status/", {}, format="json")

    assert response.status_code == 400
    assert response.json()["extra"]["fields"]["status"] == ["This field is required."]


@pytest.mark.django_db
def test_the_status_of_an_unknown_ticket_is_a_404(demo):
    response = api_as("agent").post(
        "/api/tickets/TCK-9999/status/", {"status": "solved"}, format="json"
    )

    assert response.status_code == 404
    assert response.json()["code"] == "not_found"


# --- concurrently ---------------------------------------------------------------------------

RACERS = 6


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_of_many_simultaneous_moves_exactly_one_wins():
    require_postgres()
    agent = UserFactory(username="racer", role="agent")
    ticket = ticket_in("open")
    # Every racer read the ticket while it was open: only the compare-and-swap can stop them.
    copies = [Ticket.objects.get(pk=ticket.pk) for _ in range(RACERS)]

    outcomes = run_in_threads(
        RACERS,
        lambda i: services.ticket_set_status(ticket=copies[i], to_status="solved", actor=agent),
    )

    winners = [o for o in outcomes if isinstance(o, Ticket)]
    losers = [o for o in outcomes if isinstance(o, Conflict)]
    assert (len(winners), len(losers)) == (1, RACERS - 1), outcomes
    assert {loser.code for loser in losers} == {"stale_status"}
    assert Ticket.objects.get(pk=ticket.pk).status == "solved"
    assert TicketEvent.objects.filter(ticket=ticket, type="status_changed").count() == 1
