"""DESIGN §19 business hours on the SLA clocks (DESIGN §15): with a calendar in force the due
times count its open hours; pending and solved still stop the resolution clock; the sweep, the
list's sort and filters and the badge agree; without one nothing changes. Time is a test clock
(django.utils.timezone.now), never a sleep."""

import importlib
import logging
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.db import IntegrityError
from django.utils import timezone
from rest_framework.test import APIClient

from config.errors import Conflict
from tests.factories import CustomerFactory
from tests.services import require_postgres, run_in_threads
from tickets import calendars, services, sla
from tickets.business_hours import WEEKDAYS
from tickets.calendars import BusinessCalendar
from tickets.models import Ticket, TicketEvent
from tickets.tasks import record_sla_breaches

BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")
H = timedelta(hours=1)
OFFICE = {day: ["09:00-17:00"] for day in WEEKDAYS[:5]}
EVERY_DAY = {day: ["09:00-17:00"] for day in WEEKDAYS}


def berlin(*args: int) -> datetime:
    return datetime(*args, tzinfo=BERLIN)  # type: ignore[misc]


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now


@pytest.fixture
def clock(monkeypatch) -> Clock:
    """Every timezone.now() (services, auto_now fields, the sweep) reads this clock."""
    clock = Clock(berlin(2026, 3, 27, 16))  # a Friday
    monkeypatch.setattr(timezone, "now", lambda: clock.now)
    return clock


def in_force(zone: str = "Europe/Berlin", hours: dict | None = None, holidays=()):
    return BusinessCalendar.objects.create(
        name=f"Office {zone}",
        time_zone=zone,
        weekly_hours=OFFICE if hours is None else hours,
        holidays=[{"date": day, "name": "Holiday"} for day in holidays],
        active=True,
    )


@pytest.fixture
def office(db) -> BusinessCalendar:
    """Monday to Friday, 09:00 to 17:00 in Berlin."""
    return in_force()


def open_ticket(priority: str = "normal") -> Ticket:
    return services.ticket_open(
        customer=CustomerFactory(),
        subject="Cracked mug",
        body="It arrived broken.",
        priority=priority,
    )


def fresh(ticket: Ticket) -> Ticket:
    return Ticket.objects.get(pk=ticket.pk)


def dues(ticket: Ticket) -> tuple[datetime | None, datetime | None]:
    ticket = fresh(ticket)
    return ticket.first_response_due_at, ticket.resolution_due_at


def breaches(ticket: Ticket) -> list[str]:
    events = TicketEvent.objects.filter(ticket=ticket, type="sla.breached").order_by("id")
    return [event.data["target"] for event in events]


# --- due times --------------------------------------------------------------------------------


def test_targets_count_business_hours_over_the_weekend(office, clock):
    # Given Friday 16:00: one business hour left before the weekend
    urgent, normal = open_ticket("urgent"), open_ticket("normal")  # 1 h / 8 h; 8 h / 48 h

    assert dues(urgent) == (berlin(2026, 3, 27, 17), berlin(2026, 3, 30, 16))
    assert dues(normal) == (berlin(2026, 3, 30, 16), berlin(2026, 4, 6, 16))


def test_a_ticket_opened_outside_hours_starts_its_clocks_at_the_next_opening(office, clock):
    clock.now = berlin(2026, 3, 28, 11)  # Saturday

    urgent = open_ticket("urgent")

    assert dues(urgent) == (berlin(2026, 3, 30, 10), berlin(2026, 3, 30, 17))


def test_a_holiday_does_not_count(db, clock):
    in_force(holidays=["2026-12-25"])
    clock.now = berlin(2026, 12, 24, 16, 30)  # Thursday; Friday is Christmas Day

    urgent = open_ticket("urgent")

    assert dues(urgent)[0] == berlin(2026, 12, 28, 9, 30)


@pytest.mark.parametrize(
    ("zone", "opened", "due"),
    [
        # Berlin springs forward in the night to Sunday 29 March 2026 (CET to CEST) ...
        ("Europe/Berlin", berlin(2026, 3, 28, 16), datetime(2026, 3, 29, 14, tzinfo=UTC)),
        # ... New York falls back in the night to Sunday 1 November 2026 (EDT to EST).
        (
            "America/New_York",
            datetime(2026, 10, 31, 16, tzinfo=NEW_YORK),
            datetime(2026, 11, 1, 21, tzinfo=UTC),
        ),
    ],
)
def test_a_target_across_a_clock_change_is_due_at_the_business_hour_and_breached_after_it(
    db, clock, zone, opened, due
):
    # Given a desk open 09:00-17:00 every day, and a normal ticket an hour before Saturday's
    # closing: 1 business hour on Saturday, 7 on Sunday, after the night the clocks change
    in_force(zone, hours=EVERY_DAY)
    clock.now = opened
    ticket = open_ticket()

    # When the sweep runs a second before 16:00 on Sunday and a second after it
    clock.now = due - timedelta(seconds=1)
    early = sla.record_breaches()
    clock.now = due + timedelta(seconds=1)
    late = sla.record_breaches()

    # Then the first response is due at 16:00 Sunday on the local clock, and breached after it
    assert dues(ticket)[0] == due
    assert due.astimezone(ZoneInfo(zone)).hour == 16
    assert (early, late) == (0, 1)


# --- pauses and priority changes -------------------------------------------------------------


def test_a_pause_over_a_weekend_keeps_the_business_time_that_was_left(office, clock, agent_user):
    # Given a normal ticket opened Monday 09:00: resolution due 48 business hours later
    clock.now = berlin(2026, 3, 23, 9)
    ticket = open_ticket()
    assert dues(ticket)[1] == berlin(2026, 3, 30, 17)

    # When it waits on the customer from Friday 15:00 (10 business hours left) until Monday
    # 11:00 (2 business hours on Friday and 2 on Monday passed meanwhile)
    clock.now = berlin(2026, 3, 27, 15)
    services.ticket_set_status(ticket=fresh(ticket), to_status="pending", actor=agent_user)
    clock.now = berlin(2026, 3, 30, 11)
    services.ticket_set_status(ticket=fresh(ticket), to_status="open", actor=agent_user)

    # Then 10 business hours are left: Monday 11:00-17:00 and Tuesday 09:00-13:00
    ticket = fresh(ticket)
    assert ticket.resolution_due_at == berlin(2026, 3, 31, 13)
    assert ticket.sla_paused_business_seconds == 4 * 3600
    assert ticket.sla_paused_seconds == 67 * 3600  # real hours: the clocks sprang forward
    assert ticket.first_response_due_at == berlin(2026, 3, 23, 17)  # never paused


def test_a_solved_ticket_reopened_after_its_due_time_stays_as_late_as_it_was(
    office, clock, agent_user
):
    clock.now = berlin(2026, 3, 27, 9)
    ticket = open_ticket("urgent")  # resolution due Friday 17:00
    clock.now = berlin(2026, 3, 27, 18)  # an hour after it, outside hours
    services.ticket_set_status(ticket=fresh(ticket), to_status="solved", actor=agent_user)
    clock.now = berlin(2026, 3, 30, 10)
    services.ticket_set_status(ticket=fresh(ticket), to_status="open", reason="customer replied")

    # The pause lasted one business hour (Monday 09:00-10:00): the due time moves by it
    assert dues(ticket)[1] == berlin(2026, 3, 30, 10)


def test_a_priority_change_recounts_in_business_hours_and_keeps_the_pauses(
    office, clock, agent_user
):
    clock.now = berlin(2026, 3, 23, 9)
    ticket = open_ticket()
    clock.now = berlin(2026, 3, 27, 15)
    services.ticket_set_status(ticket=fresh(ticket), to_status="pending", actor=agent_user)
    clock.now = berlin(2026, 3, 30, 11)
    services.ticket_set_status(ticket=fresh(ticket), to_status="open", actor=agent_user)

    services.ticket_set_priority(ticket=fresh(ticket), priority="high", actor=agent_user)

    # high: 4 h and 24 h from Monday 23rd 09:00, plus the 4 business hours of pause
    assert dues(ticket) == (berlin(2026, 3, 23, 13), berlin(2026, 3, 26, 13))


# --- the sweep, the list and the badge --------------------------------------------------------


def test_the_sweep_records_a_breach_at_the_business_due_time_and_not_before(office, clock):
    # Given an urgent ticket opened Friday 16:30: its first response is due Monday 09:30
    clock.now = berlin(2026, 3, 27, 16, 30)
    ticket = open_ticket("urgent")

    # When the sweep runs an hour later (late on a 24-hour clock), just before Monday 09:30,
    # and just after
    clock.now = berlin(2026, 3, 27, 17, 31)
    friday = record_sla_breaches.apply().get()
    clock.now = berlin(2026, 3, 30, 9, 29, 59)
    just_before = record_sla_breaches.apply().get()
    state_before = sla.sla_state(fresh(ticket))
    clock.now = berlin(2026, 3, 30, 9, 30, 1)
    after = record_sla_breaches.apply().get()

    # Then only the last one records it, with the business due time
    assert (friday, just_before, after) == (0, 0, 1)
    assert state_before == "due_soon"
    assert breaches(ticket) == ["first_response"]
    event = TicketEvent.objects.get(ticket=ticket, type="sla.breached")
    assert event.data["due_at"] == "2026-03-30T07:30:00+00:00"


def api_as(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def references(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [row["reference"] for row in response.json()["results"]]


def test_the_list_sorts_and_filters_by_the_business_due_times(office, clock, agent_user, client):
    # Given a low ticket opened Thursday 09:00 (first response due after 24 business hours:
    # Monday 17:00; on a 24-hour clock Friday 09:00) and an urgent one opened Friday 16:30
    # (due Monday 09:30; on a 24-hour clock Friday 17:30)
    clock.now = berlin(2026, 3, 26, 9)
    low = open_ticket("low")
    clock.now = berlin(2026, 3, 27, 16, 30)
    urgent = open_ticket("urgent")
    api = api_as(agent_user)
    client.force_login(agent_user)

    # When the desk looks on Saturday, then on Monday at 09:31
    clock.now = berlin(2026, 3, 28, 12)
    by_due = references(api.get("/api/tickets/?sort=due"))
    breached_saturday = references(api.get("/api/tickets/?sla=breached"))
    page_saturday = client.get("/tickets/").content.decode()
    clock.now = berlin(2026, 3, 30, 9, 31)
    breached_monday = references(api.get("/api/tickets/?sla=breached"))
    swept = sla.record_breaches()
    page_monday = client.get("/tickets/").content.decode()
    row = api.get(f"/api/tickets/{urgent.reference}/").json()

    # Then the urgent one comes first, nothing is late over the weekend, and on Monday the
    # urgent one is late in the filter, the sweep, the badge and the ticket's answer alike
    assert by_due == [urgent.reference, low.reference]
    assert breached_saturday == []
    assert 'data-sla="breached"' not in page_saturday
    assert breached_monday == [urgent.reference]
    assert (swept, breaches(urgent), breaches(low)) == (1, ["first_response"], [])
    assert page_monday.count('data-sla="breached"') == 1
    assert (row["sla"], row["first_response_due_at"]) == ("breached", "2026-03-30T07:30:00Z")


def test_the_sweep_the_filter_and_the_badge_agree_hour_by_hour(office, clock, agent_user):
    clock.now = berlin(2026, 3, 26, 9)
    low = open_ticket("low")
    clock.now = berlin(2026, 3, 27, 16, 30)
    urgent, high = open_ticket("urgent"), open_ticket("high")
    pending = open_ticket("normal")
    services.ticket_set_status(ticket=pending, to_status="pending", actor=agent_user)
    answered = open_ticket("urgent")
    services.ticket_write(ticket=answered, author=agent_user, body="On it", visibility="public")
    everyone = [low, urgent, high, pending, answered]

    moment = berlin(2026, 3, 27, 16, 45)
    while moment < berlin(2026, 4, 3, 18):
        sla.record_breaches(now=moment)
        for state in sla.SLA_STATES:
            in_sql = set(
                sla.filter_state(Ticket.objects.all(), state, moment).values_list("pk", flat=True)
            )
            by_badge = {t.pk for t in everyone if sla.sla_state(fresh(t), moment) == state}
            assert in_sql == by_badge, (moment, state)
        swept = set(
            TicketEvent.objects.filter(type="sla.breached").values_list("ticket_id", flat=True)
        )
        assert swept == in_sql_breached(moment), moment
        moment += timedelta(minutes=47)


def in_sql_breached(moment: datetime) -> set[int]:
    breached = sla.filter_state(Ticket.objects.all(), "breached", moment)
    return set(breached.values_list("pk", flat=True))


# --- which calendar ----------------------------------------------------------------------------


def test_with_no_calendar_in_force_every_hour_counts(db, clock):
    BusinessCalendar.objects.create(
        name="Shelved", time_zone="Europe/Berlin", weekly_hours=OFFICE, active=False
    )

    ticket = open_ticket("urgent")

    assert dues(ticket) == (clock.now + H, clock.now + 8 * H)


def test_a_new_calendar_moves_no_due_time_but_counts_for_new_tickets(db, clock, supervisor):
    before = open_ticket("urgent")

    calendars.calendar_set(
        actor=supervisor,
        name="Office",
        time_zone="Europe/Berlin",
        weekly_hours=OFFICE,
        holidays=[],
    )
    after = open_ticket("urgent")

    assert dues(before) == (clock.now + H, clock.now + 8 * H)
    assert dues(after) == (berlin(2026, 3, 27, 17), berlin(2026, 3, 30, 16))


def test_a_stored_calendar_that_cannot_be_read_leaves_the_clocks_counting_every_hour(
    db, clock, caplog
):
    BusinessCalendar.objects.create(
        name="Broken", time_zone="Nowhere/Else", weekly_hours=OFFICE, active=True
    )

    with caplog.at_level(logging.ERROR, logger="tickets.calendars"):
        ticket = open_ticket("urgent")

    assert dues(ticket) == (clock.now + H, clock.now + 8 * H)
    assert "cannot be read" in caplog.text


def test_the_database_keeps_one_calendar_in_force(office):
    with pytest.raises(IntegrityError):
        BusinessCalendar.objects.create(
            name="Second", time_zone="UTC", weekly_hours=OFFICE, active=True
        )


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_two_supervisors_setting_calendars_at_once_leave_one_in_force(supervisor):
    require_postgres()

    def put(index: int) -> BusinessCalendar:
        return calendars.calendar_set(
            actor=supervisor,
            name=f"Office {index}",
            time_zone="Europe/Berlin",
            weekly_hours=OFFICE,
            holidays=[],
        )

    outcomes = run_in_threads(4, put)

    assert all(isinstance(outcome, BusinessCalendar | Conflict) for outcome in outcomes), outcomes
    assert BusinessCalendar.objects.filter(active=True).count() == 1
    in_force = BusinessCalendar.objects.get(active=True)
    assert in_force.name in {o.name for o in outcomes if isinstance(o, BusinessCalendar)}


def test_the_migration_counts_earlier_pauses_as_business_time(db, clock):
    # Every pause before calendars existed was counted with every hour open
    from django.apps import apps

    migration = importlib.import_module("tickets.migrations.0020_business_calendar")
    paused, never = open_ticket(), open_ticket()
    Ticket.objects.filter(pk=paused.pk).update(sla_paused_seconds=5400)

    migration.paused_in_business_time(apps, None)

    assert fresh(paused).sla_paused_business_seconds == 5400
    assert fresh(never).sla_paused_business_seconds == 0


def test_a_calendar_with_no_open_day_ahead_still_gives_due_times(db, clock, caplog):
    # Validation lets holidays cover every open day; ten years of them leave no open hour
    days = [(datetime(2026, 3, 27) + timedelta(days=n)).date().isoformat() for n in range(3700)]
    in_force(holidays=days)

    with caplog.at_level(logging.ERROR, logger="tickets.sla"):
        ticket = open_ticket("urgent")

    assert dues(ticket) == (clock.now + H, clock.now + 8 * H)
    assert "no open hours ahead" in caplog.text
