"""DESIGN §15 priority and SLA: due times from the priority's policy, the first public reply as
the first response, pending and solved stopping the resolution clock, a priority change
recomputing, the list's sort and filters, the breach sweep (once, even racing), /metrics.
Time is a test clock (django.utils.timezone.now), never a sleep."""

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from config.errors import Forbidden
from tests.factories import CustomerFactory
from tests.services import require_postgres, run_in_threads
from tickets import services, sla
from tickets.models import SlaPolicy, Ticket, TicketEvent
from tickets.tasks import record_sla_breaches

START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
H = timedelta(hours=1)


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def advance(self, delta: timedelta) -> None:
        self.now += delta


@pytest.fixture
def clock(monkeypatch) -> Clock:
    """Every timezone.now() (services, auto_now fields) reads this clock."""
    clock = Clock(START)
    monkeypatch.setattr(timezone, "now", lambda: clock.now)
    return clock


def open_ticket(priority: str = "normal") -> Ticket:
    return services.ticket_open(
        customer=CustomerFactory(),
        subject="Cracked mug",
        body="It arrived broken.",
        priority=priority,
    )


def fresh(ticket: Ticket) -> Ticket:
    return Ticket.objects.get(pk=ticket.pk)


def breaches(ticket: Ticket) -> list[str]:
    events = TicketEvent.objects.filter(ticket=ticket, type="sla.breached").order_by("id")
    return [event.data["target"] for event in events]


def test_the_policies_are_seeded_for_every_priority(db):
    seeded = {
        p.priority: (p.first_response_hours, p.resolution_hours) for p in SlaPolicy.objects.all()
    }
    assert seeded == {"urgent": (1, 8), "high": (4, 24), "normal": (8, 48), "low": (24, 120)}


def test_a_new_ticket_is_normal_and_due_by_its_policy(db, clock):
    ticket = fresh(open_ticket())

    assert ticket.priority == "normal"
    assert ticket.first_response_due_at == START + 8 * H
    assert ticket.resolution_due_at == START + 48 * H
    assert ticket.first_responded_at is None


def test_an_edited_policy_applies_to_tickets_opened_after_it(db, clock):
    SlaPolicy.objects.filter(priority="urgent").update(first_response_hours=2, resolution_hours=6)

    ticket = fresh(open_ticket("urgent"))

    assert (ticket.first_response_due_at, ticket.resolution_due_at) == (
        START + 2 * H,
        START + 6 * H,
    )


def test_the_first_public_reply_is_the_first_response_and_a_note_is_not(db, clock, agent_user):
    ticket = open_ticket()
    clock.advance(H)
    services.ticket_write(ticket=ticket, author=agent_user, body="Looking", visibility="internal")
    assert fresh(ticket).first_responded_at is None

    clock.advance(H)
    services.ticket_write(ticket=ticket, author=agent_user, body="Sorry!", visibility="public")
    clock.advance(H)
    services.ticket_write(ticket=ticket, author=agent_user, body="Again", visibility="public")

    assert fresh(ticket).first_responded_at == START + 2 * H


def test_pending_pauses_the_resolution_clock_and_reopening_resumes_it(db, clock, agent_user):
    ticket = open_ticket()  # resolution due START + 48 h
    clock.advance(2 * H)
    services.ticket_set_status(ticket=ticket, to_status="pending", actor=agent_user)
    assert fresh(ticket).sla_paused_at == START + 2 * H

    clock.advance(30 * H)  # waiting on the customer: does not count
    services.ticket_set_status(ticket=fresh(ticket), to_status="open", actor=agent_user)

    ticket = fresh(ticket)
    assert ticket.resolution_due_at == START + 78 * H
    assert (ticket.sla_paused_at, ticket.sla_paused_seconds) == (None, 30 * 3600)


def test_while_pending_the_resolution_target_cannot_breach(db, clock, agent_user):
    ticket = open_ticket()
    services.ticket_write(ticket=ticket, author=agent_user, body="Photo?", visibility="public")
    services.ticket_set_status(ticket=ticket, to_status="pending", actor=agent_user)

    clock.advance(100 * H)

    assert sla.sla_state(fresh(ticket)) is None
    assert sla.record_breaches() == 0
    assert breaches(ticket) == []


def test_a_customer_reply_reopening_a_solved_ticket_resumes_the_clock(db, clock, agent_user):
    ticket = open_ticket()
    clock.advance(H)
    services.ticket_set_status(ticket=ticket, to_status="solved", actor=agent_user)
    clock.advance(10 * H)

    services.ticket_set_status(ticket=fresh(ticket), to_status="open", reason="customer replied")

    assert fresh(ticket).resolution_due_at == START + 58 * H


def test_a_priority_change_recomputes_both_targets_from_the_opening(db, clock, agent_user):
    ticket = open_ticket()
    clock.advance(3 * H)

    services.ticket_set_priority(ticket=ticket, priority="urgent", actor=agent_user)

    ticket = fresh(ticket)
    assert (ticket.first_response_due_at, ticket.resolution_due_at) == (START + H, START + 8 * H)
    assert sla.sla_state(ticket) == "breached"
    event = TicketEvent.objects.get(ticket=ticket, type="priority_changed")
    assert event.data == {"from": "normal", "to": "urgent"}


def test_a_priority_change_keeps_the_pauses(db, clock, agent_user):
    ticket = open_ticket()
    services.ticket_set_status(ticket=ticket, to_status="pending", actor=agent_user)
    clock.advance(5 * H)
    services.ticket_set_status(ticket=fresh(ticket), to_status="open", actor=agent_user)

    services.ticket_set_priority(ticket=fresh(ticket), priority="high", actor=agent_user)

    assert fresh(ticket).resolution_due_at == START + 29 * H


def test_an_intern_cannot_change_the_priority(db, clock, intern):
    ticket = open_ticket()
    with pytest.raises(Forbidden):
        services.ticket_set_priority(ticket=ticket, priority="urgent", actor=intern)
    assert fresh(ticket).priority == "normal"
    assert not TicketEvent.objects.filter(type="priority_changed").exists()


def test_the_sweep_records_each_target_once(db, clock):
    ticket = open_ticket("urgent")  # first response 1 h, resolution 8 h
    clock.advance(H + timedelta(seconds=1))
    assert sla.record_breaches() == 1
    assert sla.record_breaches() == 0
    assert breaches(ticket) == ["first_response"]

    clock.advance(7 * H)
    assert record_sla_breaches.apply().get() == 1
    assert record_sla_breaches.apply().get() == 0
    assert breaches(ticket) == ["first_response", "resolution"]
    event = TicketEvent.objects.filter(ticket=ticket, type="sla.breached").first()
    assert event is not None
    assert event.data == {
        "target": "first_response",
        "priority": "urgent",
        "due_at": (START + H).isoformat(),
    }


def test_a_met_first_response_is_never_breached(db, clock, agent_user):
    ticket = open_ticket("urgent")
    services.ticket_write(ticket=ticket, author=agent_user, body="On it", visibility="public")
    clock.advance(2 * H)

    assert sla.record_breaches() == 0
    assert sla.sla_state(fresh(ticket)) == "on_track"


def test_the_database_refuses_a_second_breach_event_for_a_target(db, clock):
    from django.db import IntegrityError

    ticket = open_ticket()
    TicketEvent.objects.create(ticket=ticket, type="sla.breached", data={"target": "resolution"})
    with pytest.raises(IntegrityError):
        TicketEvent.objects.create(
            ticket=ticket, type="sla.breached", data={"target": "resolution"}
        )


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_two_sweeps_racing_record_one_breach_per_target():
    require_postgres()
    long_ago = timezone.now() - 30 * 24 * H
    tickets = [open_ticket("urgent") for _ in range(5)]
    Ticket.objects.filter(pk__in=[t.pk for t in tickets]).update(
        first_response_due_at=long_ago, resolution_due_at=long_ago
    )

    outcomes = run_in_threads(2, lambda _: sla.record_breaches())

    assert sum(outcomes) == 10, outcomes
    for ticket in tickets:
        assert sorted(breaches(ticket)) == ["first_response", "resolution"]


# --- the list ---------------------------------------------------------------------------------


def api_as(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def references(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [row["reference"] for row in response.json()["results"]]


def test_the_list_sorts_by_due_and_filters_by_priority_and_sla(db, clock, agent_user):
    low = open_ticket("low")  # due START + 24 h
    urgent = open_ticket("urgent")  # due START + 1 h
    normal = open_ticket("normal")  # due START + 8 h
    answered = open_ticket("high")  # answered: resolution due START + 24 h
    services.ticket_write(ticket=answered, author=agent_user, body="Hi", visibility="public")
    clock.advance(timedelta(minutes=30))
    client = api_as(agent_user)

    by_due = references(client.get("/api/tickets/?sort=due"))
    assert by_due == [urgent.reference, normal.reference, low.reference, answered.reference]
    assert references(client.get("/api/tickets/?priority=low")) == [low.reference]
    assert references(client.get("/api/tickets/?sla=due_soon")) == [urgent.reference]
    assert references(client.get("/api/tickets/?sla=breached")) == []

    clock.advance(H)
    assert references(client.get("/api/tickets/?sla=breached")) == [urgent.reference]
    row = client.get(f"/api/tickets/{urgent.reference}/").json()
    assert (row["priority"], row["sla"]) == ("urgent", "breached")
    assert row["first_response_due_at"] == "2026-03-02T10:00:00Z"


@pytest.mark.parametrize("param", ["priority=extreme", "sla=late", "sort=soon"])
def test_an_unknown_filter_value_is_a_400(db, agent_user, param):
    response = api_as(agent_user).get(f"/api/tickets/?{param}")
    assert response.status_code == 400


def test_the_priority_api_sets_it_and_refuses_interns_and_nonsense(db, clock, agent_user, intern):
    ticket = open_ticket()
    url = f"/api/tickets/{ticket.reference}/priority/"

    assert api_as(intern).post(url, {"priority": "urgent"}, format="json").status_code == 403
    assert api_as(agent_user).post(url, {"priority": "now!"}, format="json").status_code == 400
    assert api_as(agent_user).post(url, {"priority": 3}, format="json").status_code == 400
    assert fresh(ticket).priority == "normal"

    response = api_as(agent_user).post(url, {"priority": "high"}, format="json")
    assert response.status_code == 200
    assert response.json()["priority"] == "high"


def test_metrics_count_breached_tickets_by_priority(db, clock, settings):
    settings.METRICS_TOKEN = "metrics-token-for-the-sla-test"
    open_ticket("urgent")
    open_ticket("urgent")
    open_ticket("low")
    clock.advance(2 * H)

    body = (
        APIClient()
        .get("/metrics", HTTP_AUTHORIZATION="Bearer metrics-token-for-the-sla-test")
        .content.decode()
    )

    assert 'desk_tickets_sla_breached{priority="urgent"} 2.0' in body
    assert 'desk_tickets_sla_breached{priority="low"} 0.0' in body


def test_the_list_page_shows_the_sla_badges(db, clock, client, agent_user):
    urgent = open_ticket("urgent")
    clock.advance(timedelta(minutes=30))
    client.force_login(agent_user)

    page = client.get("/tickets/").content.decode()
    assert 'data-sla="due_soon"' in page

    clock.advance(H)
    page = client.get("/tickets/").content.decode()
    assert 'data-sla="breached"' in page
    assert urgent.reference in page


def test_the_list_s_sql_and_the_badge_agree_on_every_kind_of_ticket(db, clock, agent_user):
    tickets = [open_ticket(priority) for priority in ("urgent", "high", "normal", "low")]
    answered, pending, solved = open_ticket("urgent"), open_ticket("urgent"), open_ticket("low")
    services.ticket_write(ticket=answered, author=agent_user, body="Hi", visibility="public")
    services.ticket_set_status(ticket=pending, to_status="pending", actor=agent_user)
    services.ticket_set_status(ticket=solved, to_status="solved", actor=agent_user)
    everyone = [*tickets, answered, pending, solved]

    for hours in (0.5, 3, 7.5, 30, 200):
        now = START + timedelta(hours=hours)
        for state in sla.SLA_STATES:
            in_sql = set(
                sla.filter_state(Ticket.objects.all(), state, now).values_list("pk", flat=True)
            )
            by_badge = {t.pk for t in everyone if sla.sla_state(fresh(t), now) == state}
            assert in_sql == by_badge, (hours, state)


# --- when a breach is recorded: at the due time, never an hour early -------------------------


def test_the_sweep_records_no_breach_before_the_due_time_and_one_a_second_after(db, clock):
    # Given an urgent ticket (first response due in 1 h), and a minute later its due time 59
    # minutes away
    ticket = open_ticket("urgent")
    due = fresh(ticket).first_response_due_at
    clock.advance(timedelta(minutes=1))
    assert due - clock.now == timedelta(minutes=59)

    # When the sweep runs then, a second before the due time, and a second after it
    early = record_sla_breaches.apply().get()
    clock.now = due - timedelta(seconds=1)
    just_before = record_sla_breaches.apply().get()
    state_before = sla.sla_state(fresh(ticket))
    clock.now = due + timedelta(seconds=1)
    after = record_sla_breaches.apply().get()

    # Then only the last one records it, stamped with the sweep's time
    assert (early, just_before, after) == (0, 0, 1)
    assert state_before == "due_soon"
    assert breaches(ticket) == ["first_response"]
    assert fresh(ticket).first_response_breached_at == due + timedelta(seconds=1)


@pytest.mark.parametrize(
    "zone, opened",
    [
        # Berlin's clocks go from 02:00 to 03:00 on 29 March 2026 (01:00 UTC) ...
        ("Europe/Berlin", datetime(2026, 3, 28, 23, 30, tzinfo=UTC)),
        # ... and New York's from 02:00 back to 01:00 on 1 November 2026 (06:00 UTC).
        ("America/New_York", datetime(2026, 11, 1, 3, 30, tzinfo=UTC)),
    ],
)
def test_a_due_time_across_a_clock_change_is_counted_in_real_hours(
    db, clock, settings, zone, opened
):
    # Given a desk in a time zone whose clocks change within a ticket's first 8 hours
    settings.TIME_ZONE = zone
    clock.now = opened
    ticket = open_ticket()  # normal: first response due in 8 h

    # When the sweep runs 59 minutes before 8 real hours, and a second after them
    due = fresh(ticket).first_response_due_at
    clock.now = opened + 8 * H - timedelta(minutes=59)
    early = sla.record_breaches()
    clock.now = opened + 8 * H + timedelta(seconds=1)
    late = sla.record_breaches()

    # Then the due time is 8 real hours away (not 7 or 9 on the wall clock), and the breach
    # is recorded only after it
    assert due == opened + 8 * H
    assert (early, late) == (0, 1)
