"""The desk's own REST API under /api/ (desk.urls maps it), a module per part of the desk it
serves: tickets and the changes staff make to them (tickets), messages, drafts and files
(messages), macros, customers, email from the mail gateway (inbound), the sign-in token
(tokens), and the role gates they share (permissions). Bulk changes, merges, the live desk,
people, business hours and saved views have their API in their own desk sub-apps.

Here: the names desk.urls and the other sub-apps use, so `from desk import api` keeps
reading `api.TicketListApi`."""

from desk.api.customers import CustomerDetailApi
from desk.api.inbound import InboundEmailApi
from desk.api.macros import MacroDetailApi, MacroListApi, TicketMacroApplyApi
from desk.api.messages import (
    TicketAttachmentApi,
    TicketDraftApi,
    TicketMessageApi,
    TicketMessageRetryApi,
)
from desk.api.permissions import WritesOnTickets
from desk.api.tickets import (
    TicketAssignApi,
    TicketCcApi,
    TicketDeescalateApi,
    TicketDetailApi,
    TicketEscalateApi,
    TicketListApi,
    TicketPriorityApi,
    TicketStatusApi,
    TicketTagsApi,
)
from desk.api.tokens import ObtainTokenView

__all__ = [
    "CustomerDetailApi",
    "InboundEmailApi",
    "MacroDetailApi",
    "MacroListApi",
    "ObtainTokenView",
    "TicketAssignApi",
    "TicketAttachmentApi",
    "TicketCcApi",
    "TicketDeescalateApi",
    "TicketDetailApi",
    "TicketDraftApi",
    "TicketEscalateApi",
    "TicketListApi",
    "TicketMacroApplyApi",
    "TicketMessageApi",
    "TicketMessageRetryApi",
    "TicketPriorityApi",
    "TicketStatusApi",
    "TicketTagsApi",
    "WritesOnTickets",
]
