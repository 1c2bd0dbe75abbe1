"""Other apps' news, posted on the ticket it concerns. Connected in DeskConfig.ready()."""

from tickets.models import TicketMessage
from tickets.services import ticket_post_message


def post_refund_note(sender, *, refund, body: str, **kwargs) -> None:
    """refunds.signals.refund_note: an internal system message on the refund's ticket."""
    ticket_post_message(
        ticket=refund.ticket, author_kind=TicketMessage.AuthorKind.SYSTEM, body=body
    )
