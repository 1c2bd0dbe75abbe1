"""Admin for MCP (DESIGN §12, §17): the sessions hosts opened, read-only like the runs, and the
tokens they open them with, made and revoked here."""

from datetime import timedelta

from django import forms
from django.contrib import admin, messages
from django.utils import timezone
from django.utils.html import format_html

from agent.admin.calls import ToolCallLogInline
from agent.mcp_tokens import (
    MAX_DAYS,
    McpTokenRefused,
    check_token_holder,
    mcp_token_revoke,
    with_new_key,
)
from agent.models import McpSession, McpToken
from config.admin_tools import ReadOnlyMixin
from refunds.admin import DeskAdminMedia, ticket_link


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
