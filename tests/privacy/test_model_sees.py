"""What a model provider receives (DESIGN §17), seen from the fake OpenAI server: every prompt
and tool result of a run, with no customer e-mail address, phone number or last name in it,
and the tool-call log holding what the model was sent.

Driven against the fake OpenAI server over real HTTP, with real commits (tools run on their
own thread and connection).
"""

import json

import pytest

from agent.models import AgentMessage, ToolCallLog
from agent.untrusted import untrusted_blocks
from orders.models import Order
from tests.agent.runs import drive, start_run
from tests.factories import TicketMessageFactory
from tests.fakes.openai_server import text_reply, tool_call, tool_reply
from tickets.models import Ticket

pytestmark = pytest.mark.django_db(transaction=True)

PHONE = "+86 138 0013 8000"
MOBILE = "13912345678"
EMAIL = "li.wei@example.com"
SECOND_EMAIL = "wei.li.home@example.net"


def everything_sent(fake_openai) -> str:
    return json.dumps(fake_openai.requests, ensure_ascii=False)


def test_a_model_provider_never_receives_the_customers_address_phone_or_last_name(
    demo, fake_openai
):
    # Given Li Wei wrote their address and numbers in the ticket and in the order's note
    ticket = Ticket.objects.get(reference="TCK-1001")
    Ticket.objects.filter(pk=ticket.pk).update(subject=f"Li Wei's mug, call {MOBILE}")
    TicketMessageFactory(
        ticket=ticket,
        author_kind="customer",
        body=f"I am Li Wei, mail me at {SECOND_EMAIL} or {EMAIL}, call {PHONE} or {MOBILE}. "
        "Regards, Wei",
    )
    Order.objects.filter(order_id="202610110087").update(
        note=f"Deliver to Mr Wei, phone {MOBILE}, {EMAIL}"
    )
    fake_openai.enqueue(
        tool_reply(tool_call("get_order", {"order_id": "202610110087"}, call_id="call_order")),
        text_reply("The mug cost 129.00 CNY."),
    )
    run = start_run(f"Li Wei ({EMAIL}, {PHONE}) asks about the mug.", reference="TCK-1001")

    # When the run asks the model twice, the second time with the order's tool result
    drive(run)

    # Then nothing the model was sent carries the address, the numbers or the last name
    sent = everything_sent(fake_openai)
    assert len(fake_openai.requests) == 2
    for secret in (EMAIL, SECOND_EMAIL, PHONE, MOBILE, "138 0013", "Wei"):
        assert secret not in sent
    # but it did get the masked forms, the first name, the order and its amount
    assert "l***@example.com" in sent
    assert "w***@example.net" in sent
    assert "+** *** **** **00" in sent
    assert "*********78" in sent
    assert "Li" in sent
    assert "202610110087" in sent
    assert "129.00" in sent
    # and the tool-call log holds exactly the result the model was sent
    (tool_message,) = fake_openai.tool_messages(1)
    row = ToolCallLog.objects.get(run=run, tool_call_id="call_order")
    assert row.result["note"] == {
        "untrusted_customer_text": "Deliver to Mr W., phone *********78, l***@example.com"
    }
    (body,) = untrusted_blocks(tool_message["content"])
    assert json.loads(body) == row.result
    # as does the run's transcript
    stored = AgentMessage.objects.get(run=run, role="tool").content
    assert EMAIL not in stored and MOBILE not in stored
    assert run.status == "completed"
