"""A macro as a form: its actions as fields, a text box per language the desk tells apart."""

from django import forms

from agent.draft_templates import TEMPLATES
from tickets.models import Macro, Ticket, macro_problems

LANGUAGES = sorted(TEMPLATES)


def _translation_field(language: str) -> str:
    return f"text_{language}"


class MacroForm(forms.ModelForm):
    status = forms.ChoiceField(
        required=False, choices=[("", "— leave as it is —"), *Ticket.Status.choices]
    )
    priority = forms.ChoiceField(
        required=False, choices=[("", "— leave as it is —"), *Ticket.Priority.choices]
    )
    add_tags = forms.CharField(
        required=False, max_length=500, help_text="Tag names, separated by commas."
    )

    class Meta:
        model = Macro
        fields = ["name", "visibility", "body"]
        widgets = {"body": forms.Textarea(attrs={"rows": 6})}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        actions = self.instance.actions or {}
        self.initial.setdefault("status", actions.get("status", ""))
        self.initial.setdefault("priority", actions.get("priority", ""))
        self.initial.setdefault("add_tags", ", ".join(actions.get("add_tags", [])))
        for language in LANGUAGES:
            self.fields[_translation_field(language)] = forms.CharField(
                required=False,
                label=TEMPLATES[language]["name"],
                widget=forms.Textarea(attrs={"rows": 4}),
            )
            self.initial.setdefault(
                _translation_field(language), self.instance.translations.get(language, "")
            )

    def translation_fields(self) -> list:
        return [self[_translation_field(language)] for language in LANGUAGES]

    def clean(self):
        data = super().clean() or {}
        actions = {key: data[key] for key in ("status", "priority") if data.get(key)}
        tags = [tag.strip() for tag in (data.get("add_tags") or "").split(",") if tag.strip()]
        if tags:
            actions["add_tags"] = tags
        translations = {
            language: data[_translation_field(language)].strip()
            for language in LANGUAGES
            if (data.get(_translation_field(language)) or "").strip()
        }
        problems = macro_problems(data.get("body", ""), actions, translations)
        for field, messages in problems.items():
            self.add_error("body" if field == "body" else None, messages)
        if not problems:  # else the model's own check would report them again
            self.instance.actions, self.instance.translations = actions, translations
        return data
