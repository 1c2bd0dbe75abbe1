"""Applying a macro (DESIGN §15): its body rendered from the ticket's state as it is now, and
its actions, for the agent to review. Nothing is sent or changed here: the agent edits the
text and sends it as a reply, and confirms the actions, through the usual services.

In `desk` rather than `tickets` because the refund placeholders read the ticket's current
refund request, and the refunds app sits above tickets."""

from dataclasses import dataclass

from django.contrib.auth.models import User
from django.db.models import Q, QuerySet

from config.errors import Conflict, Forbidden
from config.roles import support_role
from refunds.models import RefundRequest
from tickets.models import MACRO_PLACEHOLDER, Macro, Ticket


@dataclass(frozen=True)
class AppliedMacro:
    body: str
    visibility: str
    actions: dict


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
    agent_name = agent.get_full_name().strip() or agent.username
    return {
        "customer.name": name or None,
        "customer.first_name": name.split()[0] if name else None,
        "ticket.reference": ticket.reference,
        "order.id": ticket.order.order_id if ticket.order else None,
        "agent.name": agent_name,
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
    used = set(MACRO_PLACEHOLDER.findall(macro.body))
    missing = sorted(name for name in used if values.get(name) is None)
    if missing:
        names = ", ".join(f"{{{{{name}}}}}" for name in missing)
        raise Conflict(
            f"{macro.name!r} cannot be used on {ticket.reference}: it has no value for {names}.",
            code="macro_unappliable",
            extra={"missing": missing},
        )
    body = MACRO_PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), macro.body)
    return AppliedMacro(body=body, visibility=macro.visibility, actions=dict(macro.actions))
