from django.db import transaction

from tickets.models import Ticket, TicketMessage


@transaction.atomic
def ticket_post_message(
    *, ticket: Ticket, author_kind: str, body: str, author=None
) -> TicketMessage:
    message = TicketMessage.objects.create(
        ticket=ticket, author_kind=author_kind, body=body, author=author
    )
    Ticket.objects.filter(pk=ticket.pk).update(updated_at=message.created_at)
    return message
