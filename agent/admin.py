"""Admin for assistant runs and the tool-call audit trail. All of it is read-only: these rows
are evidence of what happened, written only by the runtime and the executor."""

import json
from datetime import timedelta

from django import forms
from django.contrib import admin, messages
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html

from agent.mcp_tokens import (
    MAX_DAYS,
    McpTokenRefused,
    check_token_holder,
    mcp_token_revoke,
    with_new_key,
)
from agent.models import AgentMessage, AgentRun, McpSession, McpToken, RunEvent, ToolCallLog
from config import times
from config.admin_tools import ReadOnlyMixin
from refunds.admin import (
    LIST_ID_CHARS,
    DeskAdminMedia,
    pretty_json,
    run_link,
    shortened,
    ticket_link,
    truncated,
)

# What each run event means, in the words the assistant panel uses. An event type missing here
# (a newer one) is still shown, spelled out from its name.
RUN_EVENT_LABELS = {
    "run.started": "Run started",
    "model.started": "Asked the model",
    "message.delta": "Answer text as it arrived",
    "model.completed": "The model answered",
    "message": "The assistant wrote a message",
    "tool_call.started": "Tool call started",
    "tool_call.completed": "Tool call finished",
    "approval.required": "Refund proposed, waiting for a reviewer",
    "run.completed": "Run completed",
    "run.failed": "Run failed",
    "run.cancelled": "Run cancelled",
}


def run_event_label(event_type: str) -> str:
    spelled = event_type.replace(".", " ").replace("_", " ").capitalize()
    return RUN_EVENT_LABELS.get(event_type, spelled)


def readable_tool_calls(tool_calls):
    """A message's tool calls with each call's arguments (a JSON string, as the model sent it)
    decoded, so they read as JSON rather than as an escaped string. Arguments that are not
    valid JSON stay as sent."""
    if not isinstance(tool_calls, list):
        return tool_calls
    return [_with_decoded_arguments(call) for call in tool_calls]


def _with_decoded_arguments(call):
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict) or not isinstance(function.get("arguments"), str):
        return call
    try:
        arguments = json.loads(function["arguments"])
    except ValueError:
        return call
    return {**call, "function": {**function, "arguments": arguments}}


def message_content(message: AgentMessage) -> str:
    """A tool message's content is the JSON result the model got: shown formatted."""
    if message.role == AgentMessage.Role.TOOL:
        try:
            return pretty_json(json.loads(message.content))
        except ValueError:
            pass
    return message.content or "-"


class AgentMessageInline(ReadOnlyMixin, admin.TabularInline):
    model = AgentMessage
    extra = 0
    fields = readonly_fields = (
        "seq",
        "role",
        "content_display",
        "tool_calls_pretty",
        "tool_call_id_short",
        "created_at",
    )

    @admin.display(description="content")
    def content_display(self, obj: AgentMessage) -> str:
        return message_content(obj)

    @admin.display(description="tool calls")
    def tool_calls_pretty(self, obj: AgentMessage) -> str:
        return pretty_json(readable_tool_calls(obj.tool_calls))

    @admin.display(description="tool call id")
    def tool_call_id_short(self, obj: AgentMessage) -> str:
        return shortened(obj.tool_call_id)


class RunEventInline(ReadOnlyMixin, admin.TabularInline):
    model = RunEvent
    extra = 0
    fields = readonly_fields = ("seq", "what", "data_pretty", "created_at")

    @admin.display(description="event")
    def what(self, obj: RunEvent) -> str:
        return format_html('<span title="{}">{}</span>', obj.type, run_event_label(obj.type))

    @admin.display(description="data")
    def data_pretty(self, obj: RunEvent) -> str:
        return pretty_json(obj.data)


def mcp_session_link(session_id) -> str:
    """An MCP session by the first group of its UUID, linking to it."""
    if session_id is None:
        return "-"
    return format_html(
        '<a href="{}" title="{}">MCP {}…</a>',
        reverse("admin:agent_mcpsession_change", args=[session_id]),
        session_id,
        str(session_id)[:8],
    )


def call_source(call: ToolCallLog) -> str:
    """The run a call belongs to, or, for an MCP host's call, its session."""
    if call.run_id is None:
        return mcp_session_link(call.mcp_session_id)
    return run_link(call.run_id)


class ToolCallLogInline(ReadOnlyMixin, admin.TabularInline):
    model = ToolCallLog
    extra = 0
    fields = readonly_fields = (
        "tool_call_id_short",
        "tool_name",
        "ok",
        "error_code",
        "elapsed_ms",
        "created_at",
    )
    show_change_link = True

    @admin.display(description="tool call id")
    def tool_call_id_short(self, obj: ToolCallLog) -> str:
        return shortened(obj.tool_call_id)


@admin.register(AgentRun)
class AgentRunAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = [
        "run_id",
        "ticket_reference",
        "started_by",
        "actor_role",
        "status",
        "stop_reason",
        "step_count",
        "tokens_in",
        "tokens_out",
        "created_at",
    ]
    list_display_links = ["run_id"]
    list_filter = ["status", "stop_reason", "actor_role", "created_at"]
    search_fields = ["id", "ticket__reference", "started_by__username"]
    list_select_related = ["ticket", "started_by"]
    date_hierarchy = "created_at"
    inlines = [AgentMessageInline, ToolCallLogInline, RunEventInline]
    Media = DeskAdminMedia
    # Fields the change form shows its own way: the ticket by its reference, JSON formatted.
    SHOWN_AS = {"ticket": "ticket_reference", "answer_check": "answer_check_pretty"}

    def get_fields(self, request, obj=None):
        """Every field of the run, in model order, so a field added later shows up too."""
        return [self.SHOWN_AS.get(f.name, f.name) for f in self.model._meta.concrete_fields]

    def get_readonly_fields(self, request, obj=None):
        return self.get_fields(request, obj)

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        if obj is not None:  # the heading names the ticket by reference, not by its row id
            context["subtitle"] = (
                f"Run {str(obj.pk)[:8]}… on {obj.ticket.reference} ({obj.get_status_display()})"
            )
        return super().render_change_form(
            request, context, add=add, change=change, form_url=form_url, obj=obj
        )

    @admin.display(description="answer check")
    def answer_check_pretty(self, run: AgentRun) -> str:
        return pretty_json(getattr(run, "answer_check", None) or None)

    @admin.display(description="run", ordering="created_at")
    def run_id(self, run: AgentRun) -> str:
        return format_html('<span title="{}">{}…</span>', run.pk, str(run.pk)[:8])

    @admin.display(description="ticket", ordering="ticket__reference")
    def ticket_reference(self, run: AgentRun) -> str:
        return ticket_link(run.ticket)


class CallSourceFilter(admin.SimpleListFilter):
    title = "made in"
    parameter_name = "source"

    def lookups(self, request, model_admin):
        return [("run", "an assistant run"), ("mcp", "an MCP session")]

    def queryset(self, request, queryset):
        if self.value() == "run":
            return queryset.filter(run__isnull=False)
        if self.value() == "mcp":
            return queryset.filter(mcp_session__isnull=False)
        return queryset


@admin.register(McpSession)
class McpSessionAdmin(ReadOnlyMixin, admin.ModelAdmin):
    """The sessions MCP hosts opened (DESIGN §12), with the calls they made: read-only, like
    the runs."""

    list_display = [
        "session_id",
        "ticket_reference",
        "user",
        "role",
        "transport",
        "client",
        "started_at",
        "last_seen_at",
        "ended_at",
    ]
    list_display_links = ["session_id"]
    list_filter = ["role", "transport", "started_at"]
    search_fields = ["id", "ticket__reference", "user__username", "client_name"]
    list_select_related = ["ticket", "user"]
    date_hierarchy = "started_at"
    inlines = [ToolCallLogInline]
    Media = DeskAdminMedia
    SHOWN_AS = {"ticket": "ticket_reference"}

    def get_fields(self, request, obj=None):
        """Every field of the session, in model order, so a field added later shows up too."""
        return [self.SHOWN_AS.get(f.name, f.name) for f in self.model._meta.concrete_fields]

    def get_readonly_fields(self, request, obj=None):
        return self.get_fields(request, obj)

    @admin.display(description="session", ordering="started_at")
    def session_id(self, session: McpSession) -> str:
        return format_html('<span title="{}">{}…</span>', session.pk, str(session.pk)[:8])

    @admin.display(description="ticket", ordering="ticket__reference")
    def ticket_reference(self, session: McpSession) -> str:
        return ticket_link(session.ticket)

    @admin.display(description="client", ordering="client_name")
    def client(self, session: McpSession) -> str:
        return " ".join(part for part in (session.client_name, session.client_version) if part)


@admin.register(ToolCallLog)
class ToolCallLogAdmin(ReadOnlyMixin, admin.ModelAdmin):
    # Fits 1280 px with the admin's side navigation and filters open; the call's id and the
    # actor's role are on the row's page. Newest first: what just happened is what is looked for.
    list_display = [
        "created",
        "tool_name",
        "outcome",
        "ticket_reference",
        "run_short",
        "actor",
    ]
    list_display_links = ["created"]
    ordering = ["-created_at", "-id"]
    list_filter = [
        "tool_name",
        "ok",
        "error_code",
        CallSourceFilter,
        ("actor", admin.RelatedOnlyFieldListFilter),
        "created_at",
    ]
    search_fields = ["tool_call_id", "run__id", "mcp_session__id", "ticket__reference"]
    list_select_related = ["ticket", "actor"]
    date_hierarchy = "created_at"
    fields = readonly_fields = (
        "run_short",
        "ticket_reference",
        "tool_call_id",
        "tool_name",
        "actor",
        "actor_role",
        "ok",
        "error_code",
        "retryable",
        "elapsed_ms",
        "created_at",
        "args_digest_short",
        "arguments_raw",
        "arguments_pretty",
        "result_pretty",
    )
    Media = DeskAdminMedia

    @admin.display(description="created", ordering="created_at")
    def created(self, obj: ToolCallLog) -> str:
        return format_html('<span class="desk-nowrap">{}</span>', times.when(obj.created_at))

    @admin.display(description="outcome", ordering="error_code")
    def outcome(self, obj: ToolCallLog) -> str:
        return "ok" if obj.ok else truncated(obj.error_code or "error", LIST_ID_CHARS)

    @admin.display(description="tool call id", ordering="tool_call_id")
    def tool_call_id_short(self, obj: ToolCallLog) -> str:
        return shortened(obj.tool_call_id)

    @admin.display(description="run or MCP session", ordering="run__created_at")
    def run_short(self, obj: ToolCallLog) -> str:
        return call_source(obj)

    @admin.display(description="ticket", ordering="ticket__reference")
    def ticket_reference(self, obj: ToolCallLog) -> str:
        return ticket_link(obj.ticket)

    @admin.display(description="arguments digest")
    def args_digest_short(self, obj: ToolCallLog) -> str:
        return shortened(obj.args_digest)

    @admin.display(description="arguments (parsed)")
    def arguments_pretty(self, obj: ToolCallLog) -> str:
        return pretty_json(obj.arguments)

    @admin.display(description="result (what the model got)")
    def result_pretty(self, obj: ToolCallLog) -> str:
        return pretty_json(obj.result)


class McpTokenAddForm(forms.ModelForm):
    """A new MCP token: whose, on what, for how long. The key is made on save and shown once."""

    days = forms.IntegerField(min_value=1, max_value=MAX_DAYS, initial=30)

    class Meta:
        model = McpToken
        fields = ["user", "ticket", "customer", "label"]

    def clean(self):
        cleaned = super().clean() or {}
        if bool(cleaned.get("ticket")) == bool(cleaned.get("customer")):
            raise forms.ValidationError("Bind the token to exactly one ticket or one customer.")
        user = cleaned.get("user")
        if user is not None:
            try:
                check_token_holder(user)
            except McpTokenRefused as refused:
                self.add_error("user", str(refused))
        return cleaned


@admin.register(McpToken)
class McpTokenAdmin(admin.ModelAdmin):
    """MCP tokens (DESIGN §17): made here or with manage.py mcp_token, revoked here or with
    --revoke. Nothing about a token changes after it is made but its revocation."""

    list_display = (
        "key_hint",
        "user",
        "scope",
        "ticket",
        "customer",
        "expires_at",
        "revoked_at",
        "last_used_at",
    )
    list_filter = ("revoked_at",)
    search_fields = ("key_hint", "user__username", "ticket__reference", "label")
    actions = ["revoke"]
    readonly_fields = (
        "key_hint",
        "user",
        "ticket",
        "customer",
        "label",
        "created_by",
        "created_at",
        "expires_at",
        "revoked_at",
        "last_used_at",
    )

    def get_form(self, request, obj=None, change=False, **kwargs):
        if obj is None:
            kwargs["form"] = McpTokenAddForm
        return super().get_form(request, obj, change=change, **kwargs)

    def get_readonly_fields(self, request, obj=None):
        return self.readonly_fields if obj is not None else ()

    def get_fields(self, request, obj=None):
        if obj is None:
            return ["user", "ticket", "customer", "days", "label"]
        return list(self.readonly_fields)

    def save_model(self, request, obj, form, change):
        if change:
            return
        obj.created_by = request.user
        obj.expires_at = timezone.now() + timedelta(days=form.cleaned_data["days"])
        key = with_new_key(obj)
        obj.save()
        self.message_user(
            request,
            f"MCP token made. Copy it now, it is not shown again: {key}",
            messages.WARNING,
        )

    def has_delete_permission(self, request, obj=None) -> bool:
        # A token is evidence of who could act: revoke it instead.
        return False

    @admin.action(description="Revoke selected MCP tokens", permissions=["change"])
    def revoke(self, request, queryset):
        revoked = sum(mcp_token_revoke(token=token) for token in queryset)
        self.message_user(request, f"{revoked} token(s) revoked.", messages.SUCCESS)
