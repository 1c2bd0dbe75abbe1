from celery import shared_task

from tickets.models import Ticket, TicketMessage
from tickets.services import ticket_post_message


@shared_task
def post_system_message(reference: str, body: str) -> None:
    """Tell a ticket what happened, from a worker (e.g. after a refund settles)."""
    ticket = Ticket.objects.filter(reference=reference).first()
    if ticket is not None:
        ticket_post_message(ticket=ticket, author_kind=TicketMessage.AuthorKind.SYSTEM, body=body)
