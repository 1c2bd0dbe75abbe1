"""The refund statuses, and the groups of them the apps ask about: the one vocabulary of a
RefundRequest's state machine (refunds/transitions.py moves it).

It sits in config, as the roles and money do, because layers below refunds need it: orders sums
an order's committed refunds (orders.selectors.refunded_total, also in raw SQL), and orders may
import only config. refunds.models uses `RefundStatus` as `RefundRequest.Status`.
"""

from django.db import models


class RefundStatus(models.TextChoices):
    """Each label is the status as every page says it (lists, sidebar, customer page, proposal
    box, review pages, admin); static/js/assistant.js keeps a copy that tests hold to these."""

    PENDING_APPROVAL = "pending_approval", "Waiting for a reviewer"
    APPROVED = "approved", "Approved"
    EXECUTING = "executing", "Sending to the provider"
    # The provider accepted the refund but has not settled it: money is on its way, but
    # nobody may be told "refunded" until the provider says so.
    PROVIDER_PENDING = "provider_pending", "Settling at the provider"
    SUCCEEDED = "succeeded", "Refunded"
    FAILED = "failed", "Failed"
    OUTCOME_UNKNOWN = "outcome_unknown", "Outcome unknown"
    REJECTED = "rejected", "Rejected"
    EXPIRED = "expired", "Expired"
    # Taken back by its requester or a supervisor before any reviewer decided it.
    WITHDRAWN = "withdrawn", "Withdrawn"


# An intent ends in one of these; every other status is an open intent.
SETTLED = (
    RefundStatus.SUCCEEDED,
    RefundStatus.FAILED,
    RefundStatus.REJECTED,
    RefundStatus.WITHDRAWN,
)

# Past the reviewer's approval and not settled: the provider is, or is about to be, moving this
# money. The intent's parameters can no longer change, and a further refund on the order waits.
IN_FLIGHT = (
    RefundStatus.APPROVED,
    RefundStatus.EXECUTING,
    RefundStatus.PROVIDER_PENDING,
    RefundStatus.OUTCOME_UNKNOWN,
)

# Money has left, or may have left, the shop: these count against what can still be refunded.
COMMITTED = (*IN_FLIGHT, RefundStatus.SUCCEEDED)
