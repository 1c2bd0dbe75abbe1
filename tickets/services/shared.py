"""What every write to a ticket does, whichever part of the ticket it changes: refuse a role
that may not (`_require`), stamp the ticket changed (`_touch`), and leave its history row
(`_event`), which also tells an open ticket page to redraw its panel of details. One module
that the other service modules import, so the three stay one rule each; underscored because
they are this package's own, not for callers outside tickets.services."""

from datetime import datetime
from typing import Any

from django.contrib.auth.models import User
from django.utils import timezone

from config.errors import Forbidden
from tickets import changes
from tickets.models import Ticket, TicketEvent


def _require(allowed: bool, message: str, code: str = "permission_denied") -> None:
    if not allowed:
        raise Forbidden(message, code=code)


def _touch(ticket: Ticket, now: datetime | None = None, **fields: Any) -> None:
    now = now or timezone.now()
    Ticket.objects.filter(pk=ticket.pk).update(updated_at=now, **fields)
    for name, value in fields.items():
        setattr(ticket, name, value)
    ticket.updated_at = now


# The events of what the ticket page's panel of details shows: an open page redraws it.
DETAIL_EVENTS: dict[str, str] = {
    TicketEvent.Type.PRIORITY_CHANGED: "priority",
    TicketEvent.Type.TAGS_CHANGED: "tags",
    TicketEvent.Type.CC_CHANGED: "cc",
}


def _event(ticket: Ticket, type: str, actor: User | None = None, **data: Any) -> TicketEvent:
    event = TicketEvent.objects.create(ticket=ticket, type=type, actor=actor, data=data)
    if type in DETAIL_EVENTS:
        changes.details_changed(ticket_id=ticket.pk, what=DETAIL_EVENTS[type])
    return event
