"""The success contract: a run's answer is checked against the refunds that exist before it is
shown. Claims of a refund done, approved or on its way while the request is pending (or
absent) flag the run, and the agent reads the real status under the answer."""

import pytest
from rest_framework.test import APIClient

from agent.answer_check import claims_in
from agent.models import AgentRun
from refunds.models import RefundRequest
from tests.agent.runs import drive, start_run
from tests.fakes.openai_server import text_reply, tool_call, tool_reply
from tickets.models import TicketMessage

LOOK_UP_MUG = tool_call("get_order", {"order_id": "202610110087"})
PROPOSE_MUG = tool_call(
    "create_refund",
    {
        "order_id": "202610110087",
        "amount": 129.00,
        "reason": "damaged",
        "explanation": "Arrived broken; photo on the ticket.",
    },
)


@pytest.mark.parametrize(
    "answer, claims",
    [
        ("The customer has been refunded 129.00 CNY.", ["refunded"]),
        ("Done: the refund is complete.", ["refunded"]),
        ("I have processed the refund for the mug.", ["refunded"]),
        ("Good news, the refund was approved.", ["approved"]),
        ("The refund is on its way to Li Wei.", ["on_its_way"]),
        ("Li Wei will receive the refund in 3-5 days.", ["on_its_way"]),
        ("Successfully refunded!\nAnything else?", ["refunded"]),
    ],
)
def test_it_finds_outright_claims(answer, claims):
    assert claims_in(answer) == claims


@pytest.mark.parametrize(
    "answer",
    [
        "I proposed a refund of 129.00 CNY; it is pending approval. Nothing has been refunded yet.",
        "Once a reviewer approves it, the customer will receive the refund.",
        "The refund has not been approved.",
        "It must be approved by a reviewer before the customer gets any money.",
        "Has the customer been refunded? Let me check get_refund_status.",
        "The order was delivered 5 days ago and cost 129.00 CNY.",
        "The refund isn't complete until the provider confirms it.",
    ],
)
def test_it_reads_hedged_or_unrelated_sentences_as_no_claim(answer):
    assert claims_in(answer) == []


@pytest.mark.django_db(transaction=True)
def test_a_pending_proposal_described_as_refunded_flags_the_run_and_tells_the_agent(
    demo, fake_openai
):
    fake_openai.enqueue(
        tool_reply(LOOK_UP_MUG),
        tool_reply(PROPOSE_MUG),
        text_reply("All done: the customer has been refunded 129.00 CNY."),
    )
    run = start_run("The mug arrived broken, please refund it")

    drive(run)

    assert run.status == "completed"
    assert run.answer_contradicts_state is True
    refund = RefundRequest.objects.get(run=run)
    assert run.answer_check["claims"] == ["refunded"]
    assert run.answer_check["actual"][0]["request_id"] == refund.request_id
    assert run.answer_check["actual"][0]["status"] == "pending_approval"
    answer, warning = TicketMessage.objects.filter(ticket=run.ticket).order_by("-id")[:2][::-1]
    assert (answer.author_kind, answer.visibility) == ("assistant", "internal")
    assert (warning.author_kind, warning.visibility) == ("system", "internal")
    assert warning.body == (
        "Check before replying: the assistant's answer says the refund has been paid, but "
        f"request {refund.request_id} (129.00 CNY on order 202610110087) is waiting for a "
        "reviewer."
    )
    completed = run.events.get(type="run.completed")
    assert completed.data["answer_check"]["contradicts"] is True


@pytest.mark.django_db(transaction=True)
def test_a_claim_with_no_request_at_all_is_flagged(demo, fake_openai):
    fake_openai.enqueue(text_reply("I have refunded the mug, 129.00 CNY."))
    run = start_run("Refund the mug")

    drive(run)

    assert run.answer_contradicts_state is True
    assert run.answer_check["actual"] == []
    note = TicketMessage.objects.filter(ticket=run.ticket, author_kind="system").last()
    assert "there is no refund request on this ticket" in note.body


@pytest.mark.django_db(transaction=True)
def test_an_honest_answer_about_a_pending_proposal_is_not_flagged(demo, fake_openai):
    fake_openai.enqueue(
        tool_reply(PROPOSE_MUG),
        text_reply("Proposed 129.00 CNY under R-1; it is pending approval by a reviewer."),
    )
    run = start_run("The mug arrived broken, please refund it")

    drive(run)

    assert run.answer_contradicts_state is False
    assert run.answer_check == {}
    notes = TicketMessage.objects.filter(ticket=run.ticket, author_kind="system")
    assert not notes.filter(body__startswith="Check before replying").exists()


@pytest.mark.django_db(transaction=True)
def test_a_true_claim_about_a_refund_that_succeeded_is_not_flagged(demo, fake_openai):
    fake_openai.enqueue(tool_reply(LOOK_UP_MUG), tool_reply(PROPOSE_MUG), text_reply("Proposed."))
    first = start_run("The mug arrived broken, please refund it")
    drive(first)
    RefundRequest.objects.filter(run=first).update(status=RefundRequest.Status.SUCCEEDED)
    fake_openai.enqueue(text_reply("Yes: the customer has been refunded 129.00 CNY."))
    second = start_run("Has the customer been refunded for the mug?")

    drive(second)

    assert second.answer_contradicts_state is False
    assert second.answer_check["claims"] == ["refunded"]
    assert second.answer_check["actual"][0]["status"] == "succeeded"


def test_the_run_api_shows_the_flag(demo, db):
    run = start_run()
    AgentRun.objects.filter(pk=run.pk).update(
        answer_contradicts_state=True, answer_check={"contradicts": True}
    )
    api = APIClient()
    api.force_authenticate(run.started_by)

    body = api.get(f"/api/runs/{run.pk}/").json()

    assert body["answer_contradicts_state"] is True
    assert body["answer_check"] == {"contradicts": True}
