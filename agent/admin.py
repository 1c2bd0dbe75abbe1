"""Admin for assistant runs and the tool-call audit trail. All of it is read-only: these rows
are evidence of what happened, written only by the runtime and the executor."""

import json

from django.contrib import admin
from django.utils.html import format_html

from agent.models import AgentMessage, AgentRun, RunEvent, ToolCallLog
from config.admin_tools import ReadOnlyMixin


def pretty_json(value) -> str:
    if value is None:
        return "-"
    return format_html(
        "<pre>{}</pre>", json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)
    )


class AgentMessageInline(ReadOnlyMixin, admin.TabularInline):
    model = AgentMessage
    extra = 0
    fields = readonly_fields = (
        "seq",
        "role",
        "content",
        "tool_calls_pretty",
        "tool_call_id",
        "created_at",
    )

    @admin.display(description="tool calls")
    def tool_calls_pretty(self, obj: AgentMessage) -> str:
        return pretty_json(obj.tool_calls)


class RunEventInline(ReadOnlyMixin, admin.TabularInline):
    model = RunEvent
    extra = 0
    fields = readonly_fields = ("seq", "type", "data_pretty", "created_at")

    @admin.display(description="data")
    def data_pretty(self, obj: RunEvent) -> str:
        return pretty_json(obj.data)


class ToolCallLogInline(ReadOnlyMixin, admin.TabularInline):
    model = ToolCallLog
    extra = 0
    fields = readonly_fields = (
        "tool_call_id",
        "tool_name",
        "ok",
        "error_code",
        "elapsed_ms",
        "created_at",
    )
    show_change_link = True


@admin.register(AgentRun)
class AgentRunAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = [
        "id",
        "ticket",
        "started_by",
        "actor_role",
        "status",
        "stop_reason",
        "step_count",
        "tokens_in",
        "tokens_out",
        "created_at",
    ]
    list_filter = ["status", "stop_reason", "actor_role", "created_at"]
    search_fields = ["id", "ticket__reference", "started_by__username"]
    list_select_related = ["ticket", "started_by"]
    date_hierarchy = "created_at"
    inlines = [AgentMessageInline, ToolCallLogInline, RunEventInline]


@admin.register(ToolCallLog)
class ToolCallLogAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = [
        "created_at",
        "tool_name",
        "ok",
        "error_code",
        "tool_call_id",
        "run",
        "ticket",
        "actor",
        "actor_role",
        "elapsed_ms",
    ]
    list_filter = [
        "tool_name",
        "ok",
        "error_code",
        ("actor", admin.RelatedOnlyFieldListFilter),
        "created_at",
    ]
    search_fields = ["tool_call_id", "run__id", "ticket__reference"]
    list_select_related = ["run", "ticket", "actor"]
    date_hierarchy = "created_at"
    fields = readonly_fields = (
        "run",
        "ticket",
        "tool_call_id",
        "tool_name",
        "actor",
        "actor_role",
        "ok",
        "error_code",
        "retryable",
        "elapsed_ms",
        "created_at",
        "args_digest",
        "arguments_raw",
        "arguments_pretty",
        "result_pretty",
    )

    @admin.display(description="arguments (parsed)")
    def arguments_pretty(self, obj: ToolCallLog) -> str:
        return pretty_json(obj.arguments)

    @admin.display(description="result (what the model got)")
    def result_pretty(self, obj: ToolCallLog) -> str:
        return pretty_json(obj.result)
