"""The business calendar the SLA clocks count in (DESIGN §19): the model, the one read the clocks
make, and the writes the API makes. The arithmetic is tickets/business_hours.py.

At most one calendar is in force (a partial unique constraint); with none, the clocks count
every hour. Changing the calendar moves no ticket's due times: tickets opened after it, and
due times recomputed after it (a priority change, a resume after a pause), count in it."""

import logging

from django.db import IntegrityError, models, transaction
from django.db.models import Q

from config.errors import ApplicationError, Conflict, Forbidden
from config.roles import is_supervisor
from tickets import business_hours
from tickets.business_hours import CalendarError, Schedule

logger = logging.getLogger(__name__)


class BusinessCalendar(models.Model):
    name = models.CharField(max_length=80, unique=True)
    time_zone = models.CharField(
        max_length=64,
        help_text="An IANA time zone, such as Europe/Berlin, America/New_York or UTC. The "
        "hours and holidays are read on this zone's clock, summer time included.",
    )
    # {"mon": ["09:00-17:00"], ..., "sun": []}: tickets/business_hours.py parse_week.
    weekly_hours = models.JSONField(default=dict)
    # [{"date": "2026-12-25", "name": "Christmas Day"}, ...], closed all day.
    holidays = models.JSONField(default=list, blank=True)
    active = models.BooleanField(
        "in force",
        default=False,
        help_text="The SLA clocks count this calendar's hours. One calendar at a time; with "
        "none in force they count every hour.",
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(
                fields=["active"],
                condition=Q(active=True),
                name="business_calendar_one_in_force",
                violation_error_message="Another calendar is in force: take it out of force "
                "first (one calendar at a time).",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def schedule(self) -> Schedule:
        """CalendarError if the stored hours cannot be read: admin's form (tickets/admin.py)
        and calendar_set validate them before they are stored."""
        return business_hours.schedule_from(
            time_zone=self.time_zone, weekly_hours=self.weekly_hours, holidays=self.holidays
        )


def calendar_in_force() -> BusinessCalendar | None:
    return BusinessCalendar.objects.filter(active=True).first()


def active_schedule() -> Schedule | None:
    """The schedule the SLA clocks count in now; None: every hour counts."""
    calendar = calendar_in_force()
    if calendar is None:
        return None
    try:
        return calendar.schedule()
    except CalendarError:
        # Only a write around validation (a shell, raw SQL) stores one; a ticket must still
        # open, so the clocks count every hour until someone fixes it.
        logger.exception("Business calendar %r cannot be read; counting every hour", calendar.pk)
        return None


def _require_supervisor(actor) -> None:
    if not is_supervisor(actor):
        raise Forbidden("Only supervisors set the business hours.")


def normal_holidays(holidays: list[dict]) -> list[dict]:
    """Sorted by date, each `{"date", "name"}` (a missing name is blank)."""
    rows = [{"date": row["date"], "name": row.get("name", "").strip()} for row in holidays]
    return sorted(rows, key=lambda row: row["date"])


@transaction.atomic
def calendar_set(
    *, actor, name: str, time_zone: str, weekly_hours: dict, holidays: list[dict]
) -> BusinessCalendar:
    """Put the calendar called `name` in force with these hours and holidays (made if there is
    none of that name; any other in force is taken out). Existing due times do not move."""
    _require_supervisor(actor)
    try:
        schedule = business_hours.schedule_from(
            time_zone=time_zone, weekly_hours=weekly_hours, holidays=holidays
        )
    except CalendarError as error:
        raise ApplicationError(
            error.message, code="invalid", extra={"fields": {error.field: [error.message]}}
        ) from None
    values = {
        "time_zone": time_zone,
        "weekly_hours": business_hours.normal_week(schedule.week),
        "holidays": normal_holidays(holidays),
        "active": True,
    }
    try:
        with transaction.atomic():
            BusinessCalendar.objects.filter(active=True).exclude(name=name).update(active=False)
            calendar, _ = BusinessCalendar.objects.update_or_create(name=name, defaults=values)
    except IntegrityError:
        # Another supervisor put a calendar in force at the same moment.
        raise Conflict(
            "The business hours changed at the same time; reload and try again.",
            code="calendar_changed",
        ) from None
    logger.info("Business calendar %r put in force by %s", name, actor.get_username())
    return calendar


@transaction.atomic
def calendar_clear(*, actor) -> None:
    """No calendar in force: the SLA clocks count every hour again (for new due times)."""
    _require_supervisor(actor)
    if BusinessCalendar.objects.filter(active=True).update(active=False):
        logger.info("Business hours taken out of force by %s", actor.get_username())
