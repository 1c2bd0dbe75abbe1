"""Messages on a ticket: recording one as it is (the desk's notes, the assistant's answers,
customer mail), and a support member writing a note or a public reply. A reply is first read
by the claim check, and refused with ClaimsContradictState when the records contradict what it
says about a refund; the words the desk shows for such claims are here too. Sending the reply
is delivery's (tickets/services/delivery.py)."""

from collections.abc import Callable, Sequence
from datetime import datetime

from django.contrib.auth.models import User
from django.db import transaction

from config.celery import enqueue_on_commit
from config.errors import ApplicationError, Conflict
from config.refund_statuses import RefundStatus
from config.roles import Role, support_role
from tickets import attachment_files, attachments, changes, mail
from tickets.attachments import Upload
from tickets.models import Ticket, TicketEvent, TicketMessage
from tickets.services.delivery import SEND_REPLY_TASK
from tickets.services.shared import _event, _require, _touch

S = Ticket.Status
V = TicketMessage.Visibility
D = TicketMessage.Delivery


@transaction.atomic
def ticket_post_message(
    *,
    ticket: Ticket,
    author_kind: str,
    body: str,
    author: User | None = None,
    visibility: str = V.INTERNAL,
    message_id: str | None = None,
) -> TicketMessage:
    """Record a message as it is: no email, no permission check (the desk's own notes, the
    assistant's answers and customer mail come through here). Internal unless said otherwise."""
    message = TicketMessage.objects.create(
        ticket=ticket,
        author_kind=author_kind,
        body=body,
        author=author,
        visibility=visibility,
        message_id=message_id,
    )
    _touch(ticket, message.created_at)
    changes.message_created(message)
    return message


# What a reply says about refunds that the records contradict: [{text, order_id, claimed,
# actual}] (the claim check, agent.answer_check, given by the layer above).
ClaimsCheck = Callable[[str], list[dict]]


class ClaimsContradictState(Conflict):
    code = "claim_contradicts_state"


@attachment_files.atomic()
def ticket_write(
    *,
    ticket: Ticket,
    author: User,
    body: str,
    visibility: str,
    claims_check: ClaimsCheck | None = None,
    confirm_claims: bool = False,
    files: Sequence[Upload] = (),
) -> TicketMessage:
    """A support member writes on the ticket: an internal note, or a public reply that is
    emailed to the customer, with its files, after commit (queued → sent, or failed after the
    retries). Files over the limits refuse the whole message (tickets/attachments.py).

    A public reply is first read by `claims_check`: when the records contradict what it says
    about a refund it is refused (ClaimsContradictState, the claims in `extra`) unless
    `confirm_claims`, and a confirmed one leaves a `claims_confirmed` event. Internal notes are
    never checked."""
    role = support_role(author)
    _require(role is not None, "Only interns, agents and supervisors write on tickets.")
    body = body.strip()
    if not body:
        raise ApplicationError("Write something first.", code="empty_message")
    attachments.check_uploads(files, "files")
    if visibility == V.INTERNAL:
        note = ticket_post_message(
            ticket=ticket, author_kind=TicketMessage.AuthorKind.AGENT, body=body, author=author
        )
        attachments.attach(note, files)
        return note
    _require(role != Role.INTERN, "Interns write internal notes; an agent sends the reply.")
    if ticket.status == S.CLOSED:
        raise Conflict(
            f"{ticket.reference} is closed: open a new ticket to write to the customer.",
            code="ticket_closed",
        )
    contradicted = claims_check(body) if claims_check is not None else []
    if contradicted and not confirm_claims:
        raise ClaimsContradictState(
            "The reply says something about a refund that the records contradict: "
            + "; ".join(
                dict.fromkeys(
                    f"“{claim['text']}” ({_actual_in_words(claim)})" for claim in contradicted
                )
            )
            + ". Correct it, or confirm that it should be sent as it is.",
            extra={"claims": contradicted},
        )
    message = TicketMessage.objects.create(
        ticket=ticket,
        author_kind=TicketMessage.AuthorKind.AGENT,
        author=author,
        body=body,
        visibility=V.PUBLIC,
        delivery=D.QUEUED,
        message_id=mail.new_message_id(ticket),
    )
    if contradicted:
        _event(
            ticket,
            TicketEvent.Type.CLAIMS_CONFIRMED,
            author,
            message=message.pk,
            claims=contradicted,
        )
    attachments.attach(message, files)
    _touch(ticket)
    _stamp_first_response(ticket, message.created_at)
    changes.message_created(message)
    enqueue_on_commit(SEND_REPLY_TASK, message.pk)
    return message


def _stamp_first_response(ticket: Ticket, at: datetime) -> None:
    """The first public reply meets the first-response target (DESIGN §15): stamped once."""
    if Ticket.objects.filter(pk=ticket.pk, first_responded_at__isnull=True).update(
        first_responded_at=at
    ):
        ticket.first_responded_at = at


def _statuses_in_words(actual: str) -> str:
    """ "pending_approval, succeeded" as the desk says statuses: "pending approval, refunded"."""
    return ", ".join(
        RefundStatus(status).label.lower() if status in RefundStatus.values else status
        for status in (part.strip() for part in actual.split(","))
    )


def _where(claim: dict) -> str:
    return f"order {claim['order_id']}" if claim.get("order_id") else "this ticket"


def _actual_in_words(claim: dict) -> str:
    if claim["actual"] == "not_ordered":
        return "it is not one of the customer's orders"
    where = _where(claim)
    if claim["actual"] == "none":
        return f"{where} has no refund request"
    return f"the refund on {where} is {_statuses_in_words(claim['actual'])}"


def claims_in_words(claims: Sequence[dict]) -> list[dict]:
    """Each contradicted claim once, as the ticket page lists it: its words (`text`), where
    (`where`), what the records hold (`actual`, and `words`, its statuses as the desk says
    them). A sentence two readers caught is one claim to the agent."""
    lines: dict[tuple, dict] = {}
    for claim in claims:
        line = {
            "text": claim["text"],
            "where": _where(claim),
            "actual": claim["actual"],
            "words": _statuses_in_words(claim["actual"]),
        }
        lines.setdefault(tuple(line.values()), line)
    return list(lines.values())
