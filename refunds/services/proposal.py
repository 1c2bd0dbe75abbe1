"""Proposing a refund: the ticket's open intent on an order created, or its parameters made
the next version for a reviewer (DESIGN §4; §1 invariants 6, 7), and the link from a new
request to the tool call that proposed it.

Apart from the decisions because a proposal never decides or executes anything: it only puts a
pending version in front of a reviewer, serialised with approvals by the order's row lock.
"""

from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from enum import StrEnum

from django.conf import settings
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.db.models import Max, Model
from django.utils import timezone

from config import refund_statuses
from config.errors import ApplicationError, Conflict
from config.money import to_cents
from config.transactions import atomic_retried
from orders.models import Order
from refunds.identity import derive_request_id, fingerprint, fingerprint_params
from refunds.locks import lock_order
from refunds.models import RefundConfirmation, RefundEvent, RefundRequest
from refunds.services.shared import (
    _changed_meanwhile,
    _evaluate,
    _fingerprint_of,
    _label,
    _refuse_unless_allowed,
    _refuse_unless_holdable,
)
from refunds.signals import tell_ticket, tell_ticket_changed
from refunds.transitions import confirmation_transition, refund_transition
from tickets.models import Ticket

S = RefundRequest.Status
C = RefundConfirmation.Status


class RefundAlreadyDecided(Conflict):
    code = "refund_already_decided"


class ProposalOutcome(StrEnum):
    CREATED = "created"  # a new intent
    UNCHANGED = "unchanged"  # the same parameters again
    NEW_VERSION = "new_version"  # the amount, reason or explanation changed, or the order did
    RENEWED = "renewed"  # the previous version lapsed (or none was pending): this replaces it


@dataclass(frozen=True)
class Proposal:
    refund: RefundRequest
    confirmation: RefundConfirmation
    outcome: ProposalOutcome


def _create_confirmation(
    *, refund: RefundRequest, version: int, now: datetime, requester_note: dict
) -> RefundConfirmation:
    params = fingerprint_params(refund)
    return RefundConfirmation.objects.create(
        refund_request=refund,
        version=version,
        fingerprint=fingerprint(params),
        params=params,
        status=C.PENDING,
        proposed_by_id=refund.requested_by_id,
        requester_note=requester_note,
        expires_at=now + timedelta(minutes=settings.CONFIRMATION_TTL_MINUTES),
    )


def _proposed_message(refund: RefundRequest, version: int) -> str:
    revision = f" as version {version}" if version > 1 else ""
    return (
        f"{_label(refund)} proposed for order {refund.order.order_id} "
        f"({refund.get_reason_display().lower()}){revision}, waiting for review."
    )


@atomic_retried
def refund_propose(
    *,
    ticket: Ticket,
    order: Order,
    amount: Decimal,
    reason: str,
    explanation: str,
    requested_by: User,
    role: str,
    run: Model | None = None,
    now: datetime | None = None,
    requester_note: dict | None = None,
) -> Proposal:
    """Create the ticket's open intent on `order`, or make these parameters its next version.

    `ticket` is a tickets.Ticket. Never executes. `requester_note` is what the requester's own
    words said (`{"words", "flags"}`), kept on the version for its reviewer; it is no parameter
    of the refund and not in the fingerprint. The caller has scoped `order` to the ticket's
    customer. Proposals and approvals on one order are serialised by the order's row lock; the
    partial unique constraint on open intents and the unique `request_id` hold where locks do
    not.
    """
    now = now or timezone.now()
    if amount <= 0:
        raise ApplicationError("A refund must be more than 0.00.", code="invalid_amount")
    locked_order = lock_order(order_pk=order.pk)
    assert locked_order is not None  # a stored order, locked without skipping
    order = locked_order
    _refuse_unless_holdable(amount=amount, currency=order.currency)
    amount = to_cents(amount)
    refund = _lock_open_intent(ticket=ticket, order=order)
    if refund is None:
        try:
            with transaction.atomic():
                return _create_intent(
                    ticket=ticket,
                    order=order,
                    amount=amount,
                    reason=reason,
                    explanation=explanation,
                    requested_by=requested_by,
                    role=role,
                    run=run,
                    now=now,
                    requester_note=requester_note or {},
                )
        except IntegrityError:
            # Another proposal created the intent first and has committed: this one is a
            # repeat or a correction of it.
            refund = _lock_open_intent(ticket=ticket, order=order)
            if refund is None:
                raise
    return _repropose(
        refund=refund,
        amount=amount,
        reason=reason,
        explanation=explanation,
        requested_by=requested_by,
        role=role,
        run=run,
        now=now,
        requester_note=requester_note or {},
    )


def _lock_open_intent(*, ticket: Ticket, order: Order) -> RefundRequest | None:
    return (
        RefundRequest.objects.select_for_update(no_key=True, of=("self",))
        .select_related("order", "ticket", "run")
        .filter(ticket=ticket, order=order)
        .exclude(status__in=RefundRequest.SETTLED_STATUSES)
        .first()
    )


def _create_intent(
    *,
    ticket: Ticket,
    order: Order,
    amount: Decimal,
    reason: str,
    explanation: str,
    requested_by: User,
    role: str,
    run: Model | None,
    now: datetime,
    requester_note: dict,
) -> Proposal:
    settled = RefundRequest.objects.filter(
        ticket=ticket, order=order, status__in=RefundRequest.SETTLED_STATUSES
    ).count()
    evaluation = _evaluate(
        order=order,
        amount=amount,
        reason=reason,
        role=role,
        requester_id=requested_by.pk,
        excluding=None,
        now=now,
    )
    _refuse_unless_allowed(evaluation, "The policy refuses this refund.")
    refund = RefundRequest.objects.create(
        request_id=derive_request_id(
            ticket_reference=ticket.reference, order_id=order.order_id, n=settled
        ),
        ticket=ticket,
        order=order,
        amount=amount,
        currency=order.currency,
        reason=reason,
        explanation=explanation,
        status=S.PENDING_APPROVAL,
        requested_by=requested_by,
        run_id=run.pk if run is not None else None,
        policy_version_id=evaluation.policy_version_id,
        policy_evaluation=evaluation.verdicts,
    )
    confirmation = _create_confirmation(
        refund=refund, version=1, now=now, requester_note=requester_note
    )
    RefundEvent.objects.create(
        refund_request=refund,
        from_status="",
        to_status=S.PENDING_APPROVAL,
        actor=requested_by,
        detail={"version": 1},
    )
    tell_ticket_changed(refund, requested_by)
    tell_ticket(refund, _proposed_message(refund, 1))
    return Proposal(refund=refund, confirmation=confirmation, outcome=ProposalOutcome.CREATED)


def _repropose(
    *,
    refund: RefundRequest,
    amount: Decimal,
    reason: str,
    explanation: str,
    requested_by: User,
    role: str,
    run: Model | None,
    now: datetime,
    requester_note: dict,
) -> Proposal:
    """The open intent proposed again. Caller holds SELECT FOR UPDATE on its order and on
    `refund`."""
    if refund.status in refund_statuses.IN_FLIGHT:
        raise RefundAlreadyDecided(
            f"Refund {refund.request_id} is already {refund.get_status_display().lower()}; "
            f"it cannot be changed. A further refund on this order can be proposed once it "
            f"has settled.",
            extra={"request_id": refund.request_id, "status": refund.status},
        )
    pending = refund.confirmations.filter(status=C.PENDING).first()
    lapsed = pending is not None and pending.expires_at <= now
    unchanged = (refund.amount, refund.reason, refund.explanation) == (amount, reason, explanation)
    # A pending version the order no longer matches (edited outside order_edit, or before it
    # rebound pending versions) can never be approved: the same parameters again replace it.
    bound = pending is not None and pending.fingerprint == _fingerprint_of(refund)
    if pending is not None and not lapsed and unchanged and bound:
        return Proposal(refund=refund, confirmation=pending, outcome=ProposalOutcome.UNCHANGED)

    evaluation = _evaluate(
        order=refund.order,
        amount=amount,
        reason=reason,
        role=role,
        requester_id=requested_by.pk,
        excluding=refund,
        now=now,
    )
    _refuse_unless_allowed(evaluation, "The policy refuses this refund.")
    if pending is not None and not confirmation_transition(
        confirmation=pending, to_status=C.EXPIRED if lapsed else C.SUPERSEDED
    ):
        raise _changed_meanwhile(refund)
    fields = {
        "amount": amount,
        "reason": reason,
        "explanation": explanation,
        "requested_by": requested_by,
        "policy_version_id": evaluation.policy_version_id,
        "policy_evaluation": evaluation.verdicts,
    }
    # The run behind the current version, none when it was proposed outside a run (an MCP
    # host): a run left over from an earlier version would lend this proposer its role.
    fields["run_id"] = run.pk if run is not None else None
    if refund.status == S.EXPIRED:
        # Expiry is not a decision: nobody looked at it, so the intent may be proposed again.
        if not refund_transition(
            refund=refund,
            to_status=S.PENDING_APPROVAL,
            actor=requested_by,
            detail={"renewed": True},
            **fields,
        ):
            raise _changed_meanwhile(refund)
    else:
        fields["updated_at"] = now
        RefundRequest.objects.filter(pk=refund.pk).update(**fields)
        refund.refresh_from_db()
        tell_ticket_changed(refund, requested_by)
    version = (refund.confirmations.aggregate(top=Max("version"))["top"] or 0) + 1
    confirmation = _create_confirmation(
        refund=refund, version=version, now=now, requester_note=requester_note
    )
    outcome = ProposalOutcome.RENEWED if lapsed or pending is None else ProposalOutcome.NEW_VERSION
    tell_ticket(refund, _proposed_message(refund, version))
    return Proposal(refund=refund, confirmation=confirmation, outcome=outcome)


def refund_link_tool_call(*, request_id: str, tool_call: Model, run: Model | None) -> None:
    """Point a new request at the tool call that proposed it (an agent ToolCallLog row).

    Only a request of the call's own run that has no link yet: a later call that only
    re-proposes or corrects the intent leaves the first link alone (every call stays in the
    run's trail). A call from an MCP session has no run: it links a request proposed outside
    any run, whose trail is then that session's.
    """
    RefundRequest.objects.filter(
        request_id=request_id, tool_call=None, run_id=run.pk if run is not None else None
    ).update(tool_call_id=tool_call.pk)
