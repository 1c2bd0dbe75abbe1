"""Admin for the business calendar (DESIGN §19): a form with a line per weekday and a box of
holidays, read by the same parser as the API (tickets/business_hours.py), so admin stores only
what the SLA clocks can count in."""

from django import forms
from django.contrib import admin, messages
from django.db import IntegrityError, transaction

from tickets.business_hours import WEEKDAYS
from tickets.calendar_forms import CalendarHoursForm, holiday_lines, week_lines
from tickets.calendars import BusinessCalendar, normal_holidays


class BusinessCalendarForm(CalendarHoursForm, forms.ModelForm):
    class Meta:
        model = BusinessCalendar
        fields = ["name", "time_zone", "active"]

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        for day, line in week_lines(self.instance.weekly_hours).items():
            self.initial.setdefault(day, line)
        self.initial.setdefault("holidays_text", holiday_lines(self.instance.holidays))

    def clean(self) -> dict:
        data = super().clean()
        if self.weekly_hours is not None:
            self.instance.weekly_hours = self.weekly_hours
        if self.holidays is not None:
            self.instance.holidays = normal_holidays(self.holidays)
        return data


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
