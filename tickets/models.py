from django.conf import settings
from django.db import models
from django.db.models import Q


class Ticket(models.Model):
    class Status(models.TextChoices):
        OPEN = "open", "Open"
        PENDING = "pending", "Pending"
        SOLVED = "solved", "Solved"
        CLOSED = "closed", "Closed"

    reference = models.CharField(max_length=20, unique=True)
    customer = models.ForeignKey(
        "orders.Customer", on_delete=models.PROTECT, related_name="tickets"
    )
    subject = models.CharField(max_length=200)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.OPEN)
    assignee = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="assigned_tickets",
    )
    # Flagged for a supervisor; cleared when a supervisor has dealt with it.
    escalated = models.BooleanField(default=False)
    # The seq of the ticket's last TicketChange: the counter that numbers its changes. Moving
    # it on locks the ticket's row until the change commits, so a ticket's changes commit in
    # the order of their seqs and a reader resuming after seq N never misses one.
    last_change_seq = models.PositiveBigIntegerField(default=0)
    # When the assignee last opened the ticket: a customer's message after it is unseen.
    assignee_seen_at = models.DateTimeField(null=True, blank=True)
    order = models.ForeignKey(
        "orders.Order", null=True, blank=True, on_delete=models.PROTECT, related_name="tickets"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(reference__regex=r"^TCK-[0-9]+$"), name="ticket_reference_format"
            ),
        ]
        indexes = [
            # The desk list's two sorts: a page is read off the index, whatever the count.
            models.Index(fields=["-updated_at", "-id"], name="ticket_updated_idx"),
            models.Index(fields=["-created_at", "-id"], name="ticket_created_idx"),
            # The supervisors' Escalated tab and its count: a handful among all tickets.
            # (The search's trigram and full-text indexes are PostgreSQL's own kinds of index:
            # tickets/migrations/0005 makes them there, not here.)
            models.Index(
                fields=["-updated_at", "-id"],
                condition=Q(escalated=True),
                name="ticket_escalated_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.reference} {self.subject}"


class TicketCounter(models.Model):
    """The last ticket number handed out: one row. A new ticket moves it on and holds its row
    until the ticket commits, so no two tickets take the same number (tickets/services.py)."""

    last = models.PositiveBigIntegerField()

    class Meta:
        constraints = [models.CheckConstraint(condition=Q(id=1), name="ticket_counter_one_row")]

    def __str__(self) -> str:
        return f"TCK-{self.last}"


class TicketMessage(models.Model):
    class AuthorKind(models.TextChoices):
        CUSTOMER = "customer", "Customer"
        AGENT = "agent", "Agent"
        ASSISTANT = "assistant", "Assistant"
        SYSTEM = "system", "System"

    class Visibility(models.TextChoices):
        PUBLIC = "public", "Public reply"
        INTERNAL = "internal", "Internal note"

    class Delivery(models.TextChoices):
        NOT_APPLICABLE = "not_applicable", "Not sent by email"
        QUEUED = "queued", "Queued"
        SENT = "sent", "Sent"
        FAILED = "failed", "Failed"

    ticket = models.ForeignKey(Ticket, on_delete=models.CASCADE, related_name="messages")
    author_kind = models.CharField(max_length=16, choices=AuthorKind.choices)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    body = models.TextField()
    # Internal unless said otherwise: only public messages are ever shown or sent to the customer.
    visibility = models.CharField(
        max_length=16, choices=Visibility.choices, default=Visibility.INTERNAL
    )
    delivery = models.CharField(
        max_length=16, choices=Delivery.choices, default=Delivery.NOT_APPLICABLE
    )
    # The email Message-ID: the customer's (inbound mail is idempotent on it) or the one our
    # reply is sent with (a resend after a crash carries the same id, so mail clients dedupe).
    message_id = models.CharField(max_length=255, null=True, blank=True, unique=True)
    delivery_attempts = models.PositiveIntegerField(default=0)
    delivery_error = models.CharField(max_length=500, blank=True)
    # When the next send attempt is due (a retry's backoff). A queued reply long past it lost
    # its task, and the sweep sends it again.
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            # Internal notes never leave the desk: not even a queued email can exist for one.
            models.CheckConstraint(
                condition=Q(visibility="public") | Q(delivery="not_applicable"),
                name="ticket_message_internal_never_delivered",
            ),
        ]
        indexes = [
            # The work queue of resend_stalled_replies: only replies still waiting to be sent.
            models.Index(
                fields=["created_at", "id"],
                condition=Q(delivery="queued"),
                name="ticket_message_queued_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.ticket.reference} {self.author_kind}: {self.body[:40]}"

    @property
    def is_public(self) -> bool:
        return self.visibility == self.Visibility.PUBLIC


class TicketEvent(models.Model):
    """Append-only: what happened to a ticket, by whom (status, assignment, escalation, mail)."""

    class Type(models.TextChoices):
        CREATED = "created", "Ticket created"
        STATUS_CHANGED = "status_changed", "Status changed"
        ASSIGNED = "assigned", "Assignee changed"
        ESCALATED = "escalated", "Escalated to supervisors"
        ESCALATION_CLEARED = "escalation_cleared", "Escalation handled"
        REPLY_SENT = "reply_sent", "Reply emailed to the customer"
        REPLY_FAILED = "reply_failed", "Reply could not be emailed"
        CUSTOMER_REPLIED = "customer_replied", "Customer replied"

    ticket = models.ForeignKey(Ticket, on_delete=models.CASCADE, related_name="events")
    type = models.CharField(max_length=32, choices=Type.choices)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    data = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"{self.ticket.reference}: {self.type}"


class TicketChange(models.Model):
    """Append-only: the ticket's changes in order, as the live desk follows them (DESIGN §14,
    GET /api/tickets/<ref>/events/). `seq` counts from 1 per ticket; the stream's SSE id."""

    class Type(models.TextChoices):
        MESSAGE_CREATED = "message.created", "Message written"
        MESSAGE_DELIVERY = "message.delivery", "Reply delivery changed"
        TICKET_STATUS = "ticket.status", "Status changed"
        TICKET_ASSIGNED = "ticket.assigned", "Assignee changed"
        TICKET_ESCALATED = "ticket.escalated", "Escalation raised or handled"
        REFUND_STATUS = "refund.status", "Refund status changed"
        RUN_STARTED = "run.started", "Assistant run started"
        RUN_COMPLETED = "run.completed", "Assistant run ended"

    ticket = models.ForeignKey(Ticket, on_delete=models.CASCADE, related_name="changes")
    seq = models.PositiveBigIntegerField()
    type = models.CharField(max_length=32, choices=Type.choices)
    data = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["ticket", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["ticket", "seq"], name="ticket_change_unique_seq"),
        ]

    def __str__(self) -> str:
        return f"{self.ticket_id} #{self.seq} {self.type}"


class Notification(models.Model):
    """Something a desk user should know about one of their tickets (DESIGN §14). Written in
    the transaction of the change it reports (tickets/changes.py); `read_at` set once read."""

    class Kind(models.TextChoices):
        ASSIGNED = "assigned", "Assigned to you"
        CUSTOMER_REPLIED = "customer_replied", "Customer replied"
        ESCALATED = "escalated", "Escalation raised"
        ESCALATION_HANDLED = "escalation_handled", "Escalation handled"
        REFUND_SETTLED = "refund_settled", "Refund settled"
        REFUND_REJECTED = "refund_rejected", "Refund rejected"

    recipient = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notifications"
    )
    ticket = models.ForeignKey(Ticket, on_delete=models.CASCADE, related_name="notifications")
    kind = models.CharField(max_length=32, choices=Kind.choices)
    text = models.CharField(max_length=300)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    data = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    read_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(
                fields=["recipient", "-created_at", "-id"], name="notification_recent_idx"
            ),
            # The header's count: a user's unread ones, a handful among all.
            models.Index(
                fields=["recipient"],
                condition=Q(read_at__isnull=True),
                name="notification_unread_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.recipient_id}: {self.text}"
