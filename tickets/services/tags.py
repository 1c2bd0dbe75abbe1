"""Tags on a ticket (DESIGN §15): what a tag name may be, the tag of a name in any case (made
on first use), and adding and removing them. The desk's bulk changes check names here before
they change any ticket, and the API's serializers take the same limits."""

import re
from collections.abc import Sequence

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction

from config.errors import ApplicationError
from config.roles import support_role
from tickets.models import Tag, Ticket, TicketEvent
from tickets.services.shared import _event, _require, _touch

TAG_MAX_LENGTH = 50
TAGS_PER_CHANGE = 20
# Letters and digits in any script, and a few joiners; no leading or trailing punctuation.
TAG_NAME = re.compile(r"^\w(?:[\w .:/+-]*\w)?$")


def clean_tag_names(names: Sequence[str], *, field: str) -> list[str]:
    """Each name trimmed, inner spaces collapsed, duplicates (ignoring case) dropped;
    ApplicationError naming `field` for a bad one (bulk changes check a body with it before
    changing any ticket)."""
    if len(names) > TAGS_PER_CHANGE:
        raise ApplicationError(
            f"At most {TAGS_PER_CHANGE} tags in one change.",
            code="invalid",
            extra={"fields": {field: [f"At most {TAGS_PER_CHANGE} tags."]}},
        )
    cleaned: dict[str, str] = {}
    for name in names:
        name = " ".join(name.split())
        if not name or len(name) > TAG_MAX_LENGTH or not TAG_NAME.match(name):
            raise ApplicationError(
                f"{name[:60]!r} is not a tag name: 1 to {TAG_MAX_LENGTH} letters, digits, "
                "spaces or . : / + - _, starting and ending with a letter or digit.",
                code="invalid_tag",
                extra={"fields": {field: ["Not a tag name."]}},
            )
        cleaned.setdefault(name.lower(), name)
    return list(cleaned.values())


def tag_for_name(name: str) -> Tag:
    """The tag called `name` in any case, made if there is none (the first spelling stays)."""
    tag = Tag.objects.filter(name__iexact=name).first()
    if tag is not None:
        return tag
    try:
        with transaction.atomic():
            return Tag.objects.create(name=name)
    except IntegrityError:
        # Made at the same moment by someone else: tag_name_unique_ignoring_case.
        return Tag.objects.get(name__iexact=name)


@transaction.atomic
def ticket_change_tags(
    *, ticket: Ticket, actor: User, add: Sequence[str] = (), remove: Sequence[str] = ()
) -> Ticket:
    """Add and remove tags (names in any case); one tags_changed event when anything changed.
    A name in both lists is left as it is, so nothing depends on which is applied first."""
    _require(support_role(actor) is not None, "Only interns, agents and supervisors tag tickets.")
    add, remove = clean_tag_names(add, field="add"), clean_tag_names(remove, field="remove")
    both = {name.lower() for name in add} & {name.lower() for name in remove}
    add = [name for name in add if name.lower() not in both]
    remove = [name for name in remove if name.lower() not in both]
    # Two people tagging at once: each change starts where the other ended.
    Ticket.objects.select_for_update().filter(pk=ticket.pk).first()
    current = {tag.name.lower(): tag for tag in ticket.tags.all()}
    added = [tag_for_name(name) for name in add if name.lower() not in current]
    removed = [current[name.lower()] for name in remove if name.lower() in current]
    if not added and not removed:
        return ticket
    ticket.tags.add(*added)
    ticket.tags.remove(*removed)
    _touch(ticket)
    _event(
        ticket,
        TicketEvent.Type.TAGS_CHANGED,
        actor,
        added=[tag.name for tag in added],
        removed=[tag.name for tag in removed],
    )
    return ticket
