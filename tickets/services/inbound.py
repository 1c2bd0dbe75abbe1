"""New tickets and customer mail: opening a ticket (from a customer's email, or by an agent
from a call or chat), the customer an email address stands for, and receiving an email, which
lands on the sender's own ticket named in the subject (following merges) or opens a new one.
Idempotent on the email's Message-ID."""

import re
from collections.abc import Sequence
from dataclasses import dataclass

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.utils import timezone

from config.errors import ApplicationError
from config.roles import support_role
from orders.addresses import email_key
from orders.models import Customer, Order
from tickets import attachment_files, attachments, changes, mail, sla
from tickets.attachments import Upload
from tickets.models import Ticket, TicketEvent, TicketMessage
from tickets.services.cc import _add_cc
from tickets.services.messages import ticket_post_message
from tickets.services.numbering import _numbered_ticket
from tickets.services.shared import _event, _require
from tickets.services.status import REOPENED_BY_CUSTOMER, ticket_set_status

S = Ticket.Status
V = TicketMessage.Visibility

TICKET_REFERENCE_IN_SUBJECT = re.compile(r"\[(TCK-[0-9]+)\]")
ORDER_ID_IN_TEXT = re.compile(r"(?<![0-9])[0-9]{8,20}(?![0-9])")


def _order_mentioned(customer: Customer, *texts: str) -> Order | None:
    """The first of this customer's orders named in the text (never another customer's)."""
    for order_id in ORDER_ID_IN_TEXT.findall(" ".join(texts)):
        order = Order.objects.filter(order_id=order_id, customer=customer).first()
        if order is not None:
            return order
    return None


@transaction.atomic
def ticket_open(
    *,
    customer: Customer,
    subject: str,
    body: str,
    order: Order | None = None,
    opened_by: User | None = None,
    message_id: str | None = None,
    priority: str = Ticket.Priority.NORMAL,
) -> Ticket:
    """A new ticket with the customer's first message (from their email, or recorded by an
    agent from a call or chat), numbered by the counter: see _take_number."""
    if opened_by is not None:
        _require(support_role(opened_by) is not None, "Only support staff open tickets.")
    if order is not None and order.customer_id != customer.pk:
        raise ApplicationError(
            f"Order {order.order_id} is not {customer.name}'s.",
            code="order_not_customers",
            extra={"fields": {"order_id": ["Not this customer's order."]}},
        )
    subject = " ".join(subject.split())[:200] or "(no subject)"
    order = order or _order_mentioned(customer, subject, body)
    now = timezone.now()
    first_due, resolution_due = sla.due_times(priority=priority, opened_at=now)
    ticket = _numbered_ticket(
        customer=customer,
        subject=subject,
        order=order,
        priority=priority,
        first_response_due_at=first_due,
        resolution_due_at=resolution_due,
    )
    changes.ticket_opened(ticket)
    _event(ticket, TicketEvent.Type.CREATED, opened_by, via="desk" if opened_by else "email")
    ticket_post_message(
        ticket=ticket,
        author_kind=TicketMessage.AuthorKind.CUSTOMER,
        author=opened_by,
        body=body,
        visibility=V.PUBLIC,
        message_id=message_id,
    )
    return ticket


def customer_for_email(*, email: str, name: str = "") -> Customer:
    """The customer with this address (DESIGN invariant 11: equal after lower-casing ASCII and
    IDNA-encoding the domain, orders/addresses.py; nothing looser), or a new one named `name`,
    else the address's local part. BadAddress for a domain that cannot be encoded."""
    email = email.strip()
    key = email_key(email)
    customer = Customer.objects.filter(email_key=key).first()
    if customer is not None:
        return customer
    try:
        with transaction.atomic():
            return Customer.objects.create(email=email, name=name.strip() or email.split("@")[0])
    except IntegrityError:
        # Created by a simultaneous email from the same sender.
        customer = Customer.objects.filter(email_key=key).first()
        if customer is None:
            raise
        return customer


@dataclass(frozen=True)
class Inbound:
    ticket: Ticket
    created: bool  # a new ticket was opened for this email
    duplicate: bool = False  # this message_id was received before; nothing changed


def ticket_receive_email(
    *,
    sender: str,
    name: str,
    subject: str,
    body: str,
    message_id: str,
    cc: Sequence[str] = (),
    files: Sequence[Upload] = (),
) -> Inbound:
    """A customer's email: appended to their own ticket named `[TCK-…]` in the subject (which
    reopens it if pending or solved), otherwise a new ticket. Idempotent on `message_id`: the
    same email delivered twice is one message. Its files are checked before anything is
    written: one too large refuses the whole email (413), nothing kept."""
    message_id = message_id.strip()
    if not mail.is_header_safe(message_id):
        # It threads our replies (In-Reply-To): a space or line break there would break, or
        # add to, the headers of every reply on the ticket.
        raise ApplicationError(
            "message_id must be the email's Message-ID: visible ASCII, no spaces.",
            code="invalid",
            extra={"fields": {"message_id": ["Not a Message-ID."]}},
        )
    attachments.check_uploads(files, "attachments")
    seen = _already_received(message_id)
    if seen is not None:
        return seen
    try:
        with attachment_files.atomic():
            inbound = _receive(sender, name, subject, body, message_id)
            _add_cc(inbound.ticket, list(cc))
            if files:
                attachments.attach(TicketMessage.objects.get(message_id=message_id), files)
            return inbound
    except IntegrityError:
        seen = _already_received(message_id)  # the same email, delivered twice at once
        if seen is None:
            raise
        return seen


def _already_received(message_id: str) -> Inbound | None:
    message = TicketMessage.objects.select_related("ticket").filter(message_id=message_id).first()
    if message is None:
        return None
    return Inbound(message.ticket, created=False, duplicate=True)


def _receive(sender: str, name: str, subject: str, body: str, message_id: str) -> Inbound:
    customer = customer_for_email(email=sender, name=name)
    ticket = _customers_open_ticket_in(subject, customer)
    if ticket is None:
        return Inbound(
            ticket_open(customer=customer, subject=subject, body=body, message_id=message_id),
            created=True,
        )
    ticket_post_message(
        ticket=ticket,
        author_kind=TicketMessage.AuthorKind.CUSTOMER,
        body=body,
        visibility=V.PUBLIC,
        message_id=message_id,
    )
    _event(ticket, TicketEvent.Type.CUSTOMER_REPLIED, None)
    if ticket.status in REOPENED_BY_CUSTOMER:
        ticket_set_status(ticket=ticket, to_status=S.OPEN, reason="customer replied")
    return Inbound(ticket, created=False)


def _customers_open_ticket_in(subject: str, customer: Customer) -> Ticket | None:
    """The first ticket the subject names that is this customer's and not closed; a ticket
    merged into another stands for the one it was merged into (DESIGN §19). A sender naming
    someone else's ticket gets a ticket of their own: nothing lands on, or reveals, another's.
    Locked, so a status change and this email do not cross."""
    for reference in TICKET_REFERENCE_IN_SUBJECT.findall(subject):
        ticket = _merged_target(reference, customer)
        if ticket is not None and ticket.status != S.CLOSED:
            return ticket
    return None


# Merges chain (A into B, later B into C); a longer chain than this is not followed.
MERGE_CHAIN_LIMIT = 20


def _merged_target(reference: str, customer: Customer) -> Ticket | None:
    """The customer's ticket of that reference, or the ticket it was (in the end) merged
    into, locked. Merges only join one customer's tickets, so the chain stays theirs."""
    tickets = Ticket.objects.select_for_update().filter(customer=customer)
    ticket = tickets.filter(reference=reference).first()
    for _ in range(MERGE_CHAIN_LIMIT):
        if ticket is None or ticket.merged_into_id is None:
            return ticket
        ticket = tickets.filter(pk=ticket.merged_into_id).first()
    return None
