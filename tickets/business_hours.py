"""Business hours for the SLA clocks (DESIGN §19). Pure: no database, no settings. tickets/sla.py
hands it the calendar in force as a Schedule, or None when there is none, and then the clocks
count every hour of every day, as they did before calendars.

A schedule is a time zone, per weekday the open intervals in local wall-clock time, and
holidays (local dates closed all day). An interval opens before it closes on the same day;
"24:00" closes at the day's end, and no interval crosses midnight: a night shift is two
intervals, 22:00-24:00 on one day and 00:00-06:00 on the next.

Each day's intervals become real instants in the calendar's zone and every sum is taken over
those instants in UTC: a 09:00-17:00 day is 8 hours on the day the clocks change too, and a
00:00-24:00 day is 23 or 25. A wall time the change skips (02:30 when the clocks jump from 02:00
to 03:00) is read with the offset before the change; a time it repeats, as its first occurrence.

The rules tickets/sla.py builds on:

* `add_business_time(start, seconds)`: the earliest instant by which `seconds` of open time
  have passed since `start`. A start outside hours counts from the next opening; a sum that
  runs out exactly at a closing is due at that closing, not at the next opening.
* `business_seconds_between(a, b)`: the open time between a and b; negative when b is first.
* A target is due its hours of open time after the ticket was opened.
* A pause (pending, solved) keeps the business time that was left when the clock stopped: on
  resume the resolution due time becomes add_business_time(old due, open time between the pause
  and the resume). That is the instant add_business_time(resume, business_seconds_between(
  paused_at, old due)) names, and a target that was already late when it paused stays exactly
  as late.
"""

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from functools import cache
from itertools import pairwise
from zoneinfo import ZoneInfo, available_timezones

WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
DAY_MINUTES = 24 * 60
# How many days the arithmetic walks at most: ten years. A calendar validation accepts is open
# some time every week, so an SLA target is reached long before; the bound is what keeps a
# schedule with no open time (which validation refuses) from looping forever.
MAX_DAYS = 3660

# Minutes after local midnight: (opens, closes); closes may be DAY_MINUTES, the day's end.
Interval = tuple[int, int]

EN_DASH = "\u2013"
_CLOCK_TIME = re.compile(r"^(\d{1,2}):(\d{2})$")


class CalendarError(ValueError):
    """A calendar that cannot count business hours. `field` names the part that is wrong
    (time_zone, weekly_hours or holidays), `message` says how, for a person."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


@dataclass(frozen=True)
class Schedule:
    zone: ZoneInfo
    week: tuple[tuple[Interval, ...], ...]  # seven days, Monday first, each sorted
    holidays: frozenset[date] = frozenset()

    def open_spans(self, day: date) -> list[tuple[datetime, datetime]]:
        """The day's open intervals as real instants (UTC), earliest first."""
        if day in self.holidays:
            return []
        spans = []
        for opens, closes in self.week[day.weekday()]:
            start, end = self._instant(day, opens), self._instant(day, closes)
            if end > start:
                spans.append((start, end))
        return spans

    def _instant(self, day: date, minute: int) -> datetime:
        if minute == DAY_MINUTES:
            day, minute = day + timedelta(days=1), 0
        local = datetime.combine(day, time(minute // 60, minute % 60), tzinfo=self.zone)
        # In UTC: arithmetic between two datetimes of one zone would ignore a clock change.
        return local.astimezone(UTC)


class NoBusinessHours(CalendarError):
    def __init__(self) -> None:
        super().__init__("weekly_hours", f"No open hours within {MAX_DAYS} days.")


def _require_aware(*moments: datetime) -> None:
    for moment in moments:
        if moment.tzinfo is None or moment.utcoffset() is None:
            raise ValueError("Business hours count between aware datetimes only.")


def _spans(start: datetime, schedule: Schedule, days: int) -> Iterator[tuple[datetime, datetime]]:
    """Open spans from the local day before `start`'s (harmless, and safe at midnight) on."""
    first = start.astimezone(schedule.zone).date() - timedelta(days=1)
    for offset in range(days):
        yield from schedule.open_spans(first + timedelta(days=offset))


def add_business_time(start: datetime, seconds: float, schedule: Schedule | None) -> datetime:
    """The earliest instant by which `seconds` (>= 0) of open time have passed since `start`."""
    _require_aware(start)
    if seconds < 0:
        raise ValueError("Business time is added, never taken away.")
    if schedule is None:
        return start + timedelta(seconds=seconds)
    left = timedelta(seconds=seconds)
    if not left:
        return start
    for opens, closes in _spans(start, schedule, MAX_DAYS):
        begin = max(opens, start)
        if closes <= begin:
            continue
        if left <= closes - begin:
            return begin + left
        left -= closes - begin
    raise NoBusinessHours()


def business_seconds_between(a: datetime, b: datetime, schedule: Schedule | None) -> float:
    """The open time from a to b, in seconds; negative when b is before a."""
    _require_aware(a, b)
    if schedule is None:
        return (b - a).total_seconds()
    if b < a:
        return -business_seconds_between(b, a, schedule)
    total = timedelta()
    for opens, closes in _spans(a, schedule, (b - a).days + 3):
        if opens >= b:
            break
        overlap = min(closes, b) - max(opens, a)
        if overlap > timedelta():
            total += overlap
    return total.total_seconds()


# --- reading a calendar: what admin, the API and the model share ---------------------------


@cache
def zone_names() -> frozenset[str]:
    return frozenset(available_timezones())


def parse_zone(name: object) -> ZoneInfo:
    if not isinstance(name, str) or name not in zone_names():
        raise CalendarError(
            "time_zone", f"{name!r} is not an IANA time zone (such as Europe/Berlin or UTC)."
        )
    return ZoneInfo(name)


def _minutes(text: str, interval: str) -> int:
    match = _CLOCK_TIME.match(text.strip())
    hours, minutes = (int(match[1]), int(match[2])) if match else (99, 99)
    if hours * 60 + minutes > DAY_MINUTES or minutes > 59:
        raise CalendarError(
            "weekly_hours", f"{interval!r}: {text.strip()!r} is not a time from 00:00 to 24:00."
        )
    return hours * 60 + minutes


def parse_interval(text: object) -> Interval:
    """ "09:00-17:00" (an en dash will do) → (540, 1020)."""
    if isinstance(text, str):
        text = text.replace(EN_DASH, "-")
    if not isinstance(text, str) or text.count("-") != 1:
        raise CalendarError("weekly_hours", f"{text!r} is not an interval such as 09:00-17:00.")
    opens_text, closes_text = text.split("-")
    opens, closes = _minutes(opens_text, text), _minutes(closes_text, text)
    if opens >= closes:
        raise CalendarError(
            "weekly_hours",
            f"{text!r} closes before it opens; split a night across midnight in two "
            "(22:00-24:00 and 00:00-06:00 the next day).",
        )
    return opens, closes


def parse_day(day: str, texts: object) -> tuple[Interval, ...]:
    if not isinstance(texts, list):
        raise CalendarError("weekly_hours", f'{day}: a list of intervals such as ["09:00-17:00"].')
    intervals = sorted(parse_interval(text) for text in texts)
    for (_, closes), (opens, _) in pairwise(intervals):
        if opens < closes:
            raise CalendarError("weekly_hours", f"{day}: intervals overlap.")
    return tuple(intervals)


def parse_week(weekly_hours: object) -> tuple[tuple[Interval, ...], ...]:
    """{"mon": ["09:00-17:00"], ...}: a day left out is closed; some day must be open."""
    if not isinstance(weekly_hours, dict):
        raise CalendarError("weekly_hours", 'Give the days, such as {"mon": ["09:00-17:00"]}.')
    unknown = sorted(set(weekly_hours) - set(WEEKDAYS))
    if unknown:
        raise CalendarError(
            "weekly_hours", f"Unknown day {unknown[0]!r}: use {', '.join(WEEKDAYS)}."
        )
    week = tuple(parse_day(day, weekly_hours.get(day, [])) for day in WEEKDAYS)
    if not any(week):
        raise CalendarError("weekly_hours", "A calendar needs open hours on at least one day.")
    return week


def parse_holidays(holidays: object) -> frozenset[date]:
    """[{"date": "2026-12-25", "name": "Christmas Day"}, ...]: each date once."""
    if not isinstance(holidays, list):
        raise CalendarError("holidays", 'A list such as [{"date": "2026-12-25", "name": "…"}].')
    dates: set[date] = set()
    for row in holidays:
        text = row.get("date") if isinstance(row, dict) else None
        try:
            day = date.fromisoformat(text) if isinstance(text, str) else None
        except ValueError:
            day = None
        if day is None or len(text or "") != 10:
            raise CalendarError("holidays", f"{text or row!r} is not a date such as 2026-12-25.")
        if not isinstance(row.get("name", ""), str):
            raise CalendarError("holidays", f"{text}: the name is text.")
        if day in dates:
            raise CalendarError("holidays", f"{text} is listed twice.")
        dates.add(day)
    return frozenset(dates)


def schedule_from(*, time_zone: object, weekly_hours: object, holidays: object) -> Schedule:
    """The schedule a stored or submitted calendar describes; CalendarError names what is
    wrong."""
    return Schedule(
        zone=parse_zone(time_zone),
        week=parse_week(weekly_hours),
        holidays=parse_holidays(holidays),
    )


def format_interval(interval: Interval) -> str:
    return "-".join(f"{minute // 60:02d}:{minute % 60:02d}" for minute in interval)


def normal_week(week: tuple[tuple[Interval, ...], ...]) -> dict[str, list[str]]:
    """The stored form of a parsed week: every day named, intervals sorted and zero-padded."""
    days = zip(WEEKDAYS, week, strict=True)
    return {day: [format_interval(interval) for interval in spans] for day, spans in days}
