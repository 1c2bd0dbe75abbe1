"""DESIGN §15's SLA clocks. Each ticket has two targets, set from its priority's SlaPolicy:

* first response: due `first_response_hours` after the ticket was opened; met by the first
  public reply (ticket_write stamps `first_responded_at`);
* resolution: due `resolution_hours` after it was opened, plus every stretch the clock was
  stopped. The clock stops while the ticket waits on the customer (pending) and once it is
  solved; it starts again when the ticket reopens, and the due time moves by the pause.

With a business calendar in force (DESIGN §19, tickets/calendars.py) the hours are business
hours and a pause moves the due time by the business time it lasted (tickets/business_hours.py
states the rules); with none, every hour counts. Either way the due times are computed here,
when they are set or moved, and stored on the ticket: the sweep, the list's sort and filters and
the badge all read the stored columns, so they agree by construction. A calendar change moves
no stored due time.

A target is *running* while it can still be met: the first response until it is given (open
or pending), the resolution while the ticket is open. A running target past its due time is
breached; the sweep records that once per target (record_breaches)."""

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Case, Count, F, Q, QuerySet, When
from django.db.models.functions import Least
from django.utils import timezone

from tickets import business_hours, calendars, changes
from tickets.models import SlaPolicy, Ticket, TicketEvent

logger = logging.getLogger(__name__)

S = Ticket.Status
P = Ticket.Priority

# Seeded by tickets/migrations/0008 and used for a priority whose policy row is missing:
# (first response, resolution) in hours.
DEFAULT_HOURS: dict[str, tuple[int, int]] = {
    P.URGENT: (1, 8),
    P.HIGH: (4, 24),
    P.NORMAL: (8, 48),
    P.LOW: (24, 120),
}
# Statuses that stop the resolution clock: waiting on the customer, or done.
PAUSED = {S.PENDING, S.SOLVED}
FIRST_RESPONSE = "first_response"
RESOLUTION = "resolution"
TARGETS = (FIRST_RESPONSE, RESOLUTION)
SLA_STATES = ("breached", "due_soon")


def policy_hours(priority: str) -> tuple[int, int]:
    policy = SlaPolicy.objects.filter(priority=priority).first()
    if policy is None:
        return DEFAULT_HOURS[priority]
    return policy.first_response_hours, policy.resolution_hours


def due_times(
    *,
    priority: str,
    opened_at: datetime,
    paused_seconds: int = 0,
    paused_business_seconds: int = 0,
) -> tuple[datetime, datetime]:
    """(first response due, resolution due) for a ticket opened at `opened_at` whose clock has
    been stopped `paused_seconds` in all (`paused_business_seconds` of them business time), in
    the calendar in force."""
    first_hours, resolution_hours = policy_hours(priority)
    schedule = calendars.active_schedule()
    if schedule is None:
        return (
            opened_at + timedelta(hours=first_hours),
            opened_at + timedelta(hours=resolution_hours, seconds=paused_seconds),
        )
    return (
        _business_due(opened_at, first_hours * 3600, schedule),
        _business_due(opened_at, resolution_hours * 3600 + paused_business_seconds, schedule),
    )


def _business_due(start: datetime, seconds: int, schedule: business_hours.Schedule) -> datetime:
    try:
        return business_hours.add_business_time(start, seconds, schedule)
    except business_hours.NoBusinessHours:
        # Holidays over every open day for years on end: a ticket must still get a due time.
        logger.error("The business calendar has no open hours ahead; counting every hour")
        return start + timedelta(seconds=seconds)


def clock_fields_for_move(ticket: Ticket, from_status: str, to_status: str, now: datetime) -> dict:
    """The clock's fields to write with a status move. Precondition: the caller holds the
    ticket's row (its compare-and-swap on the status), so `ticket`'s clock fields are the
    row's."""
    was_paused = from_status in PAUSED
    if to_status in PAUSED and not was_paused:
        return {"sla_paused_at": now}
    if to_status == S.OPEN and was_paused and ticket.sla_paused_at is not None:
        paused = max(0, int((now - ticket.sla_paused_at).total_seconds()))
        schedule = calendars.active_schedule()
        business = max(
            0, int(business_hours.business_seconds_between(ticket.sla_paused_at, now, schedule))
        )
        fields: dict = {
            "sla_paused_at": None,
            "sla_paused_seconds": ticket.sla_paused_seconds + paused,
            "sla_paused_business_seconds": ticket.sla_paused_business_seconds + business,
        }
        if ticket.resolution_due_at is not None:
            # The business time left at the pause is left still (tickets/business_hours.py).
            due = ticket.resolution_due_at
            fields["resolution_due_at"] = (
                due + timedelta(seconds=business)
                if schedule is None
                else _business_due(due, business, schedule)
            )
        return fields
    return {}


# --- reading the clocks --------------------------------------------------------------------


def next_due(ticket: Ticket) -> datetime | None:
    """When the ticket's earliest running target is due (None: nothing is running)."""
    dues = []
    if (
        ticket.first_responded_at is None
        and ticket.status in (S.OPEN, S.PENDING)
        and ticket.first_response_due_at is not None
    ):
        dues.append(ticket.first_response_due_at)
    if ticket.status == S.OPEN and ticket.resolution_due_at is not None:
        dues.append(ticket.resolution_due_at)
    return min(dues, default=None)


def due_soon_window() -> timedelta:
    return timedelta(minutes=settings.SLA_DUE_SOON_MINUTES)


def sla_state(ticket: Ticket, now: datetime | None = None) -> str | None:
    """ "breached", "due_soon" (within SLA_DUE_SOON_MINUTES), "on_track", or None when no
    target is running (met, paused, or the ticket predates SLAs)."""
    due = next_due(ticket)
    if due is None:
        return None
    now = now or timezone.now()
    if due <= now:
        return "breached"
    return "due_soon" if due <= now + due_soon_window() else "on_track"


def with_due(tickets: QuerySet[Ticket]) -> QuerySet[Ticket]:
    """`tickets` annotated with `due_at`: next_due in SQL, for sorting and filtering."""
    first_running = Q(
        first_responded_at__isnull=True,
        first_response_due_at__isnull=False,
        status__in=[S.OPEN, S.PENDING],
    )
    return tickets.annotate(
        due_at=Case(
            When(
                first_running & Q(status=S.OPEN, resolution_due_at__isnull=False),
                then=Least("first_response_due_at", "resolution_due_at"),
            ),
            When(first_running, then=F("first_response_due_at")),
            When(status=S.OPEN, then=F("resolution_due_at")),
            default=None,
        )
    )


def breached_q(now: datetime) -> Q:
    """A running target is past due: the same as `due_at <= now`, written per target so that
    PostgreSQL can answer each half from its own due-time column."""
    first_late = Q(
        first_responded_at__isnull=True,
        status__in=[S.OPEN, S.PENDING],
        first_response_due_at__lte=now,
    )
    return first_late | Q(status=S.OPEN, resolution_due_at__lte=now)


def filter_state(tickets: QuerySet[Ticket], state: str, now: datetime | None = None) -> QuerySet:
    now = now or timezone.now()
    tickets = with_due(tickets)
    if state == "breached":
        return tickets.filter(breached_q(now))
    # Keyword dicts: the type checker knows the model's fields, not the annotation.
    return tickets.filter(**{"due_at__gt": now, "due_at__lte": now + due_soon_window()})


def breached_by_priority(now: datetime | None = None) -> dict[str, int]:
    """Tickets with a running target past due, counted by priority (every priority listed)."""
    counts = dict.fromkeys(P.values, 0)
    rows = (
        Ticket.objects.filter(breached_q(now or timezone.now()))
        .order_by()
        .values_list("priority")
        .annotate(n=Count("id"))
    )
    for priority, n in rows:
        counts[priority] = n
    return counts


# --- the sweep -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    name: str
    due: str  # the ticket's field holding its due time
    breached: str  # the field the sweep stamps
    running: Q


RUNNING = (
    Target(
        FIRST_RESPONSE,
        "first_response_due_at",
        "first_response_breached_at",
        Q(first_responded_at__isnull=True, status__in=[S.OPEN, S.PENDING]),
    ),
    Target(RESOLUTION, "resolution_due_at", "resolution_breached_at", Q(status=S.OPEN)),
)


def record_breaches(*, now: datetime | None = None) -> int:
    """Record one sla.breached event for every running target past due that has none yet.
    Each ticket's stamp and event commit together; the stamp is a compare-and-swap, so of two
    sweeps at once one records it (the other's update waits on the row, then matches
    nothing). Returns how many breaches this sweep recorded."""
    now = now or timezone.now()
    recorded = 0
    for target in RUNNING:
        due = Ticket.objects.filter(
            target.running,
            **{f"{target.breached}__isnull": True, f"{target.due}__lte": now},
        ).values_list("pk", "priority", target.due)
        for pk, priority, due_at in due:
            recorded += _record_breach(pk, target, priority, due_at, now)
    return recorded


def _record_breach(pk: int, target: Target, priority: str, due_at: datetime, now) -> int:
    try:
        with transaction.atomic():
            stamped = Ticket.objects.filter(
                target.running, pk=pk, **{f"{target.breached}__isnull": True}
            ).update(**{target.breached: now})
            if not stamped:
                return 0
            TicketEvent.objects.create(
                ticket_id=pk,
                type=TicketEvent.Type.SLA_BREACHED,
                data={"target": target.name, "priority": priority, "due_at": due_at.isoformat()},
            )
            changes.details_changed(ticket_id=pk, what="sla")
    except IntegrityError:
        # The one-breach-per-target constraint: recorded before the stamp existed.
        return 0
    logger.info("Ticket %s breached its %s target", pk, target.name)
    return 1
