"""One change to many tickets at once (DESIGN §19), from the ticket list's checkboxes.

Each ticket is changed by the same services as its own page (tickets/services/, and
desk/merge/services.py for a merge), in a transaction of its own: a ticket those services
refuse keeps everything as it was and is named in the results with the reason, and the others
are changed all the same. Every change leaves the events and live changes a change on the
ticket's page leaves. It lives in the desk because a merge does."""

from dataclasses import dataclass, field

from django.contrib.auth.models import User

from config.errors import ApplicationError, Forbidden
from config.roles import Role, support_role
from config.transactions import atomic_retried
from desk.merge.services import ticket_merge
from tickets import services
from tickets.models import Ticket

BULK_MAX_TICKETS = 100
# Who may ask for each action: the roles of the same change on one ticket.
WORKS_TICKETS = (Role.AGENT, Role.SUPERVISOR)
ACTION_ROLES: dict[str, tuple[tuple[str, ...], str]] = {
    "assign": (WORKS_TICKETS, "Only agents and supervisors assign tickets."),
    "status": (WORKS_TICKETS, "Only agents and supervisors change a ticket's status."),
    "priority": (WORKS_TICKETS, "Only agents and supervisors change a ticket's priority."),
    "merge_into": (WORKS_TICKETS, "Only agents and supervisors merge tickets."),
    "add_tags": (
        (Role.INTERN, Role.AGENT, Role.SUPERVISOR),
        "Only interns, agents and supervisors tag tickets.",
    ),
}


@dataclass(frozen=True)
class BulkChange:
    """What to do to each ticket. `assign` is only applied when `assigns` (None unassigns)."""

    assigns: bool = False
    assign: User | None = None
    status: str = ""
    priority: str = ""
    add_tags: tuple[str, ...] = ()
    merge_into: Ticket | None = None

    def actions(self) -> list[str]:
        given = {
            "assign": self.assigns,
            "status": bool(self.status),
            "priority": bool(self.priority),
            "add_tags": bool(self.add_tags),
            "merge_into": self.merge_into is not None,
        }
        return [name for name, asked in given.items() if asked]


@dataclass(frozen=True)
class BulkResult:
    ticket: str
    ok: bool
    code: str = ""
    message: str = ""
    extra: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        if self.ok:
            return {"ticket": self.ticket, "ok": True, **self.extra}
        return {
            "ticket": self.ticket,
            "ok": False,
            "code": self.code,
            "message": self.message,
            "extra": self.extra,
        }


def check_may_bulk(actor: User, actions: list[str]) -> None:
    """Refuse the whole request when the actor's role may not do one of the actions on any
    ticket (an intern may add tags, nothing else of these)."""
    role = support_role(actor)
    for action in actions:
        roles, refusal = ACTION_ROLES[action]
        if role not in roles:
            raise Forbidden(refusal, extra={"action": action})


def tickets_bulk_change(
    *, references: list[str], change: BulkChange, actor: User
) -> list[BulkResult]:
    """`change` on each ticket of `references`, in the order given, each in its own
    transaction; a result per reference. Precondition: the body was checked (check_may_bulk,
    known status and priority, the assignee and merge target resolved)."""
    check_may_bulk(actor, change.actions())
    found = {t.reference: t.pk for t in Ticket.objects.filter(reference__in=references)}
    results = []
    for reference in references:
        if reference not in found:
            results.append(
                BulkResult(reference, False, "not_found", f"There is no ticket {reference}.")
            )
            continue
        try:
            extra = _change_one(ticket_id=found[reference], change=change, actor=actor)
        except ApplicationError as exc:
            results.append(BulkResult(reference, False, exc.code, exc.message, exc.extra))
        else:
            results.append(BulkResult(reference, True, extra=extra))
    return results


@atomic_retried
def _change_one(*, ticket_id: int, change: BulkChange, actor: User) -> dict:
    """Every action of `change` on one ticket, read afresh; all or nothing. The status goes
    last: solving asks the survey of whoever is assigned by then."""
    ticket = Ticket.objects.select_related("merged_into").get(pk=ticket_id)
    if change.merge_into is not None:
        if ticket.pk == change.merge_into.pk:
            return {"merge_target": True}
        ticket_merge(source=ticket, target=change.merge_into, actor=actor)
        return {}
    if change.assigns:
        services.ticket_assign(ticket=ticket, assignee=change.assign, actor=actor)
    if change.priority:
        services.ticket_set_priority(ticket=ticket, priority=change.priority, actor=actor)
    if change.add_tags:
        services.ticket_change_tags(ticket=ticket, actor=actor, add=change.add_tags)
    # Already there: nothing to move (one ticket's endpoint would call it a bad transition).
    if change.status and change.status != ticket.status:
        services.ticket_set_status(ticket=ticket, to_status=change.status, actor=actor)
    return {}
