"""A macro (its body, translations and suggested actions, checked as
tickets.models.macro_problems says) and a macro as applied to one ticket."""

from rest_framework import serializers

from agent.draft_templates import TEMPLATES
from tickets.models import Macro, macro_problems


class MacroSerializer(serializers.ModelSerializer):
    shared = serializers.SerializerMethodField(help_text="true: the whole desk's; false: yours")
    translations = serializers.DictField(
        child=serializers.CharField(),
        required=False,
        help_text='the body in other languages, {"zh": "…"}: applying picks the customer\'s '
        f"language ({', '.join(sorted(TEMPLATES))}), else the body",
    )

    class Meta:
        model = Macro
        fields = ["id", "name", "body", "visibility", "actions", "translations", "shared"]

    def get_shared(self, macro: Macro) -> bool:
        return macro.owner_id is None

    def validate_translations(self, translations: dict) -> dict:
        unknown = sorted(set(translations) - set(TEMPLATES))
        if unknown:
            raise serializers.ValidationError(
                f"The desk tells these languages apart: {', '.join(sorted(TEMPLATES))}; "
                f"not {', '.join(unknown)}."
            )
        return translations

    def validate(self, attrs: dict) -> dict:
        current = self.instance
        problems = macro_problems(
            attrs.get("body", current.body if current else ""),
            attrs.get("actions", current.actions if current else {}),
            attrs.get("translations", current.translations if current else {}),
        )
        if problems:
            raise serializers.ValidationError(problems)
        return attrs


class AppliedMacroSerializer(serializers.Serializer):
    body = serializers.CharField(help_text="the rendered text, to edit and send as a reply")
    visibility = serializers.CharField(help_text="public or internal, as the macro suggests")
    actions = serializers.DictField(
        help_text="{status, priority, add_tags}, each optional: applied only when confirmed "
        "through the status, priority and tags endpoints"
    )
