"""/sla/hours/: the business hours the SLA clocks count in, as a page (DESIGN §19). Everyone on
the desk reads them; supervisors change them here (or over /api/sla/calendar/ and in admin)."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import redirect, render

from config.errors import ApplicationError
from config.roles import is_staff_member, is_supervisor
from tickets import calendars
from tickets.business_hours import WEEKDAYS
from tickets.calendar_forms import DAY_LABELS, CalendarHoursForm, holiday_lines, week_lines

NEW_CALENDAR_NAME = "Business hours"
# What a supervisor starts from when no calendar is in force: a common office week.
OFFICE_WEEK = {day: ["09:00-17:00"] for day in WEEKDAYS[:5]}


@login_required
def business_hours_page(request):
    if not is_staff_member(request.user):
        raise PermissionDenied("Only desk staff see the business hours.")
    may_change = is_supervisor(request.user)
    if request.method == "POST":
        if not may_change:
            raise PermissionDenied("Only supervisors set the business hours.")
        if request.POST.get("action") == "clear":
            calendars.calendar_clear(actor=request.user)
            messages.success(request, "No business hours: new due times count every hour.")
            return redirect("business-hours")
        form = CalendarHoursForm(request.POST)
        if form.is_valid() and _saved(request, form):
            return redirect("business-hours")
    else:
        form = CalendarHoursForm(initial=_initial(calendars.calendar_in_force()))
    calendar = calendars.calendar_in_force()
    return render(
        request,
        "tickets/business_hours.html",
        {
            "calendar": calendar,
            "days": _days(calendar),
            "form": form if may_change else None,
            "day_fields": [form[day] for day in WEEKDAYS],
        },
    )


def _saved(request, form: CalendarHoursForm) -> bool:
    """Put the typed hours in force; a refusal is said on the form, with what was typed."""
    calendar = calendars.calendar_in_force()
    try:
        calendars.calendar_set(
            actor=request.user,
            name=calendar.name if calendar is not None else NEW_CALENDAR_NAME,
            time_zone=form.cleaned_data["time_zone"],
            weekly_hours=form.weekly_hours or {},
            holidays=form.holidays or [],
        )
    except ApplicationError as error:
        form.add_error(None, error.message)
        return False
    messages.success(request, "Saved: new due times count these hours.")
    return True


def _initial(calendar) -> dict:
    if calendar is None:
        return {"time_zone": "UTC", **week_lines(OFFICE_WEEK)}
    return {
        "time_zone": calendar.time_zone,
        "holidays_text": holiday_lines(calendar.holidays),
        **week_lines(calendar.weekly_hours),
    }


def _days(calendar) -> list[tuple[str, str]]:
    """(day, its hours in words) for the calendar in force."""
    if calendar is None:
        return []
    lines = week_lines(calendar.weekly_hours)
    return [(DAY_LABELS[day], lines[day] or "closed") for day in WEEKDAYS]
