"""Bulk changes racing each other and single-ticket changes, on PostgreSQL with real threads:
each ticket changes in its own transaction under the same row lock as its own page's change,
so nothing deadlocks and each ticket's history is one unbroken chain."""

import pytest
from rest_framework.test import APIClient

from tests.factories import TicketFactory
from tests.services import run_in_threads
from tickets.models import Ticket, TicketEvent

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]


def api_as(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def assert_one_chain(ticket: Ticket, type: str, field: str, start) -> None:
    """Each change starts where the one before it ended, and the last is where it is now."""
    events = list(ticket.events.filter(type=type).order_by("id"))
    at = start
    for event in events:
        assert event.data["from"] == at
        at = event.data["to"]
    assert at == field


def test_two_bulk_assigns_in_opposite_orders_and_single_assigns_all_finish(
    postgres, agent_user, agent2_user
):
    tickets = [TicketFactory() for _ in range(6)]
    forward = [t.reference for t in tickets]
    work = [
        lambda: api_as(agent_user).post(
            "/api/tickets/bulk/",
            {"tickets": forward, "assign": agent_user.username, "priority": "high"},
            format="json",
        ),
        lambda: api_as(agent2_user).post(
            "/api/tickets/bulk/",
            {"tickets": forward[::-1], "assign": agent2_user.username, "priority": "urgent"},
            format="json",
        ),
        lambda: api_as(agent_user).post(
            f"/api/tickets/{forward[0]}/assign/", {"assignee": agent2_user.username}, format="json"
        ),
        lambda: api_as(agent2_user).post(
            f"/api/tickets/{forward[-1]}/assign/", {"assignee": agent_user.username}, format="json"
        ),
    ]

    responses = run_in_threads(len(work), lambda i: work[i]())

    assert [getattr(r, "status_code", r) for r in responses] == [200, 200, 200, 200]
    for response in responses[:2]:
        assert all(result["ok"] for result in response.json()["results"])
    for ticket in Ticket.objects.filter(pk__in=[t.pk for t in tickets]).select_related("assignee"):
        assert ticket.assignee is not None
        assert_one_chain(ticket, TicketEvent.Type.ASSIGNED, ticket.assignee.username, None)
        assert_one_chain(ticket, TicketEvent.Type.PRIORITY_CHANGED, ticket.priority, "normal")
