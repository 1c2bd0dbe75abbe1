# Over 400 lines, one module: nearly every model here hangs on Ticket, by a foreign key (messages
# and their attachments, events, changes, notifications, surveys) or by its choices (an SLA
# policy's priority, a macro's actions), and a module of them would import this one back, a
# cycle tests/test_import_graph.py refuses. Tag, TicketCounter and SavedView name no ticket, but
# the code that reads them reads Ticket too (tickets/services/, tickets/saved_views.py), so they
# could only go to a module of one small model each; they stay beside the Ticket they serve.
# The models that name no ticket and have code of their own that does not read this module live
# with that code and are imported at the bottom: BusinessCalendar (tickets/calendars.py) and
# StaffProfile (tickets/people.py).
"""The tickets app's models: Ticket and what hangs on it (messages, attachments, events, live
changes, notifications, satisfaction surveys), SLA policies, tags, the ticket counter, macros and
saved views of the ticket list."""

import re
import uuid

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import F, Q
from django.db.models.fields.json import KT
from django.db.models.functions import Lower
from django.utils import timezone


class Ticket(models.Model):
    class Status(models.TextChoices):
        OPEN = "open", "Open"
        PENDING = "pending", "Pending"
        SOLVED = "solved", "Solved"
        CLOSED = "closed", "Closed"

    class Priority(models.TextChoices):
        LOW = "low", "Low"
        NORMAL = "normal", "Normal"
        HIGH = "high", "High"
        URGENT = "urgent", "Urgent"

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
    # --- DESIGN §15: priority and its SLA targets (tickets/sla.py keeps the clocks) ---
    priority = models.CharField(max_length=8, choices=Priority.choices, default=Priority.NORMAL)
    first_response_due_at = models.DateTimeField(null=True, blank=True)
    resolution_due_at = models.DateTimeField(null=True, blank=True)
    # The first public reply to the customer (queued by an agent), whenever it is delivered.
    first_responded_at = models.DateTimeField(null=True, blank=True)
    # When the resolution clock stopped (the ticket went pending or solved); null while it runs.
    sla_paused_at = models.DateTimeField(null=True, blank=True)
    # How long the resolution clock has been stopped in all: resolution_due_at includes it.
    sla_paused_seconds = models.PositiveBigIntegerField(default=0)
    # The same stops counted in business hours (tickets/business_hours.py): what a priority
    # change adds back when a calendar is in force. Equal to sla_paused_seconds without one.
    sla_paused_business_seconds = models.PositiveBigIntegerField(default=0)
    # When the sweep recorded each target's breach: set once, by compare-and-swap, with the
    # one sla.breached event (tickets/sla.py record_breaches).
    first_response_breached_at = models.DateTimeField(null=True, blank=True)
    resolution_breached_at = models.DateTimeField(null=True, blank=True)
    # --- tags and the addresses copied on public replies ---
    tags = models.ManyToManyField("Tag", blank=True, related_name="tickets")  # type: ignore[var-annotated]
    cc = models.JSONField(default=list, blank=True)
    # DESIGN §19: the ticket this duplicate was merged into (tickets/merge.py). Set once, with
    # the status closed; the source's messages, tags, CC and refunds are on that ticket now.
    merged_into = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="merged_from"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(reference__regex=r"^TCK-[0-9]+$"), name="ticket_reference_format"
            ),
            # A merged ticket is closed, and never merged into itself.
            models.CheckConstraint(
                condition=Q(merged_into__isnull=True)
                | (Q(status="closed") & ~Q(merged_into=F("pk"))),
                name="ticket_merged_is_closed_elsewhere",
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
            # The SLA sweep's two work queues: only targets still running and not yet breached.
            models.Index(
                fields=["first_response_due_at"],
                condition=Q(first_responded_at__isnull=True)
                & Q(first_response_breached_at__isnull=True)
                & Q(status__in=["open", "pending"]),
                name="ticket_first_response_due_idx",
            ),
            models.Index(
                fields=["resolution_due_at"],
                condition=Q(resolution_breached_at__isnull=True, status="open"),
                name="ticket_resolution_due_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.reference} {self.subject}"


class SlaPolicy(models.Model):
    """DESIGN §15: per priority, how soon the first response and the resolution are due.
    Edited in admin; a change applies to tickets opened, or re-prioritised, after it."""

    priority = models.CharField(max_length=8, choices=Ticket.Priority.choices, unique=True)
    first_response_hours = models.PositiveIntegerField()
    resolution_hours = models.PositiveIntegerField()
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "SLA policy"
        verbose_name_plural = "SLA policies"
        constraints = [
            models.CheckConstraint(
                condition=Q(first_response_hours__gt=0)
                & Q(resolution_hours__gte=F("first_response_hours")),
                name="sla_policy_targets_in_order",
            ),
        ]

    def __str__(self) -> str:
        return (
            f"{self.get_priority_display()}: first response {self.first_response_hours} h, "
            f"resolution {self.resolution_hours} h"
        )


class Tag(models.Model):
    """A label on tickets. One tag per name whatever its case: "Damaged" is "damaged"."""

    name = models.CharField(max_length=50)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(Lower("name"), name="tag_name_unique_ignoring_case"),
            models.CheckConstraint(condition=~Q(name=""), name="tag_name_not_empty"),
        ]

    def __str__(self) -> str:
        return self.name


class TicketCounter(models.Model):
    """The last ticket number handed out: one row. A new ticket moves it on and holds its row
    until the ticket commits, so no two tickets take the same number
    (tickets/services/numbering.py)."""

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
        # Never its words: admin's log keeps an object's name (see ops/retention.py).
        return f"{self.ticket.reference} {self.author_kind} message {self.pk}"

    @property
    def is_public(self) -> bool:
        return self.visibility == self.Visibility.PUBLIC


# --- attachments (DESIGN §15) ------------------------------------------------------------------


def attachment_path(attachment: "Attachment", filename: str) -> str:
    """Where the bytes live in storage: a random name under the ticket's folder. The customer's
    file name is never a path (it is kept, sanitised, in `filename`)."""
    return f"attachments/{attachment.message.ticket.reference}/{uuid.uuid4().hex}"


class Attachment(models.Model):
    """A file carried by a message: inbound mail's, or an agent's reply's. `content_type` is
    read from the bytes (tickets/attachments.py), never taken from the sender."""

    message = models.ForeignKey(TicketMessage, on_delete=models.CASCADE, related_name="attachments")
    file = models.FileField(upload_to=attachment_path, max_length=255)
    filename = models.CharField(max_length=255)
    content_type = models.CharField(max_length=100)
    size = models.PositiveBigIntegerField()
    sha256 = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.filename} ({self.content_type}, {self.size} bytes)"


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
        PRIORITY_CHANGED = "priority_changed", "Priority changed"
        SLA_BREACHED = "sla.breached", "SLA target breached"
        TAGS_CHANGED = "tags_changed", "Tags changed"
        CC_CHANGED = "cc_changed", "CC list changed"
        # A public reply sent although the claim check found that the records contradict what
        # it says about a refund (DESIGN §13); `data` keeps the claims and the message.
        CLAIMS_CONFIRMED = "claims_confirmed", "Reply sent despite contradicted claims"
        # DESIGN §19: the satisfaction survey of a solve (`data.survey`), tickets/satisfaction.py.
        SATISFACTION_SENT = "satisfaction_sent", "Satisfaction survey emailed"
        SATISFACTION_RATED = "satisfaction_rated", "Customer rated the support"
        SATISFACTION_COMMENTED = "satisfaction_commented", "Customer commented on the rating"
        # DESIGN §19: one on each side of a merge, naming the other ticket's reference.
        MERGED_INTO = "merged_into", "Merged into another ticket"
        MERGED_FROM = "merged_from", "Another ticket merged into this one"

    ticket = models.ForeignKey(Ticket, on_delete=models.CASCADE, related_name="events")
    type = models.CharField(max_length=32, choices=Type.choices)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    data = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            # A target is breached once: two sweeps racing record one event between them.
            models.UniqueConstraint(
                F("ticket"),
                KT("data__target"),
                condition=Q(type="sla.breached"),
                name="ticket_event_one_breach_per_target",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.ticket.reference}: {self.type}"


# DESIGN §15: what a macro's body may say; desk/macros.py renders each from current state.
MACRO_PLACEHOLDERS = (
    "customer.name",
    "customer.first_name",
    "ticket.reference",
    "order.id",
    "agent.name",
    "refund.amount",
    "refund.status",
)
MACRO_PLACEHOLDER = re.compile(r"\{\{\s*([^{}]*?)\s*\}\}")
MACRO_ACTIONS = ("status", "priority", "add_tags")


def _placeholder_problems(body: str) -> list[str]:
    unknown = sorted(
        {name for name in MACRO_PLACEHOLDER.findall(body) if name not in MACRO_PLACEHOLDERS}
    )
    return [
        f"Unknown placeholder {{{{{name}}}}}; use one of: "
        + ", ".join(f"{{{{{known}}}}}" for known in MACRO_PLACEHOLDERS)
        for name in unknown
    ]


def macro_problems(body: str, actions: object, translations: object = None) -> dict[str, list[str]]:
    """What is wrong with a macro's body, translations and actions, by field (empty:
    nothing)."""
    problems: dict[str, list[str]] = {}
    if wrong_body := _placeholder_problems(body):
        problems["body"] = wrong_body
    if not isinstance(translations, dict) or not all(
        isinstance(text, str) and text.strip() for text in translations.values()
    ):
        problems["translations"] = ['An object: {"<language>": "<body in it>", ...}.']
    else:
        wrong = [
            f"{language}: {problem}"
            for language, text in translations.items()
            for problem in _placeholder_problems(text)
        ]
        if wrong:
            problems["translations"] = wrong
    if not isinstance(actions, dict):
        problems["actions"] = ['An object: {"status", "priority", "add_tags"}, each optional.']
        return problems
    wrong = []
    for key, value in actions.items():
        if key not in MACRO_ACTIONS:
            wrong.append(f"Unknown action {key!r}.")
        elif key == "status" and value not in Ticket.Status.values:
            wrong.append(f"status must be one of: {', '.join(Ticket.Status.values)}.")
        elif key == "priority" and value not in Ticket.Priority.values:
            wrong.append(f"priority must be one of: {', '.join(Ticket.Priority.values)}.")
        elif key == "add_tags" and not (
            isinstance(value, list) and all(isinstance(v, str) and v.strip() for v in value)
        ):
            wrong.append("add_tags must be a list of tag names.")
    if wrong:
        problems["actions"] = wrong
    return problems


class Macro(models.Model):
    """A canned reply: a body with placeholders and optional actions, shared (no owner) or
    one agent's own. Applying one only fills the reply box (desk/macros.py): nothing is sent
    or changed until the agent sends or confirms."""

    class Visibility(models.TextChoices):
        PUBLIC = "public", "Public reply"
        INTERNAL = "internal", "Internal note"

    name = models.CharField(max_length=100)
    body = models.TextField()
    visibility = models.CharField(
        max_length=16, choices=Visibility.choices, default=Visibility.PUBLIC
    )
    actions = models.JSONField(default=dict, blank=True)
    # The body in other languages, by language code ("zh": "…"): applying the macro picks the
    # customer's language (desk/macros.py), else `body`.
    translations = models.JSONField(default=dict, blank=True)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="macros",
        help_text="Empty: shared with the whole desk.",
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name", "id"]

    def __str__(self) -> str:
        return self.name

    def save(self, *args, **kwargs) -> None:
        # Refused at every save, not only in admin's form: an unknown placeholder never lands.
        problems = macro_problems(self.body, self.actions, self.translations)
        if problems:
            raise ValidationError(problems)
        super().save(*args, **kwargs)

    def clean(self) -> None:
        problems = macro_problems(self.body, self.actions, self.translations)
        if problems:
            raise ValidationError(problems)


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
        DETAILS = "ticket.details", "Priority, tags, CC or SLA changed"
        SATISFACTION_RATED = "satisfaction.rated", "Customer rated the support"
        TICKET_MERGED = "ticket.merged", "Tickets merged"

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
        SATISFACTION_RATED = "satisfaction_rated", "Customer rated the support"

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


def new_survey_key() -> str:
    return uuid.uuid4().hex


class SatisfactionSurvey(models.Model):
    """DESIGN §19: the good / bad question one solve of a ticket emails its customer
    (tickets/satisfaction.py). Rated once: the first answer wins. A later solve of the same
    ticket voids the survey if it is still unanswered and sends a new one."""

    class Rating(models.TextChoices):
        GOOD = "good", "Good"
        BAD = "bad", "Bad"

    ticket = models.ForeignKey(Ticket, on_delete=models.CASCADE, related_name="surveys")
    # What the links' signed token names: random, so a token says nothing about other surveys.
    key = models.CharField(max_length=32, unique=True, default=new_survey_key)
    # Whom the rating is about: the assignee when the ticket was solved.
    agent = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    send_attempts = models.PositiveIntegerField(default=0)
    sent_at = models.DateTimeField(null=True, blank=True)
    # A later solve replaced it, or the ticket was reopened before it could be sent.
    voided_at = models.DateTimeField(null=True, blank=True)
    rating = models.CharField(max_length=4, choices=Rating.choices, blank=True)
    comment = models.TextField(max_length=2000, blank=True)
    rated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                # Unrated: no rating (blank); rated: good or bad, with its time.
                condition=(Q(rated_at__isnull=True) & ~Q(rating__in=["good", "bad"]))
                | Q(rating__in=["good", "bad"], rated_at__isnull=False),
                name="satisfaction_rated_with_a_rating",
            ),
            # At most one survey a customer can still answer per ticket: a new solve voids the
            # one before it in the same transaction.
            models.UniqueConstraint(
                fields=["ticket"],
                condition=Q(rated_at__isnull=True, voided_at__isnull=True),
                name="satisfaction_one_open_survey_per_ticket",
            ),
        ]
        indexes = [
            # The sweep's work queue: surveys whose first send never happened.
            models.Index(
                fields=["created_at"],
                condition=Q(sent_at__isnull=True, voided_at__isnull=True, send_attempts=0),
                name="satisfaction_unsent_idx",
            ),
            models.Index(fields=["agent", "rated_at"], name="satisfaction_rated_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.ticket_id} survey {self.pk}: {self.rating or 'unrated'}"


class SavedView(models.Model):
    """A named filter and sort of the ticket list (DESIGN §19): `query` is the list's query
    string (tickets/saved_views.py checks it against the list's own filters), so opening the
    view is opening the list with it. One user's own, or shared with the team; a team view
    nobody owns came with the desk and only supervisors change it."""

    name = models.CharField(max_length=80)
    query = models.CharField(max_length=500, blank=True)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="saved_views",
        help_text="Empty: a team view that came with the desk.",
    )
    shared = models.BooleanField(default=False, help_text="Listed for the whole team.")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name", "id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(owner__isnull=False) | Q(shared=True),
                name="saved_view_ownerless_is_shared",
            ),
            models.UniqueConstraint(
                Lower("name"), "owner", name="saved_view_name_unique_per_owner"
            ),
            # NULL owners are all different to a unique index: the team's names get their own.
            models.UniqueConstraint(
                Lower("name"),
                condition=Q(owner__isnull=True),
                name="saved_view_team_name_unique",
            ),
        ]

    def __str__(self) -> str:
        return self.name


# DESIGN §19's business calendar lives with the SLA clocks' code, and a desk user's profile with
# the reads and writes of how they appear (tickets/people.py); imported here so that the app's
# models are all registered when this module is.
from tickets.calendars import BusinessCalendar  # noqa: E402, F401
from tickets.people import StaffProfile  # noqa: E402, F401
