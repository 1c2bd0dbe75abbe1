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


def day(value: date | datetime | None) -> str:
    """The day of a moment (or a date) as people read it, in the current time zone."""
    if value is None:
        return ""
    if isinstance(value, datetime) and timezone.is_aware(value):
        value = timezone.localtime(value)
    return date_format(value, DATE_FORMAT)
