"""The one way the desk writes a time for people: "4 Dec 2026, 14:05" (a day alone: "4 Dec
2026"), in the desk's time zone (TIME_ZONE). Every page uses it through the `when` and `day`
template filters (ops/templatetags/desk_time.py, built into every template), and the admin lists
through these functions; machine-readable times (datetime="" and title="" attributes) stay ISO
8601."""

from datetime import date, datetime

from django.utils import timezone
from django.utils.dateformat import format as date_format

DATETIME_FORMAT = "j M Y, H:i"
DATE_FORMAT = "j M Y"


def when(value: datetime | None) -> str:
    """A moment as people read it, in the current time zone; "" for none."""
    if value is None:
        return ""
    if timezone.is_aware(value):
        value = timezone.localtime(value)
    return date_format(value, DATETIME_FORMAT)


SHORT_FORMAT = "j M H:i"
RELATIVE_DAYS = {-1: "Yesterday", 0: "Today", 1: "Tomorrow"}


def when_short(value: datetime | None, now: datetime | None = None) -> str:
    """A moment near now, short, for a column of due times: "Today 16:30", "Tomorrow 09:00",
    "8 Dec 09:00", and the full `when` in another year."""
    if value is None:
        return ""
    value = timezone.localtime(value) if timezone.is_aware(value) else value
    today = timezone.localtime(now or timezone.now()).date()
    relative = RELATIVE_DAYS.get((value.date() - today).days)
    if relative:
        return f"{relative} {date_format(value, 'H:i')}"
    if value.year != today.year:
        return when(value)
    return date_format(value, SHORT_FORMAT)


def day(value: date | datetime | None) -> str:
    """The day of a moment (or a date) as people read it, in the current time zone."""
    if value is None:
        return ""
    if isinstance(value, datetime) and timezone.is_aware(value):
        value = timezone.localtime(value)
    return date_format(value, DATE_FORMAT)
