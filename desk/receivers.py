"""Other apps' news, posted on the ticket it concerns. Connected in DeskConfig.ready()."""

from config.money import money_str
from tickets.changes import ticket_change_append
from tickets.models import TicketChange, TicketMessage
from tickets.services.messages import ticket_post_message


def post_refund_note(sender, *, refund, body: str, **kwargs) -> None:
    """refunds.signals.refund_note: an internal system message on the refund's ticket."""
    ticket_post_message(
        ticket=refund.ticket, author_kind=TicketMessage.AuthorKind.SYSTEM, body=body
    )


def post_refund_change(sender, *, refund, actor=None, **kwargs) -> None:
    """refunds.signals.refund_changed: `refund.status` on the ticket's live stream, with what
    the refunds and order panels show of the request."""
    ticket_change_append(
        ticket_id=refund.ticket_id,
        type=TicketChange.Type.REFUND_STATUS,
        data={
            "request_id": refund.request_id,
            "order_id": refund.order.order_id,
            "amount": money_str(refund.amount),
            "currency": refund.currency,
            "status": refund.status,
        },
        actor=actor,
    )
