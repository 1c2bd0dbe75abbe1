"""The email a public reply becomes: subject with the ticket reference, threading headers, the
agent's words and files. Sent through Django's mail framework (EMAIL_URL picks the backend)."""

import smtplib
import uuid

from django.conf import settings
from django.core.mail import EmailMessage

from orders.addresses import at_a_host_not_a_domain
from tickets.people import sign_off

# What a mail server that is down, slow or refusing raises: the reply stays queued and is
# tried again. Anything else is a bug and surfaces as one.
MAIL_SERVER_ERRORS = (smtplib.SMTPException, OSError)


def message_id_domain() -> str:
    """The right-hand side of our Message-IDs: the sender's domain (never a DNS lookup)."""
    return settings.DEFAULT_FROM_EMAIL.rpartition("@")[2].strip("> ") or "refund-desk.local"


def new_message_id(ticket) -> str:
    """A Message-ID no other message has: 128 random bits (email.utils.make_msgid draws from
    only 100,000 values per hundredth of a second, and the column is unique)."""
    return f"<{uuid.uuid4().hex}.{ticket.reference.lower()}@{message_id_domain()}>"


def reply_subject(ticket) -> str:
    return f"[{ticket.reference}] {ticket.subject}"


def reply_email(message) -> EmailMessage:
    ticket = message.ticket
    earlier = [(header_message_id(mid), kind) for mid, kind in _thread_before(message)]
    customers = [mid for mid, kind in earlier if kind == "customer"]
    headers = {"Message-ID": message.message_id, "X-Desk-Ticket": ticket.reference}
    if earlier:
        # Answer the customer's latest email if there is one, else our own latest reply.
        headers["In-Reply-To"] = (customers or [mid for mid, _ in earlier])[-1]
        headers["References"] = " ".join(mid for mid, _ in earlier)
    email = EmailMessage(
        subject=reply_subject(ticket),
        body=_body(message),
        from_email=settings.DEFAULT_FROM_EMAIL,
        to=[ticket.customer.email],
        # DESIGN §15: public replies go to the ticket's CC list as it is when sent.
        # Less any address at an IP or a bare host, kept from before CC refused them.
        cc=[address for address in ticket.cc or [] if not at_a_host_not_a_domain(address)],
        headers=headers,
    )
    _attach_files(email, message)
    return email


def _attach_files(email: EmailMessage, message) -> None:
    """The reply's files (DESIGN §15), read back from storage with the type read from their
    bytes when they were received."""
    # A file purged past retention (ops/retention.py) has no bytes left to send.
    for attachment in message.attachments.exclude(file=""):
        with attachment.file.open("rb") as stored:
            email.attach(attachment.filename, stored.read(), attachment.content_type)


def _thread_before(message) -> list[tuple[str, str]]:
    """(Message-ID, author kind) of the ticket's emails before this one, oldest first."""
    earlier = (
        message.ticket.messages.filter(message_id__isnull=False, created_at__lte=message.created_at)
        .exclude(pk=message.pk)
        .order_by("created_at", "id")
        .values_list("message_id", "author_kind")
    )
    return [(mid, kind) for mid, kind in earlier if is_header_safe(mid)]


def is_header_safe(message_id: str) -> bool:
    """A Message-ID that can go into a header as it is: visible ASCII only. It comes from the
    customer's mail gateway, and a line break in it would start a header of its own."""
    return bool(message_id) and all("!" <= char <= "~" for char in message_id)


def header_message_id(message_id: str) -> str:
    """In angle brackets, as RFC 5322 writes a msg-id (some gateways send the bare id)."""
    return message_id if message_id.startswith("<") else f"<{message_id}>"


def _body(message) -> str:
    return (
        f"{message.body}\n\n"
        f"-- \n{sign_off(message.author)}\n"
        f"Reply to this email to continue; please keep [{message.ticket.reference}] "
        "in the subject.\n"
    )


def survey_email(survey, *, links: dict[str, str]) -> EmailMessage:
    """The satisfaction survey of a solve (tickets/satisfaction.py): to the customer alone, not
    threaded under the replies (a Message-ID of its own, no In-Reply-To), marked as sent by
    the desk so autoresponders leave it alone. The subject keeps the reference: an answer by
    email lands on the ticket like any other."""
    ticket = survey.ticket
    days = (survey.expires_at - survey.created_at).days
    body = (
        f"Hello {ticket.customer.name},\n\n"
        f"we marked your request [{ticket.reference}] “{ticket.subject}” as solved. "
        "How did we do? One click is enough:\n\n"
        f"Good: {links['good']}\n\n"
        f"Bad: {links['bad']}\n\n"
        f"You can add a comment on the page that opens. The links work once, for {days} days; "
        "no account or password is needed.\n"
        "If something is still not right, just reply to this email.\n\n"
        f"-- \n{sign_off(None)}\n"
    )
    return EmailMessage(
        subject=f"[{ticket.reference}] How did we do?",
        body=body,
        from_email=settings.DEFAULT_FROM_EMAIL,
        to=[ticket.customer.email],
        headers={
            "Message-ID": new_message_id(ticket),
            "X-Desk-Ticket": ticket.reference,
            "Auto-Submitted": "auto-generated",
        },
    )


def describe_error(exc: BaseException) -> str:
    """A short, secret-free reason for the desk (no credentials, no stack)."""
    if isinstance(exc, smtplib.SMTPResponseException):
        text = (
            exc.smtp_error.decode(errors="replace")
            if isinstance(exc.smtp_error, bytes)
            else str(exc.smtp_error)
        )
        return f"mail server answered {exc.smtp_code}: {text}"[:500]
    if isinstance(exc, smtplib.SMTPRecipientsRefused):
        return "mail server refused the recipient"
    return f"mail server unavailable ({type(exc).__name__})"[:500]
