"""Every write to a ticket, a module per part of it: messages (recording one, and writing a note
or a reply, which the claim check reads first), delivery (sending a reply by email, its
retries, giving up, the stalled ones), status (the state machine, priority, assignment,
escalation), tags, cc, numbering (the ticket counter), and inbound (customer mail, the customer
an address stands for, opening a ticket). What every one of them does, the role check, the
updated stamp and the event row, is in shared. Permissions are checked here, so the API and the
HTML views refuse the same things.

Here: the names used from outside the package, so `from tickets.services import ...` and
`services.ticket_write(...)` keep working."""

from tickets.services.cc import CC_MAX, clean_cc, ticket_set_cc
from tickets.services.delivery import (
    SEND_REPLY_TASK,
    DeliveryAttempt,
    replies_stalled,
    reply_give_up,
    reply_retry,
    reply_schedule_retry,
    reply_send,
)
from tickets.services.inbound import (
    MERGE_CHAIN_LIMIT,
    ORDER_ID_IN_TEXT,
    TICKET_REFERENCE_IN_SUBJECT,
    Inbound,
    customer_for_email,
    ticket_open,
    ticket_receive_email,
)
from tickets.services.messages import (
    ClaimsCheck,
    ClaimsContradictState,
    claims_in_words,
    ticket_post_message,
    ticket_write,
)
from tickets.services.numbering import FIRST_REFERENCE_NUMBER
from tickets.services.shared import DETAIL_EVENTS
from tickets.services.status import (
    REOPENED_BY_CUSTOMER,
    TICKET_ALLOWED,
    support_member,
    ticket_assign,
    ticket_clear_escalation,
    ticket_escalate,
    ticket_set_priority,
    ticket_set_status,
)
from tickets.services.tags import (
    TAG_MAX_LENGTH,
    TAG_NAME,
    TAGS_PER_CHANGE,
    clean_tag_names,
    tag_for_name,
    ticket_change_tags,
)

__all__ = [
    "CC_MAX",
    "DETAIL_EVENTS",
    "FIRST_REFERENCE_NUMBER",
    "MERGE_CHAIN_LIMIT",
    "ORDER_ID_IN_TEXT",
    "REOPENED_BY_CUSTOMER",
    "SEND_REPLY_TASK",
    "TAGS_PER_CHANGE",
    "TAG_MAX_LENGTH",
    "TAG_NAME",
    "TICKET_ALLOWED",
    "TICKET_REFERENCE_IN_SUBJECT",
    "ClaimsCheck",
    "ClaimsContradictState",
    "DeliveryAttempt",
    "Inbound",
    "claims_in_words",
    "clean_cc",
    "clean_tag_names",
    "customer_for_email",
    "replies_stalled",
    "reply_give_up",
    "reply_retry",
    "reply_schedule_retry",
    "reply_send",
    "support_member",
    "tag_for_name",
    "ticket_assign",
    "ticket_change_tags",
    "ticket_clear_escalation",
    "ticket_escalate",
    "ticket_open",
    "ticket_post_message",
    "ticket_receive_email",
    "ticket_set_cc",
    "ticket_set_priority",
    "ticket_set_status",
    "ticket_write",
]
