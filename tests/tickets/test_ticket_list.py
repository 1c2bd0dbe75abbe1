"""GET /api/tickets/: the desk's views, sorting, search in message text, pagination, and a
query count that does not grow with the tickets."""

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from tests.factories import TicketFactory, TicketMessageFactory
from tests.services import require_postgres
from tickets import services
from tickets.models import Ticket, TicketEvent

pytestmark = pytest.mark.django_db

ALL = ["TCK-1001", "TCK-1002", "TCK-1003", "TCK-1004"]


def api_as(username: str) -> APIClient:
    client = APIClient()
    client.force_authenticate(get_user_model().objects.get(username=username))
    return client


def listed(params: dict | None = None, *, by: str = "agent") -> list[str]:
    response = api_as(by).get("/api/tickets/", params or {})
    assert response.status_code == 200, response.content
    return [ticket["reference"] for ticket in response.json()["results"]]


def dated(field: str, days_ago: dict[str, int]) -> None:
    now = timezone.now()
    for reference, days in days_ago.items():
        Ticket.objects.filter(reference=reference).update(**{field: now - timedelta(days=days)})


# --- views ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("username", "mine"),
    [
        ("agent", ["TCK-1001", "TCK-1004"]),
        ("agent2", ["TCK-1002"]),
        ("supervisor", []),
        ("reviewer", []),
    ],
)
def test_mine_is_the_tickets_assigned_to_the_requester(demo, username, mine):
    assert sorted(listed({"view": "mine"}, by=username)) == mine


def test_the_assignee_me_is_the_requester(demo):
    assert listed({"assignee": "me"}, by="agent2") == ["TCK-1002"]


def test_unassigned_is_the_tickets_nobody_works(demo):
    assert listed({"view": "unassigned"}) == ["TCK-1003"]


def test_escalated_is_the_supervisors_queue(demo):
    intern = get_user_model().objects.get(username="intern")
    services.ticket_escalate(
        ticket=Ticket.objects.get(reference="TCK-1004"), note="Second fault.", actor=intern
    )

    assert listed({"view": "escalated"}, by="supervisor") == ["TCK-1004"]


@pytest.mark.parametrize("params", [{}, {"view": "all"}, {"view": ""}])
def test_all_is_every_ticket(demo, params):
    assert sorted(listed(params)) == ALL


# --- sorting --------------------------------------------------------------------------------


def test_the_list_is_newest_update_first_by_default_and_newest_creation_on_request(demo):
    dated("created_at", {"TCK-1001": 4, "TCK-1002": 3, "TCK-1003": 2, "TCK-1004": 1})
    dated("updated_at", {"TCK-1001": 0, "TCK-1002": 3, "TCK-1003": 1, "TCK-1004": 2})

    by_update = ["TCK-1001", "TCK-1003", "TCK-1004", "TCK-1002"]
    assert listed() == by_update
    assert listed({"sort": "updated"}) == by_update
    assert listed({"sort": "created"}) == ["TCK-1004", "TCK-1003", "TCK-1002", "TCK-1001"]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("view", "everything"),
        ("view", "Mine"),
        ("sort", "oldest"),
        ("sort", "-created"),
        ("status", "done"),
        ("status", "OPEN"),
    ],
)
def test_an_unknown_view_sort_or_status_is_a_400_naming_it(demo, field, value):
    response = api_as("agent").get("/api/tickets/", {field: value})

    assert response.status_code == 400
    assert list(response.json()["extra"]["fields"]) == [field]


# --- search ---------------------------------------------------------------------------------


def test_it_finds_a_ticket_by_a_word_only_in_a_message(demo):
    # "pieces" is in TCK-1001's first message, not in its subject or anywhere else.
    assert listed({"q": "pieces"}) == ["TCK-1001"]


def test_it_finds_a_ticket_by_a_word_in_a_later_message(demo):
    TicketMessageFactory(ticket=Ticket.objects.get(reference="TCK-1003"), body="Courier: DHL")

    assert listed({"q": "courier"}) == ["TCK-1003"]


def test_a_search_that_matches_nothing_is_an_empty_page(demo):
    response = api_as("agent").get("/api/tickets/", {"q": "zebra"})

    assert response.json() == {"count": 0, "next": None, "previous": None, "results": []}


@pytest.mark.services
@pytest.mark.parametrize(
    ("query", "found"),
    [
        ("pieces", ["TCK-1001"]),
        # Stemmed: the message says "crushed", "charging".
        ("crushing", ["TCK-1001"]),
        ("charged", ["TCK-1004"]),
        # Web-search syntax: either word.
        ("crushed or shade", ["TCK-1001", "TCK-1003"]),
    ],
)
def test_postgresql_searches_messages_by_their_words_stemmed(demo, query, found):
    require_postgres()

    assert sorted(listed({"q": query})) == found


# --- pagination and queries -----------------------------------------------------------------


def test_the_list_is_paginated(demo):
    TicketFactory.create_batch(47)

    first = api_as("agent").get("/api/tickets/").json()
    second = api_as("agent").get("/api/tickets/", {"page": 2}).json()

    assert set(first) == {"count", "next", "previous", "results"}
    assert (first["count"], len(first["results"]), first["previous"]) == (51, 50, None)
    assert first["next"] == "http://testserver/api/tickets/?page=2"
    assert (second["count"], len(second["results"]), second["next"]) == (51, 1, None)
    assert second["previous"] == "http://testserver/api/tickets/"
    references = [t["reference"] for t in first["results"] + second["results"]]
    assert len(set(references)) == 51


def worked_tickets(count: int) -> None:
    """Tickets like real ones: an assignee (the agent asking, so "mine" grows too), messages
    by a user, events by an actor."""
    agent = get_user_model().objects.get(username="agent")
    for ticket in TicketFactory.create_batch(count, assignee=agent):
        TicketMessageFactory(ticket=ticket)
        TicketMessageFactory(ticket=ticket, author_kind="agent", author=agent, body="On it.")
        TicketEvent.objects.create(ticket=ticket, type="assigned", actor=agent, data={})


def queries_for_the_list(params: dict) -> int:
    client = api_as("agent")  # a fresh user: its roles are looked up again
    with CaptureQueriesContext(connection) as queries:
        response = client.get("/api/tickets/", params)
    assert response.status_code == 200
    return len(queries)


@pytest.mark.parametrize("params", [{}, {"q": "problem"}, {"view": "mine"}])
def test_the_list_takes_as_many_queries_for_30_tickets_as_for_4(demo, params):
    worked_tickets(4)
    few = queries_for_the_list(params)

    worked_tickets(26)
    many = queries_for_the_list(params)

    assert many == few
    assert few <= 10  # the messages' attachments and the rated surveys are one prefetch each
