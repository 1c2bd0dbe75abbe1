"""Admin for the tool-call audit trail: every call the model or an MCP host made, with its
arguments and the result it got, read-only; shared with the runs' and MCP sessions' pages,
which list their calls inline."""

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html

from agent.models import ToolCallLog
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
