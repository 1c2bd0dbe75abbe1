"""The ticket page's history: each event of the ticket with its detail in words and who made
it. Apart because it is the page's one long piece of wording, read by nothing else."""

from dataclasses import dataclass

from tickets import selectors
from tickets.models import Ticket, TicketEvent


@dataclass(frozen=True)
class HistoryRow:
    event: TicketEvent
    detail: str
    who: str  # a desk user, the customer, or the desk itself


def _who(event: TicketEvent, customer_name: str) -> str:
    """Who made the change: the user, or the customer whose email did it."""
    data = event.data or {}
    if event.actor is not None:
        return event.actor.username
    by_customer = (
        event.type in (TicketEvent.Type.CUSTOMER_REPLIED, *SATISFACTION_EVENTS)
        or (event.type == TicketEvent.Type.CREATED and data.get("via") == "email")
        or data.get("reason") == "customer replied"
    )
    return customer_name if by_customer else "the desk"


def history_rows(ticket: Ticket) -> list[HistoryRow]:
    status_labels: dict[str, str] = dict(Ticket.Status.choices)
    rows = []
    for event in selectors.ticket_events(ticket):
        data = event.data or {}
        detail = ""
        if event.type == TicketEvent.Type.STATUS_CHANGED:
            before = status_labels.get(str(data.get("from")), data.get("from"))
            after = status_labels.get(str(data.get("to")), data.get("to"))
            detail = f"{before} → {after}"
            if data.get("reason"):
                detail += f" ({data['reason']})"
        elif event.type == TicketEvent.Type.ASSIGNED:
            detail = f"{data.get('from') or 'unassigned'} → {data.get('to') or 'unassigned'}"
        elif event.type in (TicketEvent.Type.ESCALATED, TicketEvent.Type.ESCALATION_CLEARED):
            detail = data.get("note", "")
        elif event.type == TicketEvent.Type.REPLY_FAILED:
            detail = data.get("error", "")
        elif event.type == TicketEvent.Type.CREATED:
            detail = "from the customer's email" if data.get("via") == "email" else "by the desk"
        elif event.type in (TicketEvent.Type.MERGED_INTO, TicketEvent.Type.MERGED_FROM):
            detail = data.get("reference", "")
        elif event.type == TicketEvent.Type.CLAIMS_CONFIRMED:
            detail = "; ".join(f"“{claim.get('text', '')}”" for claim in data.get("claims", []))
        elif event.type in SATISFACTION_EVENTS:
            detail = _satisfaction_words(data)
        rows.append(HistoryRow(event, detail, _who(event, ticket.customer.name)))
    return rows


SATISFACTION_EVENTS = (
    TicketEvent.Type.SATISFACTION_RATED,
    TicketEvent.Type.SATISFACTION_COMMENTED,
)


def _satisfaction_words(data: dict) -> str:
    """The customer's rating and comment as the history says them."""
    rating = str(data.get("rating", "")).capitalize()
    comment = f"“{data['comment']}”" if data.get("comment") else ""
    return " ".join(part for part in (rating, comment) if part)
