"""Admin for eval runs: read-only, since each row is a measurement the command wrote."""

import json

from django.contrib import admin
from django.utils.html import format_html

from config.admin_tools import ReadOnlyMixin
from evals.models import EvalCaseResult, EvalRun


def pretty_json(value) -> str:
    return format_html(
        "<pre>{}</pre>", json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)
    )


def metric(name: str, description: str):
    """A list column showing one metric of the run, to four places."""

    @admin.display(description=description)
    def show(model_admin: admin.ModelAdmin, obj: EvalRun) -> str:
        value = obj.metrics.get(name)
        return "-" if value is None else f"{value:.4f}"

    return show


class EvalCaseResultInline(ReadOnlyMixin, admin.TabularInline):
    model = EvalCaseResult
    extra = 0
    fields = readonly_fields = (
        "case_id",
        "repeat_index",
        "passed",
        "tools_called",
        "failures",
        "first_tool",
        "latency_ms",
        "tokens_in",
        "tokens_out",
        "error",
    )
    show_change_link = True


@admin.register(EvalRun)
class EvalRunAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = [
        "started_at",
        "model",
        "provider",
        "prompt_version",
        "tools_version",
        "cases_count",
        "repeat",
        "task_success",
        "tool_selection_accuracy",
        "argument_accuracy",
        "schema_pass_rate",
        "pass_k",
        "latency_p50_ms",
        "latency_p95_ms",
        "finished_at",
    ]
    list_filter = ["model", "prompt_version", "tools_version", "started_at"]
    search_fields = ["model", "prompt_version", "tools_version", "git_commit", "cases_path"]
    date_hierarchy = "started_at"
    exclude = ["metrics", "report"]
    readonly_fields = ["metrics_pretty"]
    inlines = [EvalCaseResultInline]

    task_success = metric("task_success", "task success")
    tool_selection_accuracy = metric("tool_selection_accuracy", "tool selection")
    argument_accuracy = metric("argument_accuracy", "arguments")
    schema_pass_rate = metric("schema_pass_rate", "schema pass")
    pass_k = metric("pass_k", "pass^k")

    @admin.display(description="metrics")
    def metrics_pretty(self, obj: EvalRun) -> str:
        return pretty_json(obj.metrics)


@admin.register(EvalCaseResult)
class EvalCaseResultAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ["case_id", "repeat_index", "passed", "first_tool", "latency_ms", "eval_run"]
    list_filter = ["passed", "first_tool"]
    search_fields = ["case_id"]
    list_select_related = ["eval_run"]
    exclude = ["transcript"]
    readonly_fields = ["transcript_pretty"]

    @admin.display(description="transcript (tool calls, results, refunds, answer)")
    def transcript_pretty(self, obj: EvalCaseResult) -> str:
        return pretty_json(obj.transcript)
