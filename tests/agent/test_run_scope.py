"""A run's customer is bound when the run starts (DESIGN §1, invariant 2): moving its ticket to
another customer mid-run does not move the run's scope.

Driven against the fake OpenAI server over real HTTP, with real commits.
"""

import pytest

from agent.context import RunContext
from agent.models import AgentRun, ToolCallLog
from agent.runtime import run_step
from agent.untrusted import labelled_untrusted_blocks, strip_untrusted
from orders.models import Customer, Order
from tests.agent.runs import drive, start_run
from tests.fakes.openai_server import text_reply, tool_call, tool_reply
from tickets.models import Ticket

pytestmark = pytest.mark.django_db(transaction=True)

LI_MUG, LI_HEADPHONES = "202610110087", "202610150012"
SAM_LAPTOP = "202610280001"


def test_it_keeps_the_customer_the_run_started_with_when_the_ticket_changes_customer(
    demo, fake_openai
):
    # Given a run on Li Wei's ticket that took its first step
    li, sam = Customer.objects.get(name="Li Wei"), Customer.objects.get(name="Sam Carter")
    fake_openai.enqueue(
        tool_reply(tool_call("get_order", {"order_id": LI_MUG}, call_id="call_before"))
    )
    run = start_run("What did the customer order?", reference="TCK-1001")
    first = run_step.advance(run_id=run.pk, expected_version=0)
    assert first.kind == run_step.StepKind.CONTINUE

    # When the ticket is moved to Sam Carter before the next step
    Ticket.objects.filter(reference="TCK-1001").update(customer=sam)
    fake_openai.enqueue(
        tool_reply(
            tool_call("get_order", {"order_id": LI_HEADPHONES}, call_id="call_first"),
            tool_call("get_order", {"order_id": SAM_LAPTOP}, call_id="call_new"),
        ),
        text_reply("Done."),
    )
    drive(run)

    # Then the next step still reads Li Wei's orders, and Sam Carter's order is not found
    logs = {log.tool_call_id: log for log in ToolCallLog.objects.filter(run=run)}
    assert (logs["call_first"].ok, logs["call_first"].result["order_id"]) == (True, LI_HEADPHONES)
    assert (logs["call_new"].ok, logs["call_new"].error_code) == (False, "NOT_FOUND")
    assert "6999.00" not in str(logs["call_new"].result)
    # and every prompt named the customer the run started with
    for request in fake_openai.requests:
        system = request["messages"][1]["content"]
        assert f"Bound scope: ticket TCK-1001 of customer id {li.pk}.\n" in system
        assert ("customer_name", "Li") in labelled_untrusted_blocks(system)
        assert "Sam Carter" not in system
    assert AgentRun.objects.get(pk=run.pk).customer_id == li.pk
    assert run.status == "completed"


def test_it_names_no_ticket_order_that_is_outside_the_bound_customer(demo, fake_openai):
    # Given a run on Li Wei's ticket
    fake_openai.enqueue(tool_reply(tool_call("get_order", {"order_id": LI_MUG})))
    run = start_run("What did the customer order?", reference="TCK-1001")
    run_step.advance(run_id=run.pk, expected_version=0)

    # When the ticket is moved to Sam Carter and his laptop order before the next step
    sam = Customer.objects.get(name="Sam Carter")
    Ticket.objects.filter(reference="TCK-1001").update(
        customer=sam, order=Order.objects.get(order_id=SAM_LAPTOP)
    )
    fake_openai.enqueue(text_reply("Done."))
    drive(run)

    # Then the prompt binds no order rather than one the run's tools cannot see
    desk = strip_untrusted(fake_openai.requests[1]["messages"][1]["content"])
    assert "Ticket order: none\n" in desk
    assert SAM_LAPTOP not in desk


def test_it_binds_the_tickets_customer_when_the_run_starts(demo):
    run = start_run(reference="TCK-1003")

    assert run.customer == Customer.objects.get(name="Sam Carter")


def test_a_run_from_before_the_customer_was_bound_uses_the_tickets_customer(demo):
    run = start_run(reference="TCK-1001")
    AgentRun.objects.filter(pk=run.pk).update(customer=None)
    run.refresh_from_db()

    ctx = RunContext.for_run(run)

    assert ctx.customer == Customer.objects.get(name="Li Wei")
