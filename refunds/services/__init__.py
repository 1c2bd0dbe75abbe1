"""Every write to a refund proposal and its review (DESIGN §1 invariants 1, 5-7; §4; §8).

Lock order, everywhere: the Order row first, then the RefundRequest row, then its
confirmations (refunds/locks.py takes the first two). Decided confirmations and events are
never updated: every status change of a request or a confirmation is a compare-and-swap in
refunds/transitions.py, and a decision whose swap finds the row already moved raises, rolling
the whole decision back. Every write is atomic_retried (config/transactions.py): one that
PostgreSQL ends as a deadlock's victim runs again, and after a few tries answers 409.

One module per responsibility: `proposal` (an intent proposed, or a new version of it),
`decisions` (a reviewer approves or rejects the current version), `withdrawal` (the proposer
takes it back), `expiry` (the sweep of versions nobody decided in time), `order_edits` (an
order edited while refunds on it are open), and `shared` (the policy evaluation, refusals,
lock and words several of them use). Their public names are all importable from here.
"""

from refunds.services.decisions import proposers_of, refund_approve, refund_reject
from refunds.services.expiry import refund_expire_confirmations
from refunds.services.order_edits import (
    ORDER_PAYMENT_FIELDS,
    PARAMETER_WORDS,
    order_edit,
    order_edit_words,
)
from refunds.services.proposal import (
    Proposal,
    ProposalOutcome,
    RefundAlreadyDecided,
    refund_link_tool_call,
    refund_propose,
)
from refunds.services.shared import NOT_COUNTED_FOR_LIMIT
from refunds.services.withdrawal import refund_withdraw

__all__ = [
    "NOT_COUNTED_FOR_LIMIT",
    "ORDER_PAYMENT_FIELDS",
    "PARAMETER_WORDS",
    "Proposal",
    "ProposalOutcome",
    "RefundAlreadyDecided",
    "order_edit",
    "order_edit_words",
    "proposers_of",
    "refund_approve",
    "refund_expire_confirmations",
    "refund_link_tool_call",
    "refund_propose",
    "refund_reject",
    "refund_withdraw",
]
