from django.contrib import admin

from orders.models import Customer, Order, OrderLine
from orders.selectors import refund_in_flight


class OrderLineInline(admin.TabularInline):
    model = OrderLine
    extra = 0


@admin.register(Customer)
class CustomerAdmin(admin.ModelAdmin):
    list_display = ["name", "email"]
    search_fields = ["name", "email"]


# What the provider is asked to refund, and to whom: frozen while a refund on the order is
# approved but not settled, so nobody can re-point money that is already moving.
PAYMENT_FIELDS = ("payment_reference", "amount_paid", "currency", "customer")


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
        readonly = list(super().get_readonly_fields(request, obj))
        if obj is not None and refund_in_flight(obj):
            readonly += [name for name in PAYMENT_FIELDS if name not in readonly]
        return readonly
