from django.contrib import admin

from tickets.models import Ticket, TicketMessage


class TicketMessageInline(admin.StackedInline):
    model = TicketMessage
    extra = 0
    readonly_fields = ["created_at"]


@admin.register(Ticket)
class TicketAdmin(admin.ModelAdmin):
    list_display = ["reference", "subject", "customer", "order", "status", "assignee", "updated_at"]
    list_filter = ["status", "assignee"]
    search_fields = ["reference", "subject", "customer__name", "order__order_id"]
    list_select_related = ["customer", "order", "assignee"]
    raw_id_fields = ["order"]
    inlines = [TicketMessageInline]


@admin.register(TicketMessage)
class TicketMessageAdmin(admin.ModelAdmin):
    list_display = ["ticket", "author_kind", "author", "created_at"]
    list_filter = ["author_kind"]
    search_fields = ["ticket__reference", "body"]
    list_select_related = ["ticket", "author"]
