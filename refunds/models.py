from django.conf import settings
from django.db import models
from django.db.models import Q

from config import refund_statuses


class RefundRequest(models.Model):
    """One logical refund intent: the n-th on (ticket, order). At most one provider refund.

    Amount, reason and explanation are parameters of the intent: changing them makes a new
    confirmation version, never a second intent (DESIGN §1, invariant 6).
    """

    # The statuses live in config, where orders (below refunds) can read them too.
    Status = refund_statuses.RefundStatus
    # An intent ends in one of these; every other status is an open intent.
    SETTLED_STATUSES = refund_statuses.SETTLED

    class Reason(models.TextChoices):
        DAMAGED = "damaged", "Damaged"
        NOT_RECEIVED = "not_received", "Not received"
        WRONG_ITEM = "wrong_item", "Wrong item"
        OTHER = "other", "Other"

    request_id = models.CharField(max_length=40, unique=True)
    # Null only for refunds from the shop's history that predate the desk.
    ticket = models.ForeignKey(
        "tickets.Ticket",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="refund_requests",
    )
    order = models.ForeignKey(
        "orders.Order", on_delete=models.PROTECT, related_name="refund_requests"
    )
    amount = models.DecimalField(max_digits=12, decimal_places=2)
    currency = models.CharField(max_length=3)
    reason = models.CharField(max_length=16, choices=Reason.choices)
    explanation = models.TextField(blank=True)
    status = models.CharField(
        max_length=20, choices=Status.choices, default=Status.PENDING_APPROVAL
    )
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="refund_requests"
    )
    run = models.ForeignKey(
        "agent.AgentRun",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="refund_requests",
    )
    tool_call = models.ForeignKey(
        "agent.ToolCallLog", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    policy_version = models.ForeignKey(
        "policies.PolicyVersion", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    policy_evaluation = models.JSONField(default=list, blank=True)
    provider_refund_id = models.CharField(max_length=100, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["created_at"]
        constraints = [
            models.CheckConstraint(condition=Q(amount__gt=0), name="refund_amount_gt_0"),
            # Invariant 6: a correction is a new version of the open intent, never a parallel
            # one. Rows without a ticket (the shop's history) are not desk intents.
            models.UniqueConstraint(
                fields=["ticket", "order"],
                condition=~Q(status__in=list(refund_statuses.SETTLED)),
                name="refund_one_open_intent_per_ticket_order",
            ),
        ]
        indexes = [
            # The reviewer queue and the API, oldest first in any one status, and the counts
            # per status: read off the index, however many requests are settled.
            models.Index(fields=["status", "created_at", "id"], name="refund_status_created_idx"),
            models.Index(fields=["created_at", "id"], name="refund_created_idx"),
            # The reconcile sweep's work queue: only requests whose money is in flight.
            models.Index(
                fields=["status", "updated_at"],
                condition=Q(status__in=list(refund_statuses.IN_FLIGHT)),
                name="refund_in_flight_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.request_id} {self.amount} {self.currency} ({self.status})"


class RefundConfirmation(models.Model):
    """A version of the refund parameters a reviewer can approve, bound to their fingerprint."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        APPROVED = "approved", "Approved"
        REJECTED = "rejected", "Rejected"
        SUPERSEDED = "superseded", "Superseded"
        EXPIRED = "expired", "Expired"
        # Voided by the request's withdrawal: nobody decided it, and nobody may approve it.
        WITHDRAWN = "withdrawn", "Withdrawn"

    refund_request = models.ForeignKey(
        RefundRequest, on_delete=models.PROTECT, related_name="confirmations"
    )
    version = models.PositiveIntegerField()
    fingerprint = models.CharField(max_length=64)
    params = models.JSONField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    expires_at = models.DateTimeField()
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_note = models.TextField(blank=True)
    # Who proposed these parameters. Nobody who proposed any version may decide the request.
    proposed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    # What the proposer's own words said, for the reviewer: {"words", "flags"} (flags: where a
    # reader of the words and these parameters part, "the agent's words name 60.00; the
    # proposal is 399.00"). A note, never a refusal; not a parameter, not in the fingerprint.
    requester_note = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["refund_request", "version"]
        constraints = [
            models.UniqueConstraint(
                fields=["refund_request", "version"], name="refund_confirmation_version_unique"
            ),
            models.UniqueConstraint(
                fields=["refund_request"],
                condition=Q(status="pending"),
                name="refund_confirmation_one_pending",
            ),
        ]
        # No index of its own for the expiry sweep: refund_confirmation_one_pending's partial
        # index already holds exactly the pending versions it reads. (One on expires_at is
        # never chosen: the column's statistics say most versions lapsed long ago, and they
        # are the decided ones.)

    def __str__(self) -> str:
        return f"{self.refund_request.request_id} v{self.version} ({self.status})"


class RefundEvent(models.Model):
    """Append-only: one row per status transition of a RefundRequest."""

    refund_request = models.ForeignKey(
        RefundRequest, on_delete=models.PROTECT, related_name="events"
    )
    from_status = models.CharField(max_length=20, blank=True)
    to_status = models.CharField(max_length=20)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    detail = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"{self.refund_request.request_id}: {self.from_status} -> {self.to_status}"


class SimulatedRefund(models.Model):
    """The ledger of the `simulated` payment provider: what the provider believes it refunded.

    Kept in the database so a worker process and the tests see the same ledger. It belongs to
    the pretend provider, not to the desk: the desk only reads it through the adapter.
    """

    provider_refund_id = models.CharField(max_length=40, unique=True)
    idempotency_key = models.CharField(max_length=255)
    payment_reference = models.CharField(max_length=64)
    amount = models.DecimalField(max_digits=12, decimal_places=2)
    currency = models.CharField(max_length=3)
    metadata = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=16, default="succeeded")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            # A provider deduplicates by idempotency key: one refund per key, ever.
            models.UniqueConstraint(
                fields=["idempotency_key"], name="simulated_refund_idempotency_key_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.provider_refund_id} {self.amount} {self.currency} ({self.idempotency_key})"
