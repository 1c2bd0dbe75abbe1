"""Admin for assistant runs: the run with its messages, tool calls and events, read-only; these
rows are evidence of what happened, written only by the runtime and the executor."""

import json

from django.contrib import admin
from django.utils.html import format_html

from agent.admin.calls import ToolCallLogInline
from agent.models import AgentMessage, AgentRun, RunEvent
from config.admin_tools import ReadOnlyMixin
from refunds.admin import DeskAdminMedia, pretty_json, shortened, ticket_link

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
