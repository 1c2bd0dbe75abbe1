"""Admin for the business calendar (DESIGN §19): a form with a line per weekday and a box of
holidays, read by the same parser as the API (tickets/business_hours.py), so admin stores only
what the SLA clocks can count in."""

from django import forms
from django.contrib import admin, messages
from django.db import IntegrityError, transaction

from tickets import business_hours
from tickets.business_hours import WEEKDAYS, CalendarError
from tickets.calendars import BusinessCalendar, normal_holidays

HOURS_HELP = (
    "Open hours, such as 09:00-17:00, or 09:00-12:30, 13:30-17:00. Blank: closed. 24:00 "
    "closes at midnight; a night shift is two days' lines (22:00-24:00, then 00:00-06:00)."
)


def _day_field(label: str, help_text: str = "") -> forms.CharField:
    # Admin's wide text box: a day with a lunch break and an evening shift fits in view.
    wide = forms.TextInput(attrs={"class": "vTextField"})
    return forms.CharField(label=label, required=False, help_text=help_text, widget=wide)


def _zone_choices() -> list[tuple[str, str]]:
    return [(name, name) for name in sorted(business_hours.zone_names())]


class BusinessCalendarForm(forms.ModelForm):
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

    class Meta:
        model = BusinessCalendar
        fields = ["name", "time_zone", "active"]

    mon = _day_field("Monday", help_text=HOURS_HELP)
    tue = _day_field("Tuesday")
    wed = _day_field("Wednesday")
    thu = _day_field("Thursday")
    fri = _day_field("Friday")
    sat = _day_field("Saturday")
    sun = _day_field("Sunday")

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        stored = self.instance.weekly_hours or {}
        for day in WEEKDAYS:
            self.initial.setdefault(day, ", ".join(stored.get(day, [])))
        self.initial.setdefault(
            "holidays_text",
            "\n".join(
                f"{row['date']} {row.get('name', '')}".strip()
                for row in self.instance.holidays or []
            ),
        )

    def clean(self) -> dict:
        data = super().clean() or {}
        week = self._week(data)
        holidays = self._holidays(data.get("holidays_text", ""))
        if week is not None:
            try:
                parsed = business_hours.parse_week(week)
            except CalendarError as error:
                self.add_error(None, error.message)
            else:
                self.instance.weekly_hours = business_hours.normal_week(parsed)
        if holidays is not None:
            self.instance.holidays = normal_holidays(holidays)
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


@admin.register(BusinessCalendar)
class BusinessCalendarAdmin(admin.ModelAdmin):
    """The hours the SLA clocks count (DESIGN §19). With no calendar in force they count every
    hour. A change applies to tickets opened, re-prioritised or resumed after it: due times
    already set do not move."""

    form = BusinessCalendarForm
    fieldsets = [
        (None, {"fields": ["name", "time_zone", "active"]}),
        ("Weekly hours (on the calendar's clock)", {"fields": list(WEEKDAYS)}),
        (None, {"fields": ["holidays_text"]}),
    ]
    list_display = ["name", "active", "time_zone", "hours", "holiday_count", "updated_at"]
    actions = ["put_in_force"]

    @admin.display(description="weekly hours")
    def hours(self, calendar: BusinessCalendar) -> str:
        stored = calendar.weekly_hours or {}
        days = [f"{day.title()} {', '.join(stored[day])}" for day in WEEKDAYS if stored.get(day)]
        return "; ".join(days) or "-"

    @admin.display(description="holidays")
    def holiday_count(self, calendar: BusinessCalendar) -> int:
        return len(calendar.holidays or [])

    @admin.action(description="Put the selected calendar in force")
    def put_in_force(self, request, queryset) -> None:
        if queryset.count() != 1:
            self.message_user(request, "Select one calendar.", level=messages.ERROR)
            return
        calendar = queryset.get()
        try:
            with transaction.atomic():
                BusinessCalendar.objects.filter(active=True).update(active=False)
                BusinessCalendar.objects.filter(pk=calendar.pk).update(active=True)
        except IntegrityError:
            # A supervisor put another calendar in force by API at the same moment.
            self.message_user(request, "The calendars changed meanwhile.", level=messages.ERROR)
            return
        self.message_user(request, f"{calendar.name} is in force for new due times.")
