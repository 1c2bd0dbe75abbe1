import json

from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.utils.html import format_html

from config.admin_tools import ReadOnlyMixin
from tickets import calendar_admin  # noqa: F401  (registers the business calendar's admin)
from tickets.models import (
    Macro,
    SatisfactionSurvey,
    SavedView,
    SlaPolicy,
    StaffProfile,
    Tag,
    Ticket,
    TicketEvent,
    TicketMessage,
)


class TicketMessageInline(ReadOnlyMixin, admin.TabularInline):
    """What was said on the ticket and whether the customer got it. Messages are written and
    sent by the desk (a change here would not be emailed), so admin only shows them."""

    model = TicketMessage
    extra = 0
    fields = readonly_fields = (
        "created_at",
        "author_kind",
        "author",
        "visibility",
        "delivery",
        "delivery_attempts",
        "delivery_error",
        "body",
    )


class TicketEventInline(ReadOnlyMixin, admin.TabularInline):
    """The ticket's history: append-only, like every audit row."""

    model = TicketEvent
    extra = 0
    fields = readonly_fields = ("created_at", "type", "actor", "data_pretty")

    @admin.display(description="data")
    def data_pretty(self, event: TicketEvent) -> str:
        if not event.data:
            return "-"
        return format_html(
            "<pre>{}</pre>",
            json.dumps(event.data, indent=2, ensure_ascii=False, sort_keys=True),
        )


@admin.register(Ticket)
class TicketAdmin(admin.ModelAdmin):
    list_display = [
        "reference",
        "subject",
        "customer",
        "order",
        "status",
        "escalated",
        "assignee",
        "updated_at",
    ]
    list_filter = ["status", "escalated", "assignee"]
    search_fields = ["reference", "subject", "customer__name", "order__order_id"]
    list_select_related = ["customer", "order", "assignee"]
    raw_id_fields = ["order"]
    inlines = [TicketMessageInline, TicketEventInline]

    class Media:
        css = {"all": ["css/admin.css"]}  # wraps the events' JSON


@admin.register(TicketMessage)
class TicketMessageAdmin(admin.ModelAdmin):
    list_display = ["ticket", "author_kind", "author", "visibility", "delivery", "created_at"]
    list_filter = ["author_kind", "visibility", "delivery"]
    search_fields = ["ticket__reference", "body"]
    list_select_related = ["ticket", "author"]


@admin.register(SatisfactionSurvey)
class SatisfactionSurveyAdmin(ReadOnlyMixin, admin.ModelAdmin):
    """DESIGN §19: each solve's survey and the customer's answer. Only the customer answers
    (through the links), so admin only shows them."""

    list_display = ["ticket", "agent", "rating", "rated_at", "sent_at", "expires_at", "voided_at"]
    list_filter = ["rating", "agent"]
    search_fields = ["ticket__reference", "comment"]
    list_select_related = ["ticket", "agent"]
    exclude = ["key"]  # what the links name: not for anyone's eyes


@admin.register(SlaPolicy)
class SlaPolicyAdmin(admin.ModelAdmin):
    """DESIGN §15: each priority's first-response and resolution targets, in hours. A change
    applies to tickets opened, or re-prioritised, after it."""

    list_display = ["priority", "first_response_hours", "resolution_hours", "updated_at"]
    ordering = ["first_response_hours"]

    def has_add_permission(self, request) -> bool:
        # One row per priority, seeded by tickets/migrations/0008: edit them, add none.
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Tag)
class TagAdmin(admin.ModelAdmin):
    list_display = ["name", "created_at"]
    search_fields = ["name"]


@admin.register(SavedView)
class SavedViewAdmin(admin.ModelAdmin):
    """Named filters of the ticket list; no owner is a team view that came with the desk."""

    list_display = ["name", "query", "owner", "shared", "created_at"]
    list_filter = ["shared"]
    search_fields = ["name", "query"]


@admin.register(Macro)
class MacroAdmin(admin.ModelAdmin):
    """Canned replies. A body with an unknown placeholder is refused when saved."""

    list_display = ["name", "visibility", "owner", "updated_at"]
    list_filter = ["visibility", "owner"]
    search_fields = ["name", "body"]


class StaffProfileInline(admin.StackedInline):
    """The name and signature a user's replies carry (DESIGN §19), edited with the user."""

    model = StaffProfile
    can_delete = False
    verbose_name_plural = "Name and signature on replies"


class DeskUserAdmin(UserAdmin):
    inlines = [*UserAdmin.inlines, StaffProfileInline]


admin.site.unregister(get_user_model())
admin.site.register(get_user_model(), DeskUserAdmin)
