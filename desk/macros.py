"""Applying a macro (DESIGN §15): its body rendered from the ticket's state as it is now, and
its actions, for the agent to review. Nothing is sent or changed here: the agent edits the
text and sends it as a reply, and confirms the actions, through the usual services.

In `desk` rather than `tickets` because the refund placeholders read the ticket's current
refund request, and the refunds app sits above tickets."""

from dataclasses import dataclass

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Q, QuerySet

from agent.drafts import customer_language
from config.errors import Conflict, Forbidden
from config.roles import support_role
from refunds.models import RefundRequest
from tickets import services
from tickets.models import MACRO_PLACEHOLDER, Macro, Ticket
from tickets.people import display_name


@dataclass(frozen=True)
class AppliedMacro:
    body: str
    visibility: str
    actions: dict


def macro_text(macro: Macro, ticket: Ticket) -> tuple[str, str]:
    """(the language, the text) of `macro` for the ticket's customer: their language (that of
    their latest message, as drafts read it) when the macro is written in it, else the body
    with language ""."""
    language = customer_language(ticket)
    if language in macro.translations:
        return language, macro.translations[language]
    return "", macro.body


def macros_for(user: User) -> QuerySet[Macro]:
    """The shared macros and the user's own."""
    return Macro.objects.filter(Q(owner__isnull=True) | Q(owner=user))


def _current_refund(ticket: Ticket) -> RefundRequest | None:
    """The ticket's newest refund request, read now (never one cached with the page)."""
    return ticket.refund_requests.order_by("-created_at", "-id").first()


def _values(ticket: Ticket, agent: User) -> dict[str, str | None]:
    customer = ticket.customer
    refund = _current_refund(ticket)
    name = customer.name.strip()
    return {
        "customer.name": name or None,
        "customer.first_name": name.split()[0] if name else None,
        "ticket.reference": ticket.reference,
        "order.id": ticket.order.order_id if ticket.order else None,
        "agent.name": display_name(agent),
        "refund.amount": f"{refund.amount} {refund.currency}" if refund else None,
        "refund.status": refund.status.replace("_", " ") if refund else None,
    }


def macro_apply(*, macro: Macro, ticket: Ticket, agent: User) -> AppliedMacro:
    """The macro rendered for this ticket and agent. Conflict (code
    "macro_unappliable", 409) naming every placeholder this ticket has no value for."""
    if support_role(agent) is None:
        raise Forbidden("Only support staff apply macros.")
    if macro.owner_id is not None and macro.owner_id != agent.pk:
        raise Forbidden("Not one of your macros: it is another agent's own.")
    ticket = Ticket.objects.select_related("customer", "order").get(pk=ticket.pk)
    values = _values(ticket, agent)
    _, text = macro_text(macro, ticket)
    used = set(MACRO_PLACEHOLDER.findall(text))
    missing = sorted(name for name in used if values.get(name) is None)
    if missing:
        names = ", ".join(f"{{{{{name}}}}}" for name in missing)
        raise Conflict(
            f"{macro.name!r} cannot be used on {ticket.reference}: it has no value for {names}.",
            code="macro_unappliable",
            extra={"missing": missing},
        )
    body = MACRO_PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), text)
    return AppliedMacro(body=body, visibility=macro.visibility, actions=dict(macro.actions))


@transaction.atomic
def macro_confirm_actions(*, macro: Macro, ticket: Ticket, agent: User) -> list[str]:
    """The agent confirms the macro's actions: each through its own service (which checks the
    agent's role and records its event), all or none. Returns what changed, in words."""
    if macro.owner_id is not None and macro.owner_id != agent.pk:
        raise Forbidden("Not one of your macros: it is another agent's own.")
    actions, done = macro.actions, []
    if actions.get("add_tags"):
        services.ticket_change_tags(ticket=ticket, actor=agent, add=actions["add_tags"])
        done.append("tagged " + ", ".join(actions["add_tags"]))
    if actions.get("priority") and actions["priority"] != ticket.priority:
        services.ticket_set_priority(ticket=ticket, priority=actions["priority"], actor=agent)
        done.append(f"priority {actions['priority']}")
    if actions.get("status") and actions["status"] != ticket.status:
        services.ticket_set_status(ticket=ticket, to_status=actions["status"], actor=agent)
        done.append(f"status {actions['status']}")
    return done
