"""Ticket numbers (TCK-1001, TCK-1002, …): the next one from the counter, whose row stays locked
until the new ticket commits so no two tickets take the same number, and a new ticket made
under it. Apart because it is the one place that locks the counter (TicketCounter)."""

from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import F, IntegerField, Max
from django.db.models.functions import Cast, Substr

from tickets.models import Ticket, TicketCounter

FIRST_REFERENCE_NUMBER = 1001


def _highest_number() -> int:
    number = Cast(Substr("reference", 5), IntegerField())
    return Ticket.objects.aggregate(n=Max(number))["n"] or FIRST_REFERENCE_NUMBER - 1


def _take_number() -> int:
    """The next ticket number. The counter's row stays locked until the caller's transaction
    ends: tickets opened at the same time take their numbers one after another."""
    number = _moved_counter()
    if number is not None:
        return number
    try:
        with transaction.atomic():
            # No counter yet (a new database, or one emptied by a test): it starts after the
            # highest reference.
            return TicketCounter.objects.create(pk=1, last=_highest_number() + 1).last
    except IntegrityError:  # another new ticket started it first: it is there now
        number = _moved_counter()
        assert number is not None
        return number


def _moved_counter() -> int | None:
    """The counter moved on by one (None: there is none yet). The UPDATE locks its row, and
    the read sees this transaction's own number."""
    counter = TicketCounter.objects.filter(pk=1)
    with transaction.atomic():
        if not counter.update(last=F("last") + 1):
            return None
        return counter.values_list("last", flat=True).get()


def _numbered_ticket(**fields: Any) -> Ticket:
    """A new ticket under the next number from the counter."""
    reference = f"TCK-{_take_number()}"
    try:
        with transaction.atomic():
            return Ticket.objects.create(reference=reference, **fields)
    except IntegrityError:
        if not Ticket.objects.filter(reference=reference).exists():
            raise
    # The number was given outside the counter (the demo's tickets, tickets imported with their
    # references): the counter moves past the highest, its row still held.
    number = _highest_number() + 1
    TicketCounter.objects.filter(pk=1).update(last=number)
    return Ticket.objects.create(reference=f"TCK-{number}", **fields)
