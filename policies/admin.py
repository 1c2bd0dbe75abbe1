from django import forms
from django.contrib import admin, messages
from django.db.models import Count
from django.http import HttpResponseRedirect
from django.urls import reverse

from config.errors import ApplicationError
from policies.models import Clause, Policy, PolicyVersion
from policies.rules import validate_rules
from policies.seed import REFUNDS_SLUG
from policies.services import policy_version_draft_from, policy_version_publish

Status = PolicyVersion.Status

PUBLISHED_NOTE = (
    "This version is published and never changes. Saving your edits creates a "
    "new draft version with them; publish that draft to put them into effect."
)


class PolicyVersionForm(forms.ModelForm):
    class Meta:
        model = PolicyVersion
        fields = ["policy", "version", "effective_from", "rules"]

    def clean(self):
        cleaned = super().clean() or {}
        policy = cleaned.get("policy") or getattr(self.instance, "policy", None)
        rules = cleaned.get("rules")
        # Catch rules the refund code cannot read here, not only when publishing.
        if policy is not None and policy.slug == REFUNDS_SLUG and rules is not None:
            problems = validate_rules(rules)
            if problems:
                self.add_error("rules", problems)
        return cleaned


class ClauseInline(admin.TabularInline):
    model = Clause
    extra = 0
    fields = ["ref", "title", "text"]

    def has_add_permission(self, request, obj=None):
        return _editable(obj) and super().has_add_permission(request, obj)

    def has_change_permission(self, request, obj=None):
        return _editable(obj) and super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None):
        return _editable(obj) and super().has_delete_permission(request, obj)


def _editable(version: PolicyVersion | None) -> bool:
    """Drafts are edited in place, published versions through a new draft, retired never."""
    return version is None or version.status != Status.RETIRED


@admin.register(Policy)
class PolicyAdmin(admin.ModelAdmin):
    list_display = ["slug", "title", "published_version"]
    search_fields = ["slug", "title"]

    @admin.display(description="published version")
    def published_version(self, policy: Policy) -> str:
        version = policy.versions.filter(status=Status.PUBLISHED).first()
        return f"v{version.version} from {version.effective_from}" if version else "none"


@admin.register(PolicyVersion)
class PolicyVersionAdmin(admin.ModelAdmin):
    form = PolicyVersionForm
    inlines = [ClauseInline]
    list_display = ["policy", "version", "status", "effective_from", "clause_count", "created_at"]
    list_filter = ["status", "policy"]
    list_select_related = ["policy"]
    search_fields = [
        "policy__slug",
        "policy__title",
        "clauses__ref",
        "clauses__title",
        "clauses__text",
    ]
    ordering = ["policy", "-version"]
    actions = ["publish_selected_draft", "draft_from_selected"]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(clause_total=Count("clauses"))

    @admin.display(description="clauses", ordering="clause_total")
    def clause_count(self, version: PolicyVersion) -> int:
        return version.clause_total  # type: ignore[attr-defined]  # annotated in get_queryset

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return ["status", "created_at"]
        return ["policy", "version", "status", "created_at"]

    def get_fieldsets(self, request, obj=None):
        fields = ["policy", "version", "status", "effective_from", "rules", "created_at"]
        if obj is not None and obj.status == Status.PUBLISHED:
            return [(None, {"fields": fields, "description": PUBLISHED_NOTE})]
        return [(None, {"fields": fields})]

    def has_change_permission(self, request, obj=None):
        return _editable(obj) and super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None):
        # Refund requests point at the version they were judged by: only drafts may go.
        if obj is not None and obj.status != Status.DRAFT:
            return False
        return super().has_delete_permission(request, obj)

    def _published_in_db(self, obj: PolicyVersion) -> bool:
        return PolicyVersion.objects.filter(pk=obj.pk, status=Status.PUBLISHED).exists()

    def save_model(self, request, obj, form, change):
        # A published version is left untouched: save_related turns the edits into a draft.
        if change and self._published_in_db(obj):
            request._policy_published_edit = True
            return
        super().save_model(request, obj, form, change)

    def save_related(self, request, form, formsets, change):
        if not getattr(request, "_policy_published_edit", False):
            super().save_related(request, form, formsets, change)
            return
        if not form.has_changed() and not any(fs.has_changed() for fs in formsets):
            return
        published = PolicyVersion.objects.get(pk=form.instance.pk)
        request._policy_draft = policy_version_draft_from(
            version=published,
            rules=form.cleaned_data["rules"],
            effective_from=form.cleaned_data["effective_from"],
            clauses=self._clauses_from(formsets),
        )

    def _clauses_from(self, formsets) -> list[dict]:
        clauses = []
        for formset in formsets:
            for clause_form in formset.forms:
                data = clause_form.cleaned_data
                if not data or data.get("DELETE"):
                    continue
                clauses.append({"ref": data["ref"], "title": data["title"], "text": data["text"]})
        return clauses

    def construct_change_message(self, request, form, formsets, add=False):
        # The formsets were not saved (their edits went into a draft): nothing to describe.
        if getattr(request, "_policy_published_edit", False):
            return []
        return super().construct_change_message(request, form, formsets, add)

    def log_change(self, request, obj, message):
        draft = getattr(request, "_policy_draft", None)
        if draft is not None:
            return self.log_addition(request, draft, [{"added": {}}])
        if getattr(request, "_policy_published_edit", False):
            return None
        return super().log_change(request, obj, message)

    def response_change(self, request, obj):
        if not getattr(request, "_policy_published_edit", False):
            return super().response_change(request, obj)
        draft = getattr(request, "_policy_draft", None)
        if draft is None:
            self.message_user(request, f"Nothing was changed; {obj} is unchanged.", messages.INFO)
            return HttpResponseRedirect(request.path)
        self.message_user(
            request,
            f"{obj.policy.slug} v{obj.version} is published and was left unchanged. Your "
            f"edits were saved as a new draft, v{draft.version}; publish it to put them into "
            "effect.",
            messages.WARNING,
        )
        return HttpResponseRedirect(reverse("admin:policies_policyversion_change", args=[draft.pk]))

    @admin.action(description="Publish selected draft", permissions=["change"])
    def publish_selected_draft(self, request, queryset):
        if queryset.count() != 1:
            self.message_user(request, "Select exactly one draft to publish.", messages.ERROR)
            return
        version = queryset.get()
        try:
            published = policy_version_publish(version=version)
        except ApplicationError as error:
            self.message_user(request, error.message, messages.ERROR)
            return
        self.message_user(
            request,
            f"{published.policy.slug} v{published.version} is now "
            "published; the version it replaces is retired.",
            messages.SUCCESS,
        )

    @admin.action(
        description="Create a new draft from the selected version", permissions=["change"]
    )
    def draft_from_selected(self, request, queryset):
        if queryset.count() != 1:
            self.message_user(request, "Select exactly one version to draft from.", messages.ERROR)
            return
        draft = policy_version_draft_from(version=queryset.get())
        self.message_user(
            request, f"Created draft {draft.policy.slug} v{draft.version}.", messages.SUCCESS
        )
