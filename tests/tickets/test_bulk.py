"""DESIGN §19 bulk: POST /api/tickets/bulk/ changes each ticket through its own services, one
transaction per ticket, and answers a result per ticket: one refused ticket refuses nothing
else. A body that is wrong, or an action the role may not take, changes nothing."""

import pytest
from rest_framework.test import APIClient

from tests.factories import CustomerFactory, TicketFactory, UserFactory
from tickets.models import Tag, Ticket, TicketChange, TicketEvent

pytestmark = pytest.mark.django_db

S = Ticket.Status
E = TicketEvent.Type


def api_as(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def bulk(user, body: dict):
    return api_as(user).post("/api/tickets/bulk/", body, format="json")


def refs(*tickets: Ticket) -> list[str]:
    return [ticket.reference for ticket in tickets]


def event_types(ticket: Ticket) -> list[str]:
    return list(ticket.events.order_by("id").values_list("type", flat=True))


def nothing_changed(*tickets: Ticket) -> None:
    for ticket in tickets:
        fresh = Ticket.objects.get(pk=ticket.pk)
        assert (fresh.status, fresh.assignee_id, fresh.priority) == (
            ticket.status,
            ticket.assignee_id,
            ticket.priority,
        )
        assert list(fresh.tags.all()) == []
        assert fresh.events.count() == 0


@pytest.fixture
def tickets(db) -> list[Ticket]:
    return [TicketFactory() for _ in range(3)]


# --- a result per ticket -------------------------------------------------------------------


def test_it_changes_every_ticket_and_leaves_each_its_events(agent_user, agent2_user, tickets):
    response = bulk(
        agent_user,
        {
            "tickets": refs(*tickets[:2]),
            "assign": agent2_user.username,
            "priority": "urgent",
            "add_tags": ["damaged"],
        },
    )

    assert response.status_code == 200
    assert response.json() == {
        "results": [{"ticket": t.reference, "ok": True} for t in tickets[:2]]
    }
    for ticket in tickets[:2]:
        fresh = Ticket.objects.get(pk=ticket.pk)
        assert fresh.assignee == agent2_user
        assert fresh.priority == "urgent"
        assert [tag.name for tag in fresh.tags.all()] == ["damaged"]
        assert event_types(fresh) == [E.ASSIGNED, E.PRIORITY_CHANGED, E.TAGS_CHANGED]
        assert fresh.events.filter(actor=agent_user).count() == 3
        assignment = TicketChange.objects.get(ticket=fresh, type=TicketChange.Type.TICKET_ASSIGNED)
        assert assignment.data["assignee"] == agent2_user.username
    nothing_changed(tickets[2])


def test_a_refused_ticket_is_named_and_the_others_are_changed(agent_user):
    open_one, closed, also_open = (
        TicketFactory(),
        TicketFactory(status=S.CLOSED),
        TicketFactory(),
    )

    response = bulk(
        agent_user,
        {
            "tickets": [*refs(open_one, closed), "TCK-999999", also_open.reference],
            "status": "pending",
        },
    )

    assert response.status_code == 200
    results = response.json()["results"]
    assert [r["ticket"] for r in results] == [
        open_one.reference,
        closed.reference,
        "TCK-999999",
        also_open.reference,
    ]
    assert [r["ok"] for r in results] == [True, False, False, True]
    assert results[1]["code"] == "illegal_transition"
    assert results[1]["message"] == f"{closed.reference} cannot go from closed to pending."
    assert results[2]["code"] == "not_found"
    assert Ticket.objects.get(pk=open_one.pk).status == S.PENDING
    assert Ticket.objects.get(pk=also_open.pk).status == S.PENDING
    assert Ticket.objects.get(pk=closed.pk).status == S.CLOSED
    assert event_types(closed) == []


def test_a_refused_ticket_keeps_all_of_its_changes_undone(agent_user, agent2_user):
    """Assign and status together: the closed ticket's assignment, made before its status was
    refused, is rolled back with it; the open one gets both."""
    open_one, closed = TicketFactory(), TicketFactory(status=S.CLOSED)

    response = bulk(
        agent_user,
        {"tickets": refs(open_one, closed), "assign": agent2_user.username, "status": "solved"},
    )

    assert [r["ok"] for r in response.json()["results"]] == [True, False]
    fresh = Ticket.objects.get(pk=open_one.pk)
    assert (fresh.assignee, fresh.status) == (agent2_user, S.SOLVED)
    assert event_types(fresh) == [E.ASSIGNED, E.STATUS_CHANGED]
    nothing_changed(closed)
    assert not TicketChange.objects.filter(ticket=closed).exists()


def test_a_status_a_ticket_already_has_counts_as_done_without_an_event(agent_user):
    pending, open_one = TicketFactory(status=S.PENDING), TicketFactory()

    response = bulk(agent_user, {"tickets": refs(pending, open_one), "status": "pending"})

    assert [r["ok"] for r in response.json()["results"]] == [True, True]
    assert event_types(pending) == []
    assert event_types(open_one) == [E.STATUS_CHANGED]


def test_a_ticket_named_twice_is_changed_once(agent_user, tickets):
    reference = tickets[0].reference

    response = bulk(agent_user, {"tickets": [reference, reference.lower()], "add_tags": ["vip"]})

    assert response.json() == {"results": [{"ticket": reference, "ok": True}]}
    assert event_types(tickets[0]) == [E.TAGS_CHANGED]


def test_null_unassigns(agent_user, agent2_user):
    ticket = TicketFactory(assignee=agent2_user)

    response = bulk(agent_user, {"tickets": [ticket.reference], "assign": None})

    assert response.json()["results"] == [{"ticket": ticket.reference, "ok": True}]
    assert Ticket.objects.get(pk=ticket.pk).assignee is None
    assert ticket.events.get().data == {"from": agent2_user.username, "to": None}


# --- merge ---------------------------------------------------------------------------------


def test_it_merges_each_selected_ticket_into_the_chosen_one(agent_user):
    customer = CustomerFactory()
    target, first, second = (TicketFactory(customer=customer) for _ in range(3))
    stranger = TicketFactory(customer=CustomerFactory())

    response = bulk(
        agent_user,
        {"tickets": refs(first, target, second, stranger), "merge_into": target.reference},
    )

    assert response.status_code == 200
    results = response.json()["results"]
    assert results[:3] == [
        {"ticket": first.reference, "ok": True},
        {"ticket": target.reference, "ok": True, "merge_target": True},
        {"ticket": second.reference, "ok": True},
    ]
    assert (results[3]["ok"], results[3]["code"]) == (False, "merge_customers_differ")
    for source in (first, second):
        fresh = Ticket.objects.get(pk=source.pk)
        assert (fresh.merged_into, fresh.status) == (target, S.CLOSED)
        assert E.MERGED_INTO in event_types(fresh)
    assert event_types(target).count(E.MERGED_FROM) == 2
    assert Ticket.objects.get(pk=stranger.pk).merged_into is None
    assert event_types(stranger) == []


# --- who may -------------------------------------------------------------------------------


def test_an_intern_adds_tags_in_bulk(intern, tickets):
    response = bulk(intern, {"tickets": refs(*tickets), "add_tags": ["Refund wait"]})

    assert response.status_code == 200
    assert all(r["ok"] for r in response.json()["results"])
    assert Tag.objects.get().tickets.count() == 3


@pytest.mark.parametrize(
    "action",
    [
        {"assign": "nobody-at-all"},
        {"status": "pending"},
        {"priority": "high"},
        {"merge_into": "TCK-1"},
        {"add_tags": ["x"], "priority": "low"},
    ],
)
def test_an_intern_may_do_nothing_else_in_bulk(intern, tickets, action):
    response = bulk(intern, {"tickets": refs(*tickets), **action})

    # 403 before the body's values are looked at: an assignee's 400 would say who works tickets.
    assert response.status_code == 403
    assert response.json()["code"] == "permission_denied"
    nothing_changed(*tickets)


@pytest.mark.parametrize("who", ["reviewer", "outsider"])
def test_reviewers_and_outsiders_change_nothing(request, who, tickets):
    response = bulk(request.getfixturevalue(who), {"tickets": refs(*tickets), "add_tags": ["x"]})

    assert response.status_code == 403
    nothing_changed(*tickets)


def test_it_needs_a_login(tickets):
    response = APIClient().post(
        "/api/tickets/bulk/", {"tickets": refs(*tickets), "add_tags": ["x"]}, format="json"
    )

    assert response.status_code in (401, 403)
    nothing_changed(*tickets)


# --- a wrong body changes nothing ------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"tickets": [], "status": "open"}, "tickets"),
        ({"tickets": [f"TCK-{n}" for n in range(101)], "status": "open"}, "tickets"),
        ({"tickets": "TCK-1", "status": "open"}, "tickets"),
        ({"status": "open"}, "tickets"),
        ({"tickets": ["@"], "status": "reopened"}, "status"),
        ({"tickets": ["@"], "priority": "asap"}, "priority"),
        ({"tickets": ["@"], "assign": "nobody-at-all"}, "assign"),
        ({"tickets": ["@"], "add_tags": ["!!"]}, "add_tags"),
        ({"tickets": ["@"], "add_tags": []}, "add_tags"),
        ({"tickets": ["@"], "merge_into": "TCK-999999"}, "merge_into"),
        ({"tickets": ["@"], "merge_into": "@", "status": "open"}, "merge_into"),
    ],
)
def test_a_wrong_body_is_refused_naming_the_field(agent_user, tickets, body, field):
    body = {**body}
    if body.get("tickets") == ["@"]:
        body["tickets"] = refs(*tickets)
    if body.get("merge_into") == "@":
        body["merge_into"] = tickets[0].reference

    response = bulk(agent_user, body)

    assert response.status_code == 400
    assert field in response.json()["extra"]["fields"]
    nothing_changed(*tickets)


def test_a_body_without_an_action_says_what_it_could_do(agent_user, tickets):
    response = bulk(agent_user, {"tickets": refs(*tickets)})

    assert response.status_code == 400
    assert response.json()["message"] == (
        "Say what to do: one of assign, status, priority, add_tags, merge_into."
    )
    nothing_changed(*tickets)


def test_an_assignee_must_work_tickets(agent_user, tickets):
    reviewer = UserFactory(username="rev", role="reviewer")

    response = bulk(agent_user, {"tickets": refs(*tickets), "assign": reviewer.username})

    assert response.status_code == 400
    assert response.json()["code"] == "invalid_assignee"
    nothing_changed(*tickets)


def test_it_is_in_the_schema(agent_user):
    schema = api_as(agent_user).get("/api/schema/?format=json").json()

    operation = schema["paths"]["/api/tickets/bulk/"]["post"]
    assert set(operation["responses"]) >= {"200", "400", "403"}
    body = schema["components"]["schemas"]["BulkWriteRequest"]["properties"]
    assert set(body) == {"tickets", "assign", "status", "priority", "add_tags", "merge_into"}
