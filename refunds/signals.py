"""What the refunds app has to tell the ticket a request belongs to.

Refunds know nothing of tickets beyond the foreign key: they send `refund_note`, and the
desk posts it on the ticket as a system message (desk/receivers.py). Receivers run
synchronously, in the sender's transaction: a note is written together with the change it
reports, or not at all.
"""

from django.dispatch import Signal

# Sent with refund=<RefundRequest> and body=<str>.
refund_note = Signal()
# Sent with refund=<RefundRequest> and actor=<User | None> whenever a request of a ticket is
# created or changes status or parameters, in the transaction that changed it: the ticket's
# live stream reports it (refund.status).
refund_changed = Signal()


def tell_ticket(refund, body: str) -> None:
    """Report `body` on the refund's ticket (a refund made outside a ticket has none)."""
    if refund.ticket_id is not None:
        refund_note.send(sender=type(refund), refund=refund, body=body)


def tell_ticket_changed(refund, actor=None) -> None:
    """Report on the refund's ticket's live stream that the request is now as it is."""
    if refund.ticket_id is not None:
        refund_changed.send(sender=type(refund), refund=refund, actor=actor)
