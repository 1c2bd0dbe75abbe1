from rest_framework import serializers

from agent.errors import logged_error_in_words
from agent.models import AgentRun, RunEvent, ToolCallLog
from agent.runtime.run_answer import run_did, since_answer
from config.serializers import StrictCharField


class RunStartSerializer(serializers.Serializer):
    message = StrictCharField(max_length=4000)


class RunSerializer(serializers.ModelSerializer):
    ticket = serializers.CharField(source="ticket.reference", read_only=True)
    started_by = serializers.CharField(source="started_by.username", read_only=True)
    untrusted_warning = serializers.BooleanField(source="untrusted_instructions", read_only=True)
    # Blank until the run stops.
    stop_reason = serializers.ChoiceField(
        choices=AgentRun.StopReason.choices, allow_blank=True, read_only=True
    )
    # What the run did, rendered by the desk from its tool log, not read from the answer.
    did = serializers.SerializerMethodField()
    # "Since this answer: …": what became of the refunds the answer spoke of after it was
    # written, from their history ("" when nothing changed).
    since_answer = serializers.SerializerMethodField()

    class Meta:
        model = AgentRun
        fields = [
            "id",
            "ticket",
            "status",
            "stop_reason",
            "step_count",
            "max_steps",
            "final_answer",
            "did",
            "since_answer",
            "answer_contradicts_state",
            "answer_check",
            "draft_reply",
            "draft_language",
            "error",
            "started_by",
            "actor_role",
            "model",
            "prompt_version",
            "tools_version",
            "tokens_in",
            "tokens_out",
            "cancel_requested",
            "untrusted_warning",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields

    def get_did(self, run: AgentRun) -> list[str]:
        return run_did(run)

    def get_since_answer(self, run: AgentRun) -> str:
        return since_answer(run)


class RunEventSerializer(serializers.ModelSerializer):
    class Meta:
        model = RunEvent
        fields = ["seq", "type", "data", "created_at"]
        read_only_fields = fields


class ToolCallSerializer(serializers.ModelSerializer):
    actor = serializers.CharField(source="actor.username", read_only=True)
    # The error as the desk user reads it (agent/errors.py ERROR_WORDS); "" when the call was ok.
    error_words = serializers.SerializerMethodField()

    class Meta:
        model = ToolCallLog
        fields = [
            "tool_call_id",
            "tool_name",
            "arguments",
            "ok",
            "error_code",
            "error_words",
            "result",
            "actor",
            "elapsed_ms",
            "created_at",
        ]
        read_only_fields = fields

    def get_error_words(self, call: ToolCallLog) -> str:
        if call.ok:
            return ""
        return logged_error_in_words(call.result, call.error_code)
