"""The offline planner driven through the real step loop, executor and tools on demo data."""

import pytest

from agent.models import ToolCallLog
from refunds.models import RefundRequest
from tests.agent.runs import drive, start_run

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def offline(settings):
    settings.LLM_PROVIDER = "offline"


def logged_calls(run):
    return list(
        ToolCallLog.objects.filter(run=run)
        .order_by("created_at", "id")
        .values_list("tool_name", "ok")
    )


def test_it_answers_a_question_on_the_demo_ticket(demo, offline):
    run = start_run("What did the customer pay?")

    drive(run)

    assert run.status == "completed"
    assert logged_calls(run)[0] == ("get_order", True)
    assert "paid 129.00 CNY" in run.final_answer
    assert RefundRequest.objects.filter(ticket__reference="TCK-1001").count() == 0


def test_it_proposes_the_mug_refund_only_when_the_agent_asks(demo, offline):
    run = start_run("The mug arrived broken, please refund it")

    drive(run)

    refund = RefundRequest.objects.get(ticket__reference="TCK-1001")
    assert (refund.order.order_id, str(refund.amount), refund.reason, refund.status) == (
        "202610110087",
        "129.00",
        "damaged",
        "pending_approval",
    )
    assert [name for name, _ in logged_calls(run)][-1] == "create_refund"
    assert "it is waiting for a reviewer; nothing has been refunded yet" in run.final_answer


def test_it_does_not_act_on_the_injected_ticket(demo, offline):
    run = start_run("please help this customer", reference="TCK-1003")

    drive(run)

    assert run.status == "completed"
    assert "create_refund" not in [name for name, _ in logged_calls(run)]
    assert RefundRequest.objects.filter(order__customer__name="Sam Carter").count() == 0
    assert "202610280001" not in run.final_answer
    assert "did not act on it" in run.final_answer
