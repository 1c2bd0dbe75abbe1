"""Merging a duplicate ticket into another (DESIGN §19). It lives in the desk because it moves
records of three apps (tickets, refunds, and reads agent runs), which know nothing of each other.

What moves: the source's messages (with their attachments), tags, CC and refund requests land
on the target; the source is closed with `merged_into` pointing at the target, and mail naming
the source's reference threads onto the target (tickets/services/inbound.py). What stays: the
source's own events, live changes, notifications and assistant runs, which are its history.

Refund requests move by their `ticket` column alone. Their id, confirmations, fingerprints and
events are untouched: the fingerprint binds the request id, order, customer, payment, amount,
currency, reason and requester (refunds/identity.py), not the ticket, so an approval given
before the merge is still the approval of the same parameters. Refused when both tickets have an
open intent on the same order: one ticket may hold one open intent per order (invariant 6).
"""

from http import HTTPStatus

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from agent.transitions import ACTIVE_STATUSES
from config.errors import ApplicationError, Conflict, Forbidden
from config.roles import Role, support_role
from orders.models import Order
from refunds.models import RefundRequest
from tickets import changes, sla
from tickets.models import Ticket, TicketChange, TicketEvent, TicketMessage
from tickets.services.cc import clean_cc

S = Ticket.Status


class MergeInvalid(Conflict):
    code = "merge_invalid"


class MergeCustomersDiffer(Conflict):
    code = "merge_customers_differ"


def check_may_merge(actor: User) -> None:
    if support_role(actor) not in (Role.AGENT, Role.SUPERVISOR):
        raise Forbidden("Only agents and supervisors merge tickets.")


def _lock_refunds_of(source: Ticket) -> None:
    """The orders of the source's refund requests, then the requests, locked before the
    tickets: a refund decision locks its order, its request and then (telling the ticket) the
    ticket's row, so taking them in the same order means a merge and an approval queue behind
    each other instead of deadlocking."""
    refunds = RefundRequest.objects.filter(ticket=source)
    list(
        Order.objects.select_for_update()
        .filter(pk__in=refunds.values("order"))
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    list(refunds.select_for_update().order_by("pk").values_list("pk", flat=True))


def _locked_pair(source: Ticket, target: Ticket) -> tuple[Ticket, Ticket]:
    """Both rows, locked one after the other in pk order: two merges of the same pair in
    opposite directions queue behind each other instead of deadlocking."""
    locked = {
        pk: Ticket.objects.select_for_update().select_related("customer").get(pk=pk)
        for pk in sorted((source.pk, target.pk))
    }
    return locked[source.pk], locked[target.pk]


def _check_mergeable(source: Ticket, target: Ticket) -> None:
    """Refuse, before anything is written, what a merge may not do. Precondition: the caller
    holds both rows."""
    if source.merged_into is not None:
        raise MergeInvalid(
            f"{source.reference} was already merged into {source.merged_into.reference}.",
            extra={"merged_into": source.merged_into.reference},
        )
    if target.merged_into is not None:
        raise MergeInvalid(
            f"{target.reference} was merged into {target.merged_into.reference}: merge into "
            "that one instead.",
            extra={"merged_into": target.merged_into.reference},
        )
    if target.status == S.CLOSED:
        raise MergeInvalid(f"{target.reference} is closed: merge into an open ticket.")
    if source.customer_id != target.customer_id:
        raise MergeCustomersDiffer(
            f"{source.reference} and {target.reference} belong to different customers: "
            "a merge would put one customer's messages on another's ticket."
        )
    if source.runs.filter(status__in=ACTIVE_STATUSES).exists():
        raise MergeInvalid(
            f"The assistant is still working on {source.reference}: merge when it has finished."
        )
    open_on_both = (
        RefundRequest.objects.filter(ticket=source, order__in=_open_intent_orders(target))
        .exclude(status__in=RefundRequest.SETTLED_STATUSES)
        .values_list("order__order_id", flat=True)
    )
    if open_on_both:
        orders = ", ".join(sorted(open_on_both))
        raise MergeInvalid(
            f"Both tickets have an open refund on order {orders}: withdraw or settle one first.",
            extra={"orders": sorted(open_on_both)},
        )


def _open_intent_orders(ticket: Ticket):
    return (
        RefundRequest.objects.filter(ticket=ticket)
        .exclude(status__in=RefundRequest.SETTLED_STATUSES)
        .values("order")
    )


@transaction.atomic
def ticket_merge(*, source: Ticket, target: Ticket, actor: User) -> Ticket:
    """Merge `source` into `target`; the merged source is returned. MergeInvalid for a ticket
    into itself, from or into a merged ticket, or into a closed one; MergeCustomersDiffer
    across customers. Nothing is written on a refusal."""
    check_may_merge(actor)
    if source.pk == target.pk:
        raise MergeInvalid(f"{source.reference} cannot be merged into itself.")
    _lock_refunds_of(source)
    source, target = _locked_pair(source, target)
    _check_mergeable(source, target)
    now = timezone.now()
    _move_conversation(source, target)
    _close_as_merged(source, target, now, actor)
    Ticket.objects.filter(pk=target.pk).update(updated_at=now)
    for ticket, other, type in (
        (source, target, TicketEvent.Type.MERGED_INTO),
        (target, source, TicketEvent.Type.MERGED_FROM),
    ):
        TicketEvent.objects.create(
            ticket=ticket, type=type, actor=actor, data={"reference": other.reference}
        )
        changes.ticket_change_append(
            ticket_id=ticket.pk,
            type=TicketChange.Type.TICKET_MERGED,
            data={
                "source": source.reference,
                "target": target.reference,
                "by": actor.get_username(),
            },
            actor=actor,
        )
    return source


def _move_conversation(source: Ticket, target: Ticket) -> None:
    """Messages keep their times (the target's conversation stays in time order), attachments
    go with their messages, refund requests keep everything but their ticket."""
    TicketMessage.objects.filter(ticket=source).update(ticket=target)
    RefundRequest.objects.filter(ticket=source).update(ticket=target)
    target.tags.add(*source.tags.all())
    cc = clean_cc([*target.cc, *source.cc], customer=target.customer, truncate=True)
    fields: dict = {}
    if cc != list(target.cc):
        fields["cc"] = cc
    if target.order_id is None and source.order_id is not None:
        fields["order_id"] = source.order_id
    if fields:
        Ticket.objects.filter(pk=target.pk).update(**fields)


def _close_as_merged(source: Ticket, target: Ticket, now, actor: User) -> None:
    """The source is closed with its pointer; its SLA clocks stop as a closing does."""
    from_status = source.status
    fields = sla.clock_fields_for_move(source, from_status, S.CLOSED, now)
    Ticket.objects.filter(pk=source.pk).update(
        status=S.CLOSED, merged_into=target, updated_at=now, **fields
    )
    source.status, source.merged_into, source.updated_at = S.CLOSED, target, now
    if from_status != S.CLOSED:
        TicketEvent.objects.create(
            ticket=source,
            type=TicketEvent.Type.STATUS_CHANGED,
            actor=actor,
            data={"from": from_status, "to": S.CLOSED, "reason": f"merged into {target.reference}"},
        )


class MergeTargetNotFound(ApplicationError):
    status_code = HTTPStatus.NOT_FOUND
    code = "not_found"


def merge_target(reference: str) -> Ticket:
    """The ticket a merge names by reference, as typed ("tck-12 " is TCK-12)."""
    reference = reference.strip().upper()
    target = Ticket.objects.filter(reference=reference).first() if reference else None
    if target is None:
        raise MergeTargetNotFound(
            f"There is no ticket {reference or '(empty)'} to merge into.",
            extra={"fields": {"into": [f"No ticket {reference}." if reference else "Required."]}},
        )
    return target
