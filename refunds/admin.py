"""Refunds in Django admin: read-only views of decided data; decisions only through the services.

The approve / reject actions never change a row themselves: they show the exact version and
fingerprint of each selected request, and only the reviewer's confirmation of that page calls
refund_approve / refund_reject with what was shown (DESIGN §8).
"""

import json

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html

from config import times
from config.admin_tools import ReadOnlyMixin
from config.errors import ApplicationError
from config.roles import is_reviewer
from refunds import selectors, services
from refunds.forms import AdminDecisionForm
from refunds.models import RefundConfirmation, RefundEvent, RefundRequest

PAST_TENSE = {"approve": "approved", "reject": "rejected"}
STATUS_LABELS = dict(RefundRequest.Status.choices)

# --- Display helpers, shared with agent/admin/ ---------------------------------------------------
# Fingerprints, digests and ids are long unbroken strings: shown whole they push the admin's
# tables wider than the screen. Lists and inlines show their first characters (enough to tell
# two apart), with the whole value in the tooltip and a copy button (static/js/desk.js).
SHORT_PREFIX = 12


class DeskAdminMedia:
    css = {"all": ["css/admin.css"]}
    js = ["js/desk.js"]


def shortened(value) -> str:
    value = str(value or "")
    if not value:
        return "-"
    if len(value) <= SHORT_PREFIX + 1:
        return format_html('<span class="desk-id">{}</span>', value)
    return format_html(
        '<span class="desk-id" title="{}">{}…</span> '
        '<button type="button" class="desk-copy" data-copy="{}" '
        'aria-label="Copy the full value">Copy</button>',
        value,
        value[:SHORT_PREFIX],
        value,
    )


# A long id or code in an admin list shows this many characters (all of it on hover and on its
# page), so the list fits a laptop with the admin's navigation and filters open.
LIST_ID_CHARS = 12


def truncated(value, length: int) -> str:
    value = str(value or "")
    if len(value) <= length + 1:
        return format_html('<span class="desk-nowrap">{}</span>', value or "-")
    return format_html('<span class="desk-nowrap" title="{}">{}…</span>', value, value[:length])


def pretty_json(value) -> str:
    """A JSON value as formatted JSON (admin.css wraps its long lines), never a Python repr."""
    if value is None:
        return "-"
    return format_html(
        "<pre>{}</pre>", json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)
    )


def ticket_link(ticket) -> str:
    """A ticket by its reference, linking to its page on the desk."""
    if ticket is None:
        return "-"
    return format_html(
        '<a class="desk-nowrap" href="{}">{}</a>',
        reverse("tickets:detail", args=[ticket.reference]),
        ticket.reference,
    )


def run_link(run_id) -> str:
    """A run by the first group of its UUID (what search by run matches), linking to it."""
    if run_id is None:
        return "-"
    return format_html(
        '<a href="{}" title="{}">{}…</a>',
        reverse("admin:agent_agentrun_change", args=[run_id]),
        run_id,
        str(run_id)[:8],
    )


def status_change(from_status: str, to_status: str) -> str:
    """A refund event in words: "Pending approval → Approved"."""
    before = STATUS_LABELS.get(from_status, from_status) if from_status else "New request"
    return f"{before} → {STATUS_LABELS.get(to_status, to_status)}"


class RefundConfirmationInline(ReadOnlyMixin, admin.TabularInline):
    model = RefundConfirmation
    extra = 0
    can_delete = False
    fields = readonly_fields = (
        "version",
        "status",
        "fingerprint_short",
        "proposed_by",
        "expires_at",
        "decided_by",
        "decided_at",
        "decision_note",
        "created_at",
    )

    @admin.display(description="fingerprint")
    def fingerprint_short(self, confirmation: RefundConfirmation) -> str:
        return shortened(confirmation.fingerprint)


class RefundEventInline(ReadOnlyMixin, admin.TabularInline):
    model = RefundEvent
    extra = 0
    can_delete = False
    fields = readonly_fields = ("created_at", "transition", "actor", "detail_pretty")

    @admin.display(description="change")
    def transition(self, event: RefundEvent) -> str:
        return status_change(event.from_status, event.to_status)

    @admin.display(description="detail")
    def detail_pretty(self, event: RefundEvent) -> str:
        return pretty_json(event.detail)


@admin.register(RefundRequest)
class RefundRequestAdmin(ReadOnlyMixin, admin.ModelAdmin):
    # What a reviewer scans for, in a list that fits 1280 px with the admin's side navigation
    # and filters open; the order, reason and the rest are one click away (and in the search
    # and filters). Newest first: the requests that need a decision are the recent ones.
    list_display = [
        "request",
        "status",
        "money",
        "ticket_reference",
        "customer",
        "created",
    ]
    list_display_links = ["request"]
    ordering = ["-created_at", "-id"]
    list_filter = ["status", "reason", "currency"]
    search_fields = [
        "request_id",
        "order__order_id",
        "order__customer__name",
        "order__customer__email",
        "ticket__reference",
        "provider_refund_id",
    ]
    list_select_related = ["order__customer", "ticket", "requested_by"]
    date_hierarchy = "created_at"
    fields = readonly_fields = (
        "request_id",
        "status",
        "ticket_reference",
        "order",
        "amount",
        "currency",
        "reason",
        "explanation",
        "requested_by",
        "run_reference",
        "tool_call",
        "policy_version",
        "policy_evaluation_pretty",
        "provider_refund_id",
        "created_at",
        "updated_at",
    )
    inlines = [RefundConfirmationInline, RefundEventInline]
    actions = ["approve_refunds", "reject_refunds"]
    Media = DeskAdminMedia

    @admin.display(description="amount", ordering="amount")
    def money(self, refund: RefundRequest) -> str:
        return format_html('<span class="desk-nowrap">{} {}</span>', refund.amount, refund.currency)

    @admin.display(description="order", ordering="order__order_id")
    def order_reference(self, refund: RefundRequest) -> str:
        return refund.order.order_id

    @admin.display(description="request", ordering="request_id")
    def request(self, refund: RefundRequest) -> str:
        return truncated(refund.request_id, LIST_ID_CHARS)

    @admin.display(description="created", ordering="created_at")
    def created(self, refund: RefundRequest) -> str:
        return format_html('<span class="desk-nowrap">{}</span>', times.when(refund.created_at))

    @admin.display(ordering="order__customer__name")
    def customer(self, refund: RefundRequest) -> str:
        return refund.order.customer.name

    @admin.display(description="ticket", ordering="ticket__reference")
    def ticket_reference(self, refund: RefundRequest) -> str:
        return ticket_link(refund.ticket)

    @admin.display(description="run")
    def run_reference(self, refund: RefundRequest) -> str:
        return run_link(refund.run_id)

    @admin.display(description="policy evaluation")
    def policy_evaluation_pretty(self, refund: RefundRequest) -> str:
        return pretty_json(refund.policy_evaluation)

    def has_review_permission(self, request) -> bool:
        return is_reviewer(request.user)

    @admin.action(description="Approve selected refunds…", permissions=["review"])
    def approve_refunds(self, request, queryset):
        return self._decide(request, queryset, decision="approve")

    @admin.action(description="Reject selected refunds…", permissions=["review"])
    def reject_refunds(self, request, queryset):
        return self._decide(request, queryset, decision="reject")

    def _decide(self, request, queryset, *, decision: str):
        refunds = list(
            queryset.select_related("order__customer", "ticket", "requested_by").prefetch_related(
                "confirmations"
            )
        )
        if request.POST.get("confirm") != "yes":
            return self._confirmation_page(request, refunds, decision)
        done = PAST_TENSE[decision]
        form = AdminDecisionForm(
            request.POST, refunds=refunds, with_fingerprint=decision == "approve"
        )
        if not form.is_valid():
            # A field can fail two validators with one message; say it once.
            for error in dict.fromkeys(e for errors in form.errors.values() for e in errors):
                self.message_user(request, f"Nothing was {done}: {error}", messages.ERROR)
            return None
        note = form.cleaned_data["note"]
        for refund in refunds:
            version = form.version_of(refund)
            try:
                if version is None:
                    raise ApplicationError("The version to decide was not confirmed.")
                if decision == "approve":
                    services.refund_approve(
                        refund=refund,
                        reviewer=request.user,
                        version=version,
                        fingerprint=form.fingerprint_of(refund),
                        note=note,
                    )
                else:
                    services.refund_reject(
                        refund=refund, reviewer=request.user, version=version, note=note
                    )
            except ApplicationError as refusal:
                self.message_user(
                    request,
                    f"Refund {refund.request_id} not {done}: {refusal.message}",
                    messages.ERROR,
                )
            else:
                self.message_user(
                    request, f"Refund {refund.request_id} v{version} {done}.", messages.SUCCESS
                )
        return None

    def _confirmation_page(self, request, refunds: list[RefundRequest], decision: str):
        rows = [(refund, selectors.current_confirmation(refund)) for refund in refunds]
        return TemplateResponse(
            request,
            "refunds/admin_confirm.html",
            {
                **self.admin_site.each_context(request),
                "title": f"{decision.capitalize()} refunds",
                "opts": self.model._meta,
                "decision": decision,
                "action": f"{decision}_refunds",
                "rows": rows,
                "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
            },
        )


@admin.register(RefundConfirmation)
class RefundConfirmationAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = [
        "refund_request",
        "version",
        "status",
        "fingerprint_short",
        "proposed_by",
        "expires_at",
        "decided_by",
        "decided_at",
    ]
    list_filter = ["status"]
    search_fields = ["refund_request__request_id", "fingerprint"]
    list_select_related = ["refund_request", "proposed_by", "decided_by"]
    fields = readonly_fields = (
        "refund_request",
        "version",
        "status",
        "fingerprint",
        "params_pretty",
        "proposed_by",
        "requester_note_pretty",
        "expires_at",
        "decided_by",
        "decided_at",
        "decision_note",
        "created_at",
    )
    Media = DeskAdminMedia

    @admin.display(description="fingerprint")
    def fingerprint_short(self, confirmation: RefundConfirmation) -> str:
        return shortened(confirmation.fingerprint)

    @admin.display(description="parameters")
    def params_pretty(self, confirmation: RefundConfirmation) -> str:
        return pretty_json(confirmation.params)

    @admin.display(description="the requester's words")
    def requester_note_pretty(self, confirmation: RefundConfirmation) -> str:
        return pretty_json(confirmation.requester_note or None)


class ToStatusFilter(admin.SimpleListFilter):
    """The status an event moved a request to, by its label (the column has no choices)."""

    title = "to status"
    parameter_name = "to_status"

    def lookups(self, request, model_admin):
        return RefundRequest.Status.choices

    def queryset(self, request, queryset):
        value = self.value()
        return queryset.filter(to_status=value) if value else queryset


@admin.register(RefundEvent)
class RefundEventAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ["refund_request", "transition", "actor", "created_at"]
    list_filter = [ToStatusFilter]
    search_fields = ["refund_request__request_id"]
    list_select_related = ["refund_request", "actor"]
    fields = readonly_fields = (
        "refund_request",
        "transition",
        "actor",
        "detail_pretty",
        "created_at",
    )
    Media = DeskAdminMedia

    @admin.display(description="change")
    def transition(self, event: RefundEvent) -> str:
        return status_change(event.from_status, event.to_status)

    @admin.display(description="detail")
    def detail_pretty(self, event: RefundEvent) -> str:
        return pretty_json(event.detail)
