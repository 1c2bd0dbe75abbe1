"""An order edited while refunds on it are open (the order admin saves through here): an edit
of its payment fields is refused while a refund on it is in flight, and a pending version the
edit changes is superseded by one bound to the edited order (docs/design_deviations.md).

Apart because the edit starts from the order, not from a request: it locks the order and then
every open request on it, and words its changes for the ticket and the review trail.
"""

from datetime import datetime

from django.contrib.auth.models import User
from django.utils import timezone

from config import refund_statuses
from config.transactions import atomic_retried
from orders.models import Order
from refunds.errors import OrderFrozen
from refunds.identity import fingerprint, fingerprint_params
from refunds.locks import lock_order
from refunds.models import RefundConfirmation, RefundEvent, RefundRequest
from refunds.services.shared import _changed_meanwhile, _label
from refunds.signals import tell_ticket, tell_ticket_changed
from refunds.transitions import confirmation_transition

S = RefundRequest.Status
C = RefundConfirmation.Status


# What the provider is asked to refund and to whom, and the order's part of every approval's
# fingerprint: frozen while a refund on the order is approved but not settled.
ORDER_PAYMENT_FIELDS = {
    "order_id": "order number",
    "customer": "customer",
    "payment_reference": "payment reference",
    "amount_paid": "amount paid",
    "currency": "currency",
}
# How a change of a fingerprinted parameter reads on the ticket and in the review trail.
PARAMETER_WORDS = {
    "order_id": "order number",
    "customer_id": "customer id",
    "payment_reference": "payment reference",
}


@atomic_retried
def order_edit(
    *, order: Order, edited_by: User, now: datetime | None = None
) -> list[RefundConfirmation]:
    """Save `order`, an edited instance of a stored order, with what the edit means for the
    open refunds on it. Returns the versions it made (see below).

    Locks as refund_approve does: the order, then its open requests. An edit of a payment
    field while a refund on the order is in flight is refused and saves nothing: that refund's
    approval must still match when it executes. A pending version whose fingerprint the edit
    changes is superseded by a new pending version bound to the edited order, for a reviewer
    to decide again; the old one could never be approved.
    """
    now = now or timezone.now()
    stored = lock_order(order_pk=order.pk)
    assert stored is not None  # an edit of a stored order, locked without skipping
    open_refunds = list(
        RefundRequest.objects.select_for_update(no_key=True)
        .filter(order=stored)
        .exclude(status__in=RefundRequest.SETTLED_STATUSES)
        .order_by("pk")
    )
    changed = [
        name
        for name in ORDER_PAYMENT_FIELDS
        if order.serializable_value(name) != stored.serializable_value(name)
    ]
    in_flight = [refund for refund in open_refunds if refund.status in refund_statuses.IN_FLIGHT]
    if changed and in_flight:
        refund = in_flight[0]
        fields = ", ".join(ORDER_PAYMENT_FIELDS[name] for name in changed)
        raise OrderFrozen(
            f"Order {stored.order_id} was not saved: refund {refund.request_id} is "
            f"{refund.get_status_display().lower()}, and the order's payment fields ({fields}) "
            f"stay as they are until it settles.",
            extra={"request_id": refund.request_id, "fields": changed},
        )
    order.save()
    rebound = (
        _rebind_pending(refund=refund, order=order, edited_by=edited_by, now=now)
        for refund in open_refunds
        if refund.status == S.PENDING_APPROVAL
    )
    return [confirmation for confirmation in rebound if confirmation is not None]


def _rebind_pending(
    *, refund: RefundRequest, order: Order, edited_by: User, now: datetime
) -> RefundConfirmation | None:
    """Supersede `refund`'s pending version with one bound to the edited `order`, if the edit
    changed its fingerprint. Caller holds SELECT FOR UPDATE on the order and on `refund`."""
    pending = refund.confirmations.filter(status=C.PENDING).first()
    if pending is None or pending.expires_at <= now:
        return None  # a lapsed version is for the expiry sweep; proposing again renews it
    refund.order = order
    params = fingerprint_params(refund)
    if fingerprint(params) == pending.fingerprint:
        return None
    changes = {
        key: [pending.params.get(key), value]
        for key, value in params.items()
        if pending.params.get(key) != value
    }
    if not confirmation_transition(confirmation=pending, to_status=C.SUPERSEDED):
        raise _changed_meanwhile(refund)
    version = pending.version + 1  # the pending version is always the newest
    confirmation = RefundConfirmation.objects.create(
        refund_request=refund,
        version=version,
        fingerprint=fingerprint(params),
        params=params,
        status=C.PENDING,
        # The proposer's parameters, bound to the edited order: still their proposal, and it
        # lapses when theirs would have (an edit does not renew it).
        proposed_by_id=pending.proposed_by_id,
        requester_note=pending.requester_note,
        expires_at=pending.expires_at,
    )
    RefundEvent.objects.create(
        refund_request=refund,
        from_status=refund.status,
        to_status=refund.status,
        actor=edited_by,
        detail={"order_edited": changes, "superseded_version": pending.version, "version": version},
    )
    RefundRequest.objects.filter(pk=refund.pk).update(updated_at=now)
    tell_ticket_changed(refund, edited_by)
    tell_ticket(
        refund,
        f"{_label(refund)}: order {order.order_id} was edited by {edited_by.get_username()} "
        f"({order_edit_words(changes)}); version {version} replaces version {pending.version}, "
        f"waiting for review.",
    )
    return confirmation


def order_edit_words(changes: dict) -> str:
    """An order edit's changes to the fingerprinted parameters, as the review trail shows them."""
    return "; ".join(
        f"{PARAMETER_WORDS.get(key, key)} {old} → {new}" for key, (old, new) in changes.items()
    )
