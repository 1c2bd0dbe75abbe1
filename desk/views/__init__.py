"""The support desk's pages, a module per page: the ticket list (ticket_list), a ticket
(ticket_page, its history in ticket_history, and the forms it posts in ticket_forms), a new
ticket (new_ticket), a customer (customers), the notifications; what they share in shared.
Every change goes through tickets.services, which checks the role; a refusal is shown on the
page with what was typed kept. Merging, saved views, macros, business hours and a user's own
page live in their own desk sub-apps.

Here: the names desk.urls uses, so `from desk import views` keeps reading `views.ticket_list`."""

from desk.views.customers import customer_detail
from desk.views.new_ticket import ticket_new
from desk.views.notifications import notification_list, notification_read
from desk.views.ticket_forms import (
    ticket_assign,
    ticket_cc,
    ticket_deescalate,
    ticket_escalate,
    ticket_macro_actions,
    ticket_priority,
    ticket_refund_withdraw,
    ticket_retry_reply,
    ticket_status,
    ticket_tags,
    ticket_write,
)
from desk.views.ticket_list import ticket_list
from desk.views.ticket_page import ticket_detail

__all__ = [
    "customer_detail",
    "notification_list",
    "notification_read",
    "ticket_assign",
    "ticket_cc",
    "ticket_deescalate",
    "ticket_detail",
    "ticket_escalate",
    "ticket_list",
    "ticket_macro_actions",
    "ticket_new",
    "ticket_priority",
    "ticket_refund_withdraw",
    "ticket_retry_reply",
    "ticket_status",
    "ticket_tags",
    "ticket_write",
]
