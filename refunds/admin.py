"""Refunds in Django admin: read-only views of decided data; decisions only through the services.

The approve / reject actions never change a row themselves: they show the exact version and
fingerprint of each selected request, and only the reviewer's confirmation of that page calls
refund_approve / refund_reject with what was shown (DESIGN §8).
"""

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.template.response import TemplateResponse

from config.admin_tools import ReadOnlyMixin
from config.errors import ApplicationError
from config.roles import is_reviewer
from refunds import selectors, services
from refunds.forms import AdminDecisionForm
from refunds.models import RefundConfirmation, RefundEvent, RefundRequest

PAST_TENSE = {"approve": "approved", "reject": "rejected"}


class RefundConfirmationInline(ReadOnlyMixin, admin.TabularInline):
    model = RefundConfirmation
    extra = 0
    can_delete = False
    fields = readonly_fields = (
        "version",
        "status",
        "fingerprint",
        "proposed_by",
        "expires_at",
        "decided_by",
        "decided_at",
        "decision_note",
        "created_at",
    )


class RefundEventInline(ReadOnlyMixin, admin.TabularInline):
    model = RefundEvent
    extra = 0
    can_delete = False
    fields = readonly_fields = ("created_at", "from_status", "to_status", "actor", "detail")


@admin.register(RefundRequest)
class RefundRequestAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = [
        "request_id",
        "order",
        "customer",
        "ticket",
        "amount",
        "currency",
        "reason",
        "status",
        "requested_by",
        "created_at",
    ]
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
        "ticket",
        "order",
        "amount",
        "currency",
        "reason",
        "explanation",
        "requested_by",
        "run",
        "tool_call",
        "policy_version",
        "policy_evaluation",
        "provider_refund_id",
        "created_at",
        "updated_at",
    )
    inlines = [RefundConfirmationInline, RefundEventInline]
    actions = ["approve_refunds", "reject_refunds"]

    @admin.display(ordering="order__customer__name")
    def customer(self, refund: RefundRequest) -> str:
        return refund.order.customer.name

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
        "proposed_by",
        "expires_at",
        "decided_by",
        "decided_at",
    ]
    list_filter = ["status"]
    search_fields = ["refund_request__request_id", "fingerprint"]
    list_select_related = ["refund_request", "proposed_by", "decided_by"]


@admin.register(RefundEvent)
class RefundEventAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ["refund_request", "from_status", "to_status", "actor", "created_at"]
    list_filter = ["to_status"]
    search_fields = ["refund_request__request_id"]
    list_select_related = ["refund_request", "actor"]
