"""Objects the API tests point at: the demo data plus runs and refunds in known states."""

from dataclasses import dataclass
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from agent import services as run_services
from agent.models import AgentRun, RunEvent
from config.roles import GROUP_FOR_ROLE, Role
from ops.models import ApiToken
from orders.models import Order
from refunds.models import RefundConfirmation, RefundEvent, RefundRequest
from refunds.services import refund_propose
from tests.agent.runs import start_run
from tests.factories import api_token_key
from tickets.models import Ticket

PASSWORD = "demo-pass-123"


@dataclass
class Desk:
    run: AgentRun
    finished_run: AgentRun
    refund: RefundRequest

    @property
    def fingerprint(self) -> str:
        return self.refund.confirmations.get(version=1).fingerprint


def user(username: str):
    return get_user_model().objects.get(username=username)


def token_header(username: str) -> str:
    return f"Token {api_token_key(user(username))}"


def propose(*, ticket: str, order: str, requested_by: str, role: str) -> RefundRequest:
    return refund_propose(
        ticket=Ticket.objects.get(reference=ticket),
        order=Order.objects.get(order_id=order),
        amount=Decimal("129.00"),
        reason="damaged",
        explanation="The mug arrived in pieces.",
        requested_by=user(requested_by),
        role=role,
    ).refund


@pytest.fixture
def desk(demo) -> Desk:
    """A queued run started by `agent`, a cancelled run, and a pending refund (version 1) on
    TCK-1001 requested by `reviewer2` — a reviewer who is also an agent — so `reviewer` may
    decide it and `reviewer2` may not."""
    user("reviewer2").groups.add(Group.objects.get(name=GROUP_FOR_ROLE[Role.AGENT]))
    run = start_run(username="agent")
    finished = start_run("Anything else?", username="agent")
    run_services.run_request_cancel(run=finished, user=user("agent"))
    refund = propose(
        ticket="TCK-1001", order="202610110087", requested_by="reviewer2", role="agent"
    )
    return Desk(run=run, finished_run=AgentRun.objects.get(pk=finished.pk), refund=refund)


def desk_state() -> tuple:
    """Everything an API call could change, to compare before and after a refused call."""
    return (
        list(AgentRun.objects.order_by("pk").values_list("pk", "status", "cancel_requested")),
        RunEvent.objects.count(),
        list(RefundRequest.objects.order_by("pk").values_list("pk", "status", "updated_at")),
        list(RefundConfirmation.objects.order_by("pk").values_list("pk", "status", "decided_by")),
        RefundEvent.objects.count(),
        ApiToken.objects.count(),
    )
