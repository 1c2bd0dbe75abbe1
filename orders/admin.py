from django.contrib import admin

from orders.models import Customer, Order, OrderLine


class OrderLineInline(admin.TabularInline):
    model = OrderLine
    extra = 0


@admin.register(Customer)
class CustomerAdmin(admin.ModelAdmin):
    list_display = ["name", "email"]
    search_fields = ["name", "email"]


@admin.register(Order)
class OrderAdmin(admin.ModelAdmin):
    list_display = ["order_id", "customer", "status", "amount_paid", "currency", "placed_at",
                    "delivered_at"]
    list_filter = ["status", "currency"]
    search_fields = ["order_id", "customer__name", "customer__email", "payment_reference"]
    list_select_related = ["customer"]
    date_hierarchy = "placed_at"
    inlines = [OrderLineInline]
