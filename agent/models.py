import uuid
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from config.roles import Role

if TYPE_CHECKING:
    from tickets.selectors import ThreadMessage


class AgentRun(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        COMPLETED = "completed", "Completed"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"

    class StopReason(models.TextChoices):
        FINAL_ANSWER = "final_answer", "Final answer"
        MAX_STEPS = "max_steps", "Step limit reached"
        BUDGET = "budget", "Token budget spent"
        LOOP_DETECTED = "loop_detected", "Loop detected"
        CANCELLED = "cancelled", "Cancelled"
        ERROR = "error", "Error"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    ticket = models.ForeignKey("tickets.Ticket", on_delete=models.CASCADE, related_name="runs")
    started_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="agent_runs"
    )
    # The ticket's customer when the run started: the scope of every step, whatever happens
    # to the ticket afterwards (DESIGN §1, invariant 2). Null only on runs from before it was
    # recorded.
    customer = models.ForeignKey(
        "orders.Customer",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="agent_runs",
    )
    actor_role = models.CharField(max_length=16, choices=Role.choices)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    stop_reason = models.CharField(max_length=16, choices=StopReason.choices, blank=True)
    step_count = models.PositiveIntegerField(default=0)
    max_steps = models.PositiveIntegerField(default=6)
    model = models.CharField(max_length=100, blank=True)
    prompt_version = models.CharField(max_length=32, blank=True)
    tools_version = models.CharField(max_length=32, blank=True)
    tokens_in = models.PositiveIntegerField(default=0)
    tokens_out = models.PositiveIntegerField(default=0)
    lease_owner = models.CharField(max_length=64, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    cancel_requested = models.BooleanField(default=False)
    # Set when the run's context held untrusted text that reads like instructions.
    untrusted_instructions = models.BooleanField(default=False)
    version = models.PositiveIntegerField(default=0)
    # The seq of the run's last RunEvent: an append takes the next numbers by incrementing it
    # in the UPDATE that locks the run row, never by asking for MAX(seq).
    last_event_seq = models.PositiveIntegerField(default=0)
    final_answer = models.TextField(blank=True)
    # The answer says a refund is done, approved or on its way and the records disagree
    # (agent/answer_check/); `answer_check` keeps the claims and the real statuses.
    answer_contradicts_state = models.BooleanField(default=False)
    answer_check = models.JSONField(default=dict, blank=True)
    # The run's second output (DESIGN §13): the reply the customer could be sent, written when
    # the run completes (agent/drafts.py, agent/runtime/drafting.py); `draft_language` is its
    # language, `draft_state` the refunds it describes ([{request_id, order_id, amount,
    # currency, status}]): when they have changed, the draft is written again.
    draft_reply = models.TextField(blank=True)
    draft_language = models.CharField(max_length=8, blank=True)
    draft_state = models.JSONField(default=list, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    # Not a column: the ticket's thread as the step that read the run found it
    # (agent.services.run_held, run_acquire_lease); None on a run read any other way.
    ticket_thread: "list[ThreadMessage] | None" = None

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            # The stalled-run sweep's work queue: only runs still going, oldest change first.
            models.Index(
                fields=["updated_at"],
                condition=Q(status__in=["queued", "running"]),
                name="agent_run_active_idx",
            ),
            # /metrics counts the runs of the last minutes (ops.metrics.Tally).
            models.Index(fields=["created_at"], name="agent_run_created_idx"),
        ]

    def __str__(self) -> str:
        return f"run {self.id} on {self.ticket_id} ({self.status})"


class AgentMessage(models.Model):
    """The protocol transcript, in Chat Completions shape."""

    class Role(models.TextChoices):
        SYSTEM = "system", "System"
        USER = "user", "User"
        ASSISTANT = "assistant", "Assistant"
        TOOL = "tool", "Tool"

    run = models.ForeignKey(AgentRun, on_delete=models.CASCADE, related_name="messages")
    seq = models.PositiveIntegerField()
    role = models.CharField(max_length=16, choices=Role.choices)
    content = models.TextField(blank=True)
    tool_calls = models.JSONField(null=True, blank=True)
    tool_call_id = models.CharField(max_length=100, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["run", "seq"], name="agent_message_run_seq_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.run_id} #{self.seq} {self.role}"


class RunEvent(models.Model):
    """What the UI streams: run.started, model.started, tool_call.completed, ..."""

    run = models.ForeignKey(AgentRun, on_delete=models.CASCADE, related_name="events")
    seq = models.PositiveIntegerField()
    type = models.CharField(max_length=32)
    data = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["run", "seq"], name="run_event_run_seq_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.run_id} #{self.seq} {self.type}"


class McpToken(models.Model):
    """A credential made for MCP hosts only (DESIGN §17): bound to a user and one scope (a
    ticket, or a customer and so each of their tickets), expiring, revocable. Only a digest of
    the key is stored; the key itself is shown once, when the token is made. The REST API
    refuses it, and /mcp refuses the REST API's tokens."""

    class Scope(models.TextChoices):
        TICKET = "ticket", "Ticket"
        CUSTOMER = "customer", "Customer"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="mcp_tokens"
    )
    ticket = models.ForeignKey(
        "tickets.Ticket",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="mcp_tokens",
    )
    customer = models.ForeignKey(
        "orders.Customer",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="mcp_tokens",
    )
    # sha256 of the key, hex: what a presented key is looked up by.
    key_digest = models.CharField(max_length=64, unique=True, editable=False)
    # The key's first characters, to tell tokens apart in lists; not enough to use one.
    key_hint = models.CharField(max_length=16, editable=False)
    label = models.CharField(max_length=100, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "MCP token"
        constraints = [
            models.CheckConstraint(
                condition=Q(ticket__isnull=False, customer__isnull=True)
                | Q(ticket__isnull=True, customer__isnull=False),
                name="mcp_token_ticket_xor_customer",
            ),
        ]

    def __str__(self) -> str:
        return f"MCP token {self.key_hint}… of {self.user_id}"

    @property
    def scope(self) -> str:
        return self.Scope.TICKET if self.ticket_id else self.Scope.CUSTOMER


class McpSession(models.Model):
    """An MCP host connected to the desk's tools (DESIGN §12).

    Like a run, it binds who acts (user, role) and on whose data (the ticket and its customer)
    once, when it starts; nothing the host sends later changes them. Its tool calls are logged
    against it as a run's are against the run.
    """

    class Transport(models.TextChoices):
        HTTP = "http", "Streamable HTTP"
        STDIO = "stdio", "stdio"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="mcp_sessions"
    )
    role = models.CharField(max_length=16, choices=Role.choices)
    ticket = models.ForeignKey(
        "tickets.Ticket", on_delete=models.CASCADE, related_name="mcp_sessions"
    )
    # The ticket's customer when the session started: its scope, whatever happens to the
    # ticket afterwards.
    customer = models.ForeignKey(
        "orders.Customer", on_delete=models.PROTECT, related_name="mcp_sessions"
    )
    transport = models.CharField(max_length=8, choices=Transport.choices)
    # The Mcp-Session-Id the HTTP transport gave the host; empty on stdio, where the server
    # process is the session.
    transport_session_id = models.CharField(max_length=100, blank=True)
    client_name = models.CharField(max_length=200, blank=True)
    client_version = models.CharField(max_length=100, blank=True)
    # The MCP token the session was opened with; each request must present it again.
    token = models.ForeignKey(
        McpToken, on_delete=models.SET_NULL, null=True, blank=True, related_name="sessions"
    )
    started_at = models.DateTimeField(auto_now_add=True)
    last_seen_at = models.DateTimeField(default=timezone.now)
    # When the host closed the session (HTTP DELETE, or the stdio process ending). A session
    # that just went quiet expires on the server without a date here.
    ended_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-started_at"]
        verbose_name = "MCP session"
        constraints = [
            models.UniqueConstraint(
                fields=["transport_session_id"],
                condition=~Q(transport_session_id=""),
                name="mcp_session_transport_id_unique",
            ),
        ]

    def __str__(self) -> str:
        return f"MCP session {str(self.id)[:8]} on {self.ticket_id} ({self.user_id})"


class ToolCallLog(models.Model):
    """Exactly one row per tool call, whatever its outcome (DESIGN §1, invariant 3).

    A call belongs to exactly one run or one MCP session.
    """

    run = models.ForeignKey(
        AgentRun, on_delete=models.CASCADE, null=True, blank=True, related_name="tool_calls"
    )
    # PROTECT: a session's calls are evidence; the session row stays as long as they do.
    mcp_session = models.ForeignKey(
        McpSession, on_delete=models.PROTECT, null=True, blank=True, related_name="tool_calls"
    )
    ticket = models.ForeignKey(
        "tickets.Ticket", on_delete=models.CASCADE, related_name="tool_calls"
    )
    tool_call_id = models.CharField(max_length=100)
    tool_name = models.CharField(max_length=100)
    arguments = models.JSONField(null=True, blank=True)
    arguments_raw = models.TextField(blank=True)
    args_digest = models.CharField(max_length=64, blank=True)
    ok = models.BooleanField()
    # What the model (or MCP host) was sent, at most 8,000 characters of JSON.
    result = models.JSONField()
    # The whole JSON text of a result too long to send, kept for read_tool_result, up to
    # TOOL_RESULT_STORE_MAX_CHARS characters (`result` then says how much was kept). Text, not
    # JSON: paging needs the exact characters, and jsonb would reorder the keys. Empty when
    # `result` is the whole answer.
    full_result = models.TextField(blank=True)
    error_code = models.CharField(max_length=40, blank=True)
    retryable = models.BooleanField(default=False)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="tool_calls"
    )
    actor_role = models.CharField(max_length=16)
    elapsed_ms = models.PositiveIntegerField(default=0)
    # An MCP session's repeated identical call is answered with this row's result, not run
    # again (DESIGN §17).
    answered_from = models.ForeignKey(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "tool_call_id"], name="tool_call_log_run_call_unique"
            ),
            # An MCP request's JSON-RPC id, scoped to its session: a redelivered request
            # returns the logged result instead of running the tool again.
            models.UniqueConstraint(
                fields=["mcp_session", "tool_call_id"], name="tool_call_log_mcp_call_unique"
            ),
            models.CheckConstraint(
                condition=Q(run__isnull=False, mcp_session__isnull=True)
                | Q(run__isnull=True, mcp_session__isnull=False),
                name="tool_call_log_run_xor_mcp_session",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.tool_name} {self.tool_call_id} ({'ok' if self.ok else self.error_code})"
