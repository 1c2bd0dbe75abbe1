"""Taking back a proposal awaiting review: the request ends as withdrawn and its pending
version is voided (DESIGN §17).

Apart from the decisions because the proposer (or a supervisor) makes it, not a reviewer: no
four eyes, and no assistant tool calls it.
"""

from datetime import datetime

from django.contrib.auth.models import User
from django.utils import timezone

from config.roles import is_supervisor
from config.transactions import atomic_retried
from refunds.errors import NotWithdrawable, WithdrawForbidden
from refunds.models import RefundConfirmation, RefundRequest
from refunds.services.shared import _changed_meanwhile, _label, _locked
from refunds.signals import tell_ticket
from refunds.transitions import confirmation_transition, refund_transition

S = RefundRequest.Status
C = RefundConfirmation.Status


@atomic_retried
def refund_withdraw(
    *, refund: RefundRequest, by: User, note: str = "", now: datetime | None = None
) -> RefundRequest:
    """Take back a proposal awaiting review: the request ends as withdrawn and its pending
    version is voided, so no reviewer can approve it. Its requester or a supervisor may; people
    only, no assistant tool calls this. Refusals change nothing.
    """
    now = now or timezone.now()
    # Locked as refund_approve locks, the order and then the request: an approval racing this
    # either waits and finds the request withdrawn, or wins and this finds it approved.
    locked = _locked(refund)
    if by.pk != locked.requested_by_id and not is_supervisor(by):
        raise WithdrawForbidden(
            "Only whoever proposed this refund, or a supervisor, may withdraw it."
        )
    if locked.status != S.PENDING_APPROVAL:
        raise NotWithdrawable(
            f"Refund {locked.request_id} is {locked.get_status_display().lower()}; only a "
            f"proposal awaiting review can be withdrawn.",
            extra={"status": locked.status},
        )
    pending = locked.confirmations.filter(status=C.PENDING).get()
    if not confirmation_transition(
        confirmation=pending,
        to_status=C.WITHDRAWN,
        decided_by=by,
        decided_at=now,
        decision_note=note,
    ) or not refund_transition(
        refund=locked,
        to_status=S.WITHDRAWN,
        actor=by,
        detail={"version": pending.version, "note": note},
    ):
        raise _changed_meanwhile(locked)
    reason = f": {note}" if note else "."
    tell_ticket(
        locked,
        f"{_label(locked)} for order {locked.order.order_id} withdrawn by "
        f"{by.get_username()}{reason}",
    )
    return locked
