"""What a case puts in the demo shop before its run (setup steps: messages, order notes,
refunds in any state, currencies, role limits), and the conditions its run holds under (a tool
that does not answer). Apart from evals/shop.py, which runs and records the case, because each
setup step goes through the desk's own services and says, when it cannot, which step failed.
"""

import copy
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from datetime import timedelta
from decimal import Decimal
from itertools import pairwise

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.test import override_settings
from django.utils import timezone

from agent.tools.registry import replaced_handler
from config.errors import ApplicationError
from config.roles import support_role
from evals.case_files import TOOL_TIMEOUT_S_DEFAULT
from orders.models import Customer, Order, OrderLine
from policies.selectors import published_version
from policies.services import policy_version_draft_from, policy_version_publish
from refunds.adapters import SimulatedMode
from refunds.execution import refund_execute
from refunds.identity import derive_request_id, fingerprint, fingerprint_params
from refunds.models import RefundConfirmation, RefundEvent, RefundRequest
from refunds.services import refund_approve, refund_propose, refund_reject, refund_withdraw
from tickets.models import Ticket, TicketMessage
from tickets.services.messages import ticket_post_message

SETUP_REQUESTER = "supervisor"
SETUP_REVIEWER = "reviewer2"


class HarnessError(Exception):
    """The case could not be run as written (a setup step failed, the run never finished)."""


# --- Setup steps ----------------------------------------------------------------------------


def apply_setup(steps: list[dict], *, ticket: Ticket) -> None:
    """The shop's state before the run, step by step. Not one transaction: a refund set up as
    executed calls the (simulated) provider, which the services do only outside one."""
    for number, step in enumerate(steps, start=1):
        if step["kind"] in RUN_CONDITIONS:
            continue
        try:
            SETUP_STEPS[step["kind"]](step, ticket)
        except (HarnessError, ApplicationError) as exc:
            raise HarnessError(f"setup step {number} ({step['kind']}): {exc}") from None


def _customer_message(step: dict, ticket: Ticket) -> None:
    ticket_post_message(
        ticket=ticket,
        author_kind=TicketMessage.AuthorKind.CUSTOMER,
        body=step["body"],
        visibility=TicketMessage.Visibility.PUBLIC,
    )


def _order_note(step: dict, ticket: Ticket) -> None:
    if not Order.objects.filter(order_id=step["order_id"]).update(note=step["note"]):
        raise HarnessError(f"no order {step['order_id']}")


def _customer_name(step: dict, ticket: Ticket) -> None:
    if not Customer.objects.filter(email=step["customer_email"]).update(name=step["name"]):
        raise HarnessError(f"no customer with e-mail {step['customer_email']}")


def _refund(step: dict, ticket: Ticket) -> None:
    if step["status"] in HISTORY_STATUSES:
        _refund_history(step, ticket)
    else:
        _refund_through_services(step, ticket)


# Set up as rows written as history; every other status is reached through the services.
HISTORY_STATUSES = (RefundRequest.Status.SUCCEEDED, RefundRequest.Status.PENDING_APPROVAL)
# How the simulated provider answers an approved refund set up in these statuses.
PROVIDER_MODE_FOR = {
    # The provider makes the refund but its answer never arrives: whether money moved is not
    # known until reconciliation asks.
    RefundRequest.Status.OUTCOME_UNKNOWN: SimulatedMode.TIMEOUT,
    # The provider accepted the refund and has not settled it.
    RefundRequest.Status.PROVIDER_PENDING: SimulatedMode.PENDING,
}


@transaction.atomic
def _refund_history(step: dict, ticket: Ticket) -> None:
    """An earlier refund request on the case's ticket, written as history (like the demo's
    blender refund): it is the situation the case starts from, not something the policy is
    asked about again."""
    users = get_user_model().objects
    order = Order.objects.filter(order_id=step["order_id"]).first()
    if order is None:
        raise HarnessError(f"no order {step['order_id']}")
    requester = users.get(username=step.get("requested_by", SETUP_REQUESTER))
    succeeded = step["status"] == RefundRequest.Status.SUCCEEDED
    open_intents = RefundRequest.objects.filter(ticket=ticket, order=order).exclude(
        status__in=RefundRequest.SETTLED_STATUSES
    )
    if not succeeded and open_intents.exists():
        raise HarnessError(
            f"{ticket.reference} already has an open refund request on order {order.order_id}"
        )
    settled = RefundRequest.objects.filter(
        ticket=ticket, order=order, status__in=RefundRequest.SETTLED_STATUSES
    ).count()
    refund = RefundRequest.objects.create(
        request_id=derive_request_id(
            ticket_reference=ticket.reference, order_id=order.order_id, n=settled
        ),
        ticket=ticket,
        order=order,
        amount=Decimal(str(step["amount"])),
        currency=order.currency,
        reason=step["reason"],
        explanation=step.get("explanation", "An earlier refund on this order."),
        status=step["status"],
        requested_by=requester,
        provider_refund_id=f"re_eval_{order.order_id}_{settled}" if succeeded else "",
    )
    params = fingerprint_params(refund)
    now = timezone.now()
    RefundConfirmation.objects.create(
        refund_request=refund,
        version=1,
        fingerprint=fingerprint(params),
        params=params,
        status=RefundConfirmation.Status.APPROVED
        if succeeded
        else RefundConfirmation.Status.PENDING,
        expires_at=now + timedelta(minutes=settings.CONFIRMATION_TTL_MINUTES),
        proposed_by=requester,
        decided_by=users.get(username=SETUP_REVIEWER) if succeeded else None,
        decided_at=now if succeeded else None,
    )
    history = ["", "pending_approval"]
    if succeeded:
        history += ["approved", "executing", "succeeded"]
    for from_status, to_status in pairwise(history):
        RefundEvent.objects.create(
            refund_request=refund,
            from_status=from_status,
            to_status=to_status,
            detail={"source": "eval setup"},
        )


def _refund_through_services(step: dict, ticket: Ticket) -> None:
    """An earlier refund the desk's own services took to `step["status"]`: proposed by its
    requester (the policy checks it), then rejected or approved by SETUP_REVIEWER, or withdrawn
    by its requester; an approved one is executed against the simulated provider, answering so
    that the refund ends in that status. The ticket gets the notes the desk writes."""
    users = get_user_model().objects
    order = Order.objects.filter(order_id=step["order_id"]).first()
    if order is None:
        raise HarnessError(f"no order {step['order_id']}")
    requester = users.get(username=step.get("requested_by", SETUP_REQUESTER))
    reviewer = users.get(username=SETUP_REVIEWER)
    proposal = refund_propose(
        ticket=ticket,
        order=order,
        amount=Decimal(str(step["amount"])),
        reason=step["reason"],
        explanation=step.get("explanation", "An earlier refund on this order."),
        requested_by=requester,
        role=support_role(requester) or "",
    )
    refund, confirmation = proposal.refund, proposal.confirmation
    status = step["status"]
    if status == RefundRequest.Status.REJECTED:
        refund_reject(
            refund=refund,
            reviewer=reviewer,
            version=confirmation.version,
            note=step.get("note", ""),
        )
        return
    if status == RefundRequest.Status.WITHDRAWN:
        refund_withdraw(refund=refund, by=requester, note=step.get("note", ""))
        return
    refund_approve(
        refund=refund,
        reviewer=reviewer,
        version=confirmation.version,
        fingerprint=confirmation.fingerprint,
    )
    # The eval's broker is a throwaway folder: the execute task the approval enqueued never
    # runs, so the refund is executed here, once, against the simulated provider.
    with override_settings(
        REFUND_ADAPTER="simulated",
        SIMULATED_PROVIDER_MODE=PROVIDER_MODE_FOR[status],
        SIMULATED_PROVIDER_LATENCY_S=0.0,
    ):
        reached = refund_execute(refund_pk=refund.pk)
    if reached != status:
        raise HarnessError(f"the refund ended {reached}, not {status}")


@transaction.atomic
def _order_currency(step: dict, ticket: Ticket) -> None:
    """The order as if it had been paid in another currency: the amount paid and its one line's
    price in that currency."""
    order = Order.objects.select_for_update().filter(order_id=step["order_id"]).first()
    if order is None:
        raise HarnessError(f"no order {step['order_id']}")
    if order.refund_requests.exists():
        raise HarnessError(
            f"order {order.order_id} already has refunds in {order.currency}; pick another"
        )
    lines = list(order.lines.all())
    if len(lines) != 1:
        raise HarnessError(f"order {order.order_id} has {len(lines)} lines, not one")
    amount = Decimal(step["amount_paid"])
    Order.objects.filter(pk=order.pk).update(currency=step["currency"], amount_paid=amount)
    OrderLine.objects.filter(pk=lines[0].pk).update(unit_price=amount / lines[0].quantity)


def _role_limits(step: dict, ticket: Ticket) -> None:
    """A new version of the refund policy, published as admin publishes one, that sets the
    role limits of `step["currency"]`; R-5 states them."""
    published = published_version()
    currency, limits = step["currency"], step["limits"]
    rules = copy.deepcopy(published.rules)
    rules["role_limits"][currency] = limits
    stated = "; ".join(f"{role}s up to {limit} {currency}" for role, limit in limits.items())
    clauses = [
        {
            "ref": clause.ref,
            "title": clause.title,
            "text": clause.text + (f" In {currency}: {stated}." if clause.ref == "R-5" else ""),
        }
        for clause in published.clauses.order_by("ref")
    ]
    draft = policy_version_draft_from(version=published, rules=rules, clauses=clauses)
    policy_version_publish(version=draft)


SETUP_STEPS = {
    "customer_message": _customer_message,
    "order_note": _order_note,
    "customer_name": _customer_name,
    "refund": _refund,
    "order_currency": _order_currency,
    "role_limits": _role_limits,
}


# --- Conditions that hold while the run goes -------------------------------------------------

# A stuck handler is let go this long after it was called at the latest, even if the case
# somehow never ends (the harness gives up on a run long before).
STUCK_AT_MOST_S = 300.0


@contextmanager
def tool_not_answering(name: str, *, timeout_s: float) -> Iterator[None]:
    """While the block runs, the tool `name` does not answer: its handler waits until the block
    ends. The executor gives up on it after TOOL_TIMEOUT_S, set to `timeout_s` for the block,
    and answers the model TOOL_TIMEOUT exactly as for a provider or database that hangs. When
    the block ends the stuck handlers are let go without doing anything, so their call threads
    are free before the next case's database replaces this one."""
    released = threading.Event()

    def stuck(ctx, args: dict) -> dict:
        released.wait(STUCK_AT_MOST_S)
        return {"released_after_the_run": True}

    try:
        with (
            override_settings(TOOL_TIMEOUT_S=timeout_s),
            replaced_handler(name, handler=stuck),
        ):
            yield
    finally:
        released.set()


def _tool_timeout(step: dict) -> AbstractContextManager[None]:
    return tool_not_answering(step["tool"], timeout_s=step.get("timeout_s", TOOL_TIMEOUT_S_DEFAULT))


RUN_CONDITIONS = {"tool_timeout": _tool_timeout}


def run_conditions(steps: list[dict], stack: ExitStack) -> None:
    for step in steps:
        if step["kind"] in RUN_CONDITIONS:
            stack.enter_context(RUN_CONDITIONS[step["kind"]](step))
