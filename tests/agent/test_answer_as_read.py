"""The assistant's answer as the support agent reads it (agent/runtime/run_answer.py): what
the run did, worded for people in the agent's language and said once, and an answer made
stale by a later refund decision says so, on the panel and in the conversation."""

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from agent.models import AgentRun
from agent.runtime.run_answer import answers_since
from refunds.models import RefundEvent, RefundRequest
from refunds.services import refund_approve, refund_reject
from tests.agent.runs import drive, start_run
from tests.fakes.openai_server import text_reply, tool_call, tool_reply
from tickets.models import Ticket, TicketMessage
from tickets.services import ticket_post_message

pytestmark = pytest.mark.django_db(transaction=True)

MUG = "202610110087"
TOOL_NAMES = ("get_order", "list_customer_orders", "search_policies", "create_refund")


def proposing_the_mug(fake_openai, answer: str) -> None:
    fake_openai.enqueue(
        tool_reply(tool_call("get_order", {"order_id": MUG})),
        tool_reply(
            tool_call(
                "create_refund",
                {
                    "order_id": MUG,
                    "amount": "129.00",
                    "reason": "damaged",
                    "explanation": "The mug arrived broken.",
                },
            )
        ),
        text_reply(answer),
    )


def run_as_read(run: AgentRun, username: str = "agent") -> dict:
    api = APIClient()
    api.force_authenticate(get_user_model().objects.get(username=username))
    return api.get(f"/api/runs/{run.pk}/").json()


def approve(refund: RefundRequest, username: str = "reviewer") -> None:
    pending = refund.confirmations.get(status="pending")
    refund_approve(
        refund=refund,
        reviewer=get_user_model().objects.get(username=username),
        version=pending.version,
        fingerprint=pending.fingerprint,
    )


def test_an_answer_made_stale_by_a_later_approval_says_so(demo, fake_openai):
    # Given an answer written while the proposal waited for a reviewer
    proposing_the_mug(fake_openai, "I proposed 129.00 CNY for the mug; it waits for a reviewer.")
    run = start_run("The mug arrived broken, refund it in full.")
    drive(run)
    refund = RefundRequest.objects.get(order__order_id=MUG)
    assert run_as_read(run)["since_answer"] == ""

    # When the reviewer approves it afterwards
    approve(refund)

    # Then the answer, read now, says what happened since, by whom
    since = run_as_read(run)["since_answer"]
    assert since.startswith("Since this answer: the refund ")
    assert f"{refund.request_id} was approved by Olivia Brown at " in since
    # and the conversation's copy of the answer says it too
    client = Client()
    client.force_login(get_user_model().objects.get(username="agent"))
    page = client.get("/tickets/TCK-1001/").content.decode()
    assert "Since this answer: the refund" in page
    assert "was approved by Olivia Brown" in page


def test_a_rejection_after_the_answer_is_told_in_the_agents_language(demo, fake_openai):
    proposing_the_mug(fake_openai, "已为杯子提出退款申请，等待审核。")
    run = start_run("客户说杯子碎了，请全额退款。")
    drive(run)
    refund = RefundRequest.objects.get(order__order_id=MUG)

    refund_reject(
        refund=refund,
        reviewer=get_user_model().objects.get(username="reviewer"),
        version=refund.confirmations.get(status="pending").version,
        note="wait",
    )

    since = run_as_read(run)["since_answer"]
    assert since.startswith("此回答之后：")
    assert f"退款申请 {refund.request_id} 已由 Olivia Brown 于 " in since
    assert "拒绝" in since


def test_a_change_before_the_answer_is_not_news(demo, fake_openai):
    # A refund decided before the run answered is what the answer already knew
    proposing_the_mug(fake_openai, "Proposed.")
    first = start_run("The mug arrived broken, refund it in full.")
    drive(first)
    approve(RefundRequest.objects.get(order__order_id=MUG))
    fake_openai.enqueue(
        tool_reply(tool_call("get_refund_status", {"order_id": MUG})),
        text_reply("The refund was approved."),
    )
    later = start_run("Where is the refund for the mug?")
    drive(later)

    assert run_as_read(later)["since_answer"] == ""
    assert "was approved by" in run_as_read(first)["since_answer"]


def test_a_chinese_agent_reads_what_the_run_did_in_chinese(demo, fake_openai):
    proposing_the_mug(fake_openai, "好的，已处理。")
    run = start_run("客户说杯子碎了，请帮忙全额退款。")
    drive(run)
    request_id = RefundRequest.objects.get(order__order_id=MUG).request_id

    did = run_as_read(run)["did"]

    assert did == [
        f"已查询订单 #{MUG}（Ceramic mug）：已付 129.00 CNY，5 天前送达，还可退 129.00 CNY。",
        f"已提出申请：为订单 #{MUG}（Ceramic mug） 退 129.00 CNY（申请 {request_id}），"
        "等待审核人批准，尚未退款。",
    ]
    assert not any(name in line for line in did for name in TOOL_NAMES)


@pytest.mark.django_db(transaction=True)
def test_what_the_answer_already_says_is_not_said_again_beside_it(demo, fake_openai, settings):
    # Given a small model's answer with the desk's records under it
    settings.AGENT_SMALL_MODEL = True
    settings.AGENT_SMALL_MODEL_PIECES = ["records"]
    proposing_the_mug(fake_openai, "Done, it is with a reviewer.")
    run = start_run("The mug arrived broken, propose a full refund of 129.00.")
    drive(run)
    body = run_as_read(run)

    # Then every record line is said once: in the answer's block, not again in the list beside
    assert "From the records of this run:" in body["final_answer"]
    assert body["did"] == []
    lines = [line for line in body["final_answer"].splitlines() if line.strip()]
    assert len(lines) == len(set(lines))


@pytest.mark.django_db(transaction=False)
def test_the_conversation_reads_its_answers_news_in_as_many_queries_for_ten_as_for_two(demo):

    ticket = Ticket.objects.get(reference="TCK-1001")
    agent = get_user_model().objects.get(username="agent")

    def answered(count: int) -> int:
        for number in range(count):
            body = f"Answer number {number} about order {MUG}."
            AgentRun.objects.create(
                ticket=ticket, started_by=agent, actor_role="agent", status="completed",
                final_answer=body,
            )  # fmt: skip
            ticket_post_message(ticket=ticket, author_kind="assistant", body=body)
        messages = list(TicketMessage.objects.filter(ticket=ticket))
        with CaptureQueriesContext(connection) as queries:
            answers_since(ticket.pk, messages)
        return len(queries)

    assert answered(2) == answered(8)


def test_changes_by_many_people_are_told_in_as_many_queries_as_one(demo, fake_openai):
    # Given an answer about the mug's refund, then later changes by one or by three people
    proposing_the_mug(fake_openai, "Proposed.")
    run = start_run("The mug arrived broken, refund it in full.")
    drive(run)
    refund = RefundRequest.objects.get(order__order_id=MUG)
    answer = TicketMessage.objects.get(ticket=run.ticket, author_kind="assistant")
    people = get_user_model().objects.filter(username__in=["reviewer", "reviewer2", "supervisor"])

    def told_by(actors) -> tuple[int, str]:
        for actor in actors:
            RefundEvent.objects.create(
                refund_request=refund, from_status="pending_approval", to_status="approved",
                actor=actor,
            )  # fmt: skip
        with CaptureQueriesContext(connection) as queries:
            line = answers_since(run.ticket_id, [answer])[answer.pk]
        return len(queries), line

    one, _ = told_by(people[:1])
    three, line = told_by(people[1:])

    # Then each is named, and naming them costs no query per change
    assert one == three
    assert "Olivia Brown" in line and "Tomás Ruiz" in line and "Chen Jing" in line
