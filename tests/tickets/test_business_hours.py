"""DESIGN §19 business hours, the arithmetic (tickets/business_hours.py): a boundary per test
(weekend, holiday, the clocks changing, a start outside hours, a sum ending at a closing),
calendars that validation refuses, and properties over random calendars and instants."""

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tickets.business_hours import (
    WEEKDAYS,
    CalendarError,
    NoBusinessHours,
    Schedule,
    add_business_time,
    business_seconds_between,
    normal_week,
    parse_week,
    schedule_from,
)

BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")
H = 3600
OFFICE = {day: ["09:00-17:00"] for day in WEEKDAYS[:5]}
EVERY_DAY = {day: ["09:00-17:00"] for day in WEEKDAYS}


def office(zone: str = "Europe/Berlin", hours: dict | None = None, holidays=()) -> Schedule:
    return schedule_from(
        time_zone=zone,
        weekly_hours=OFFICE if hours is None else hours,
        holidays=[{"date": day, "name": ""} for day in holidays],
    )


def berlin(*args: int) -> datetime:
    return datetime(*args, tzinfo=BERLIN)  # type: ignore[misc]


# --- boundaries --------------------------------------------------------------------------------


def test_it_carries_time_over_the_weekend():
    # Friday 27 March 2026, 16:00 in Berlin, plus 2 business hours
    due = add_business_time(berlin(2026, 3, 27, 16), 2 * H, office())

    assert due == berlin(2026, 3, 30, 10)
    assert business_seconds_between(berlin(2026, 3, 27, 16), due, office()) == 2 * H


def test_it_skips_a_holiday():
    # Thursday 24 December, Christmas Day (Friday) a holiday, then the weekend
    schedule = office(holidays=["2026-12-25"])

    due = add_business_time(berlin(2026, 12, 24, 16), 2 * H, schedule)

    assert due == berlin(2026, 12, 28, 10)
    assert add_business_time(berlin(2026, 12, 24, 16), 2 * H, office()) == berlin(2026, 12, 25, 10)


def test_a_holiday_is_a_date_on_the_calendar_s_clock():
    # 23:30 UTC on 24 December is already Christmas Day in Berlin, but not in New York
    late = datetime(2026, 12, 24, 23, 30, tzinfo=UTC)

    in_berlin = add_business_time(late, H, office(holidays=["2026-12-25"]))
    in_new_york = add_business_time(late, H, office("America/New_York", holidays=["2026-12-25"]))

    assert in_berlin == berlin(2026, 12, 28, 10)
    assert in_new_york == datetime(2026, 12, 28, 10, tzinfo=NEW_YORK)


def test_a_working_day_keeps_its_hours_when_berlin_springs_forward():
    # Sunday 29 March 2026: Berlin's clocks jump from 02:00 to 03:00
    schedule = office(hours=EVERY_DAY)
    day_start, day_end = berlin(2026, 3, 29, 0), berlin(2026, 3, 30, 0)

    assert business_seconds_between(day_start, day_end, schedule) == 8 * H
    assert add_business_time(berlin(2026, 3, 28, 16), 2 * H, schedule) == berlin(2026, 3, 29, 10)
    # From Saturday's closing to 10:00 on Sunday: 17 hours on the wall clock, 16 real ones
    assert add_business_time(berlin(2026, 3, 28, 16), 2 * H, schedule) - berlin(
        2026, 3, 28, 17
    ) == timedelta(hours=16)


def test_a_whole_day_open_is_23_real_hours_when_the_clocks_spring_forward():
    schedule = office(hours={day: ["00:00-24:00"] for day in WEEKDAYS})

    spring = business_seconds_between(berlin(2026, 3, 29, 0), berlin(2026, 3, 30, 0), schedule)

    assert spring == 23 * H


def test_a_working_day_keeps_its_hours_when_new_york_falls_back():
    # Sunday 1 November 2026: New York's clocks go from 02:00 back to 01:00
    schedule = office("America/New_York", hours=EVERY_DAY)
    saturday_four_pm = datetime(2026, 10, 31, 16, tzinfo=NEW_YORK)

    due = add_business_time(saturday_four_pm, 9 * H, schedule)

    assert due == datetime(2026, 11, 1, 17, tzinfo=NEW_YORK)
    assert due.astimezone(UTC) == datetime(2026, 11, 1, 22, tzinfo=UTC)  # EST, UTC-5
    whole = office("America/New_York", hours={day: ["00:00-24:00"] for day in WEEKDAYS})
    day = (datetime(2026, 11, 1, tzinfo=NEW_YORK), datetime(2026, 11, 2, tzinfo=NEW_YORK))
    assert business_seconds_between(*day, whole) == 25 * H


def test_an_opening_hour_the_clocks_skip_is_read_before_the_change():
    # 02:30 does not exist in Berlin on 29 March: read at the winter offset, it is 03:30 CEST
    schedule = office(hours={"sun": ["02:30-04:00"]})

    due = add_business_time(berlin(2026, 3, 29, 0), 60, schedule)

    assert due == datetime(2026, 3, 29, 1, 31, tzinfo=UTC)


def test_a_start_before_opening_or_on_a_weekend_counts_from_the_next_opening():
    schedule = office()

    assert add_business_time(berlin(2026, 3, 30, 7), H, schedule) == berlin(2026, 3, 30, 10)
    assert add_business_time(berlin(2026, 3, 28, 12), H, schedule) == berlin(2026, 3, 30, 10)
    assert add_business_time(berlin(2026, 3, 30, 18), H, schedule) == berlin(2026, 3, 31, 10)


def test_a_sum_that_runs_out_at_closing_is_due_at_closing():
    assert add_business_time(berlin(2026, 3, 27, 9), 8 * H, office()) == berlin(2026, 3, 27, 17)


def test_a_lunch_break_and_a_night_shift_across_midnight():
    schedule = office(
        hours={"mon": ["13:30-17:00", "09:00-12:30", "22:00-24:00"], "tue": ["00:00-06:00"]}
    )

    assert add_business_time(berlin(2026, 3, 30, 12), H, schedule) == berlin(2026, 3, 30, 14)
    assert add_business_time(berlin(2026, 3, 30, 23), 2 * H, schedule) == berlin(2026, 3, 31, 1)


def test_open_time_between_is_negative_backwards_and_plain_without_a_calendar():
    friday, monday = berlin(2026, 3, 27, 16), berlin(2026, 3, 30, 10)

    assert business_seconds_between(monday, friday, office()) == -2 * H
    assert business_seconds_between(friday, monday, None) == 66 * H
    assert add_business_time(friday, 2 * H, None) == berlin(2026, 3, 27, 18)
    assert add_business_time(friday, 0, office()) == friday


def test_naive_times_and_negative_sums_are_refused():
    with pytest.raises(ValueError):
        add_business_time(datetime(2026, 3, 27, 16), H, office())
    with pytest.raises(ValueError):
        business_seconds_between(datetime(2026, 3, 27), berlin(2026, 3, 28), office())
    with pytest.raises(ValueError):
        add_business_time(berlin(2026, 3, 27, 16), -1, office())


def test_a_schedule_with_no_open_hours_stops_instead_of_looping():
    # Validation refuses such a calendar; the arithmetic must not hang on one all the same
    closed = Schedule(zone=BERLIN, week=((),) * 7)
    always_on_holiday = Schedule(
        zone=BERLIN,
        week=parse_week(OFFICE),
        holidays=frozenset(date(2026, 1, 1) + timedelta(days=n) for n in range(4000)),
    )

    with pytest.raises(NoBusinessHours):
        add_business_time(berlin(2026, 3, 27, 16), H, closed)
    with pytest.raises(NoBusinessHours):
        add_business_time(berlin(2026, 3, 27, 16), H, always_on_holiday)
    assert business_seconds_between(berlin(2026, 3, 27), berlin(2027, 3, 27), closed) == 0


# --- validation ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("zone", "hours", "holidays", "field"),
    [
        ("Mars/Olympus", OFFICE, [], "time_zone"),
        ("", OFFICE, [], "time_zone"),
        ("../etc/passwd", OFFICE, [], "time_zone"),
        ("UTC", {"mon": ["17:00-09:00"]}, [], "weekly_hours"),
        ("UTC", {"mon": ["09:00-09:00"]}, [], "weekly_hours"),
        ("UTC", {"mon": ["22:00-06:00"]}, [], "weekly_hours"),
        ("UTC", {"mon": ["09:00-13:00", "12:00-17:00"]}, [], "weekly_hours"),
        ("UTC", {"mon": ["09:00-25:00"]}, [], "weekly_hours"),
        ("UTC", {"mon": ["09:60-17:00"]}, [], "weekly_hours"),
        ("UTC", {"mon": ["nine to five"]}, [], "weekly_hours"),
        ("UTC", {"mon": "09:00-17:00"}, [], "weekly_hours"),
        ("UTC", {"monday": ["09:00-17:00"]}, [], "weekly_hours"),
        ("UTC", {}, [], "weekly_hours"),
        ("UTC", {day: [] for day in WEEKDAYS}, [], "weekly_hours"),
        ("UTC", ["09:00-17:00"], [], "weekly_hours"),
        ("UTC", OFFICE, [{"date": "2026-02-30"}], "holidays"),
        ("UTC", OFFICE, [{"date": "25.12.2026"}], "holidays"),
        ("UTC", OFFICE, [{"date": "20261225"}], "holidays"),
        ("UTC", OFFICE, [{"date": "2026-12-25"}, {"date": "2026-12-25"}], "holidays"),
        ("UTC", OFFICE, ["2026-12-25"], "holidays"),
    ],
)
def test_a_calendar_that_cannot_count_is_refused_naming_the_field(zone, hours, holidays, field):
    with pytest.raises(CalendarError) as refused:
        schedule_from(time_zone=zone, weekly_hours=hours, holidays=holidays)

    assert refused.value.field == field
    assert refused.value.message


def test_a_week_is_stored_with_every_day_named_and_its_intervals_sorted():
    week = parse_week({"fri": ["13:00-17:00", "9:00-12:00"], "sat": ["10:00\u201314:00"]})

    assert normal_week(week) == {
        "mon": [],
        "tue": [],
        "wed": [],
        "thu": [],
        "fri": ["09:00-12:00", "13:00-17:00"],
        "sat": ["10:00-14:00"],
        "sun": [],
    }


# --- properties -------------------------------------------------------------------------------

ZONES = ["Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata", "UTC"]


@st.composite
def schedules(draw) -> Schedule:
    week = {}
    for day in WEEKDAYS:
        cuts = sorted(draw(st.sets(st.integers(0, 96), max_size=4)))
        pairs = list(zip(cuts[::2], cuts[1::2], strict=False))
        week[day] = [
            "-".join(f"{quarter * 15 // 60:02d}:{quarter * 15 % 60:02d}" for quarter in pair)
            for pair in pairs
        ]
    if not any(week.values()):
        week["wed"] = ["09:00-17:00"]
    holidays = draw(st.sets(st.dates(date(2026, 1, 1), date(2026, 12, 31)), max_size=20))
    return schedule_from(
        time_zone=draw(st.sampled_from(ZONES)),
        weekly_hours=week,
        holidays=[{"date": day.isoformat()} for day in holidays],
    )


instants = st.datetimes(datetime(2026, 1, 1), datetime(2026, 12, 31), timezones=st.just(UTC))
durations = st.integers(0, 200 * H)


@settings(max_examples=150, deadline=None)
@given(schedules(), instants, durations)
def test_adding_then_measuring_gives_back_the_business_time(schedule, start, seconds):
    due = add_business_time(start, seconds, schedule)

    assert due >= start
    assert business_seconds_between(start, due, schedule) == seconds


@settings(max_examples=150, deadline=None)
@given(schedules(), instants, instants)
def test_measuring_then_adding_lands_no_later_and_on_the_same_business_time(schedule, a, b):
    a, b = min(a, b), max(a, b)
    between = business_seconds_between(a, b, schedule)

    due = add_business_time(a, between, schedule)

    assert due <= b
    assert business_seconds_between(due, b, schedule) == 0


@settings(max_examples=150, deadline=None)
@given(schedules(), instants, instants, durations, durations)
def test_later_starts_and_longer_sums_are_never_due_earlier(schedule, a, b, s, t):
    (a, b), (s, t) = sorted((a, b)), sorted((s, t))

    assert add_business_time(a, s, schedule) <= add_business_time(a, t, schedule)
    assert add_business_time(a, s, schedule) <= add_business_time(b, s, schedule)


@settings(max_examples=100, deadline=None)
@given(schedules(), instants, durations)
def test_resuming_after_a_pause_keeps_the_business_time_that_was_left(schedule, paused, left):
    # The two ways tickets/business_hours.py states the resume rule name one instant
    due = add_business_time(paused, left + 1, schedule)
    resumed = paused + timedelta(hours=50)

    moved = add_business_time(due, business_seconds_between(paused, resumed, schedule), schedule)
    kept = add_business_time(resumed, business_seconds_between(paused, due, schedule), schedule)

    assert moved == kept
