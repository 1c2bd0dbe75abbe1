"""The business calendar as people type it (DESIGN §19): a line of open hours per weekday and a
box of holidays, read by the same parser as the API (tickets/business_hours.py). Admin's form
(tickets/calendar_admin.py) and the desk's page (desk/business_hours/views.py) are both made
of these fields, so either stores only what the SLA clocks can count in."""

from django import forms

from tickets import business_hours
from tickets.business_hours import WEEKDAYS, CalendarError
from tickets.calendars import BusinessCalendar

HOURS_HELP = (
    "Open hours, such as 09:00-17:00, or 09:00-12:30, 13:30-17:00. Blank: closed. 24:00 "
    "closes at midnight; a night shift is two days' lines (22:00-24:00, then 00:00-06:00)."
)
DAY_LABELS = dict(
    zip(
        WEEKDAYS,
        ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"),
        strict=True,
    )
)


def _day_field(label: str, help_text: str = "") -> forms.CharField:
    # A wide text box: a day with a lunch break and an evening shift fits in view.
    wide = forms.TextInput(attrs={"class": "vTextField"})
    return forms.CharField(label=label, required=False, help_text=help_text, widget=wide)


def _zone_choices() -> list[tuple[str, str]]:
    return [(name, name) for name in sorted(business_hours.zone_names())]


def week_lines(weekly_hours: dict | None) -> dict[str, str]:
    """A stored week as the day fields show it: "09:00-12:30, 13:30-17:00"."""
    stored = weekly_hours or {}
    return {day: ", ".join(stored.get(day, [])) for day in WEEKDAYS}


def holiday_lines(holidays: list[dict] | None) -> str:
    return "\n".join(f"{row['date']} {row.get('name', '')}".strip() for row in holidays or [])


class CalendarHoursForm(forms.Form):
    """The hours, holidays and time zone; after is_valid(), `weekly_hours` and `holidays` hold
    them as tickets/calendars.py stores them."""

    time_zone = forms.ChoiceField(
        choices=_zone_choices,
        initial="UTC",
        help_text=BusinessCalendar._meta.get_field("time_zone").help_text,
    )
    holidays_text = forms.CharField(
        label="Holidays",
        required=False,
        widget=forms.Textarea(attrs={"rows": 8, "cols": 48}),
        help_text="Closed all day. One a line: the date, then its name if you like, such as "
        "2026-12-25 Christmas Day.",
    )
    mon = _day_field(DAY_LABELS["mon"], help_text=HOURS_HELP)
    tue = _day_field(DAY_LABELS["tue"])
    wed = _day_field(DAY_LABELS["wed"])
    thu = _day_field(DAY_LABELS["thu"])
    fri = _day_field(DAY_LABELS["fri"])
    sat = _day_field(DAY_LABELS["sat"])
    sun = _day_field(DAY_LABELS["sun"])

    weekly_hours: dict[str, list[str]] | None = None
    holidays: list[dict] | None = None

    def clean(self) -> dict:
        data = super().clean() or {}
        week = self._week(data)
        if week is not None:
            try:
                self.weekly_hours = business_hours.normal_week(business_hours.parse_week(week))
            except CalendarError as error:
                self.add_error(None, error.message)
        self.holidays = self._holidays(data.get("holidays_text", ""))
        return data

    def _week(self, data: dict) -> dict | None:
        """The days as the parser reads them, or None when a day's line is wrong (said on
        that line)."""
        week, valid = {}, True
        for day in WEEKDAYS:
            intervals = [part.strip() for part in data.get(day, "").split(",") if part.strip()]
            try:
                business_hours.parse_day(day, intervals)
            except CalendarError as error:
                self.add_error(day, error.message)
                valid = False
            week[day] = intervals
        return week if valid else None

    def _holidays(self, text: str) -> list[dict] | None:
        rows = []
        for line in text.splitlines():
            if line.strip():
                day, _, name = line.strip().partition(" ")
                rows.append({"date": day, "name": name.strip()})
        try:
            business_hours.parse_holidays(rows)
        except CalendarError as error:
            self.add_error("holidays_text", error.message)
            return None
        return rows
