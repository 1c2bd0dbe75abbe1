"""The orders' admin, kept in the desk: an order's edits go through refunds' services (they
lock and rebind the refunds on the order), which orders, below refunds, may not import."""

from django.contrib import admin, messages
from django.http import HttpResponseRedirect

from config.errors import ApplicationError
from orders.models import Customer, Order, OrderLine
from orders.selectors import refund_in_flight
from refunds import services


class OrderLineInline(admin.TabularInline):
    model = OrderLine
    extra = 0


@admin.register(Customer)
class CustomerAdmin(admin.ModelAdmin):
    list_display = ["name", "email"]
    search_fields = ["name", "email"]


@admin.register(Order)
class OrderAdmin(admin.ModelAdmin):
    list_display = [
        "order_id",
        "customer",
        "status",
        "amount_paid",
        "currency",
        "placed_at",
        "delivered_at",
    ]
    list_filter = ["status", "currency"]
    search_fields = ["order_id", "customer__name", "customer__email", "payment_reference"]
    list_select_related = ["customer"]
    date_hierarchy = "placed_at"
    inlines = [OrderLineInline]

    def get_readonly_fields(self, request, obj=None):
        # What the page shows; a page loaded before an approval can still post these fields,
        # and services.order_edit refuses them under the order's lock.
        readonly = list(super().get_readonly_fields(request, obj))
        if obj is not None and refund_in_flight(obj):
            readonly += [name for name in services.ORDER_PAYMENT_FIELDS if name not in readonly]
        return readonly

    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
        try:
            return super().changeform_view(request, object_id, form_url, extra_context)
        except ApplicationError as refusal:
            # Raised inside admin's transaction: the order, its lines and the log entry are
            # all rolled back. The page, loaded again, shows the order as it is.
            self.message_user(request, refusal.message, messages.ERROR)
            return HttpResponseRedirect(request.path)

    def save_model(self, request, obj, form, change):
        if not change:
            super().save_model(request, obj, form, change)
            return
        for confirmation in services.order_edit(order=obj, edited_by=request.user):
            self.message_user(
                request,
                f"Refund {confirmation.refund_request.request_id} now waits for review as "
                f"version {confirmation.version}, bound to the edited order.",
                messages.WARNING,
            )
