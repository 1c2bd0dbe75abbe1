"""Small-model mode's structured answer (the "did" piece, agent/runtime/structured_answer.py):
the model answers `{answer, did: [...]}` and what it says it did is checked against the tool
log. A claimed action the log does not show is dropped and told as the model's claim, never
as a fact; a reply that is not that JSON is the plain answer. Over HTTP, with the real client,
against the fake endpoint."""

import json

import pytest

from agent.runtime.structured_answer import Claimed, read_structured, unfounded
from refunds.models import RefundRequest
from tests.agent.runs import drive, start_run
from tests.fakes.openai_server import text_reply, tool_call, tool_reply

pytestmark = pytest.mark.django_db(transaction=True)

MUG = "202610110087"
NO_PROPOSAL = "The model said it proposed a refund; no proposal was made."


@pytest.fixture
def structured(settings):
    settings.AGENT_SMALL_MODEL = True
    settings.AGENT_SMALL_MODEL_PIECES = ["did"]


def answer(text: str, *did: tuple[str, str]) -> dict:
    return text_reply(
        json.dumps(
            {"answer": text, "did": [{"action": a, "order_id": o} for a, o in did]},
            ensure_ascii=False,
        )
    )


def test_a_claimed_proposal_the_log_does_not_show_is_dropped_and_flagged(
    demo, fake_openai, structured
):
    fake_openai.enqueue(
        tool_reply(tool_call("get_order", {"order_id": MUG})),
        answer(
            "She paid 129.00 CNY for the mug.",
            ("looked_up_order", MUG),
            ("proposed_refund", MUG),
        ),
    )
    run = start_run("The mug arrived broken, refund it in full.")

    drive(run)

    assert run.final_answer == f"She paid 129.00 CNY for the mug.\n\n{NO_PROPOSAL}"
    assert not RefundRequest.objects.filter(run=run).exists()


def test_what_the_log_shows_adds_nothing_to_the_answer(demo, fake_openai, structured):
    fake_openai.enqueue(
        tool_reply(tool_call("get_order", {"order_id": MUG})),
        answer("She paid 129.00 CNY.", ("looked_up_order", MUG)),
    )
    run = start_run(f"How much did she pay for order {MUG}?")

    drive(run)

    assert run.final_answer == "She paid 129.00 CNY."


def test_a_chinese_agent_is_told_in_chinese(demo, fake_openai, structured):
    fake_openai.enqueue(answer("好的，我来处理。", ("proposed_refund", MUG)))
    run = start_run("客户说杯子碎了，请全额退款。")

    drive(run)

    told = "模型说它提出了退款申请；实际上并未提出任何申请。"
    assert run.final_answer == f"好的，我来处理。\n\n{told}"


@pytest.mark.parametrize(
    "reply",
    [
        '{"answer": "She paid 129.00 CNY.", "did": [',  # cut off
        "She paid 129.00 CNY.",  # plain text
        '{"did": []}',  # no answer in it
    ],
)
def test_a_reply_that_is_not_the_json_is_the_plain_answer(demo, fake_openai, structured, reply):
    fake_openai.enqueue(tool_reply(tool_call("get_order", {"order_id": MUG})), text_reply(reply))
    run = start_run(f"How much did she pay for order {MUG}?")

    drive(run)

    assert run.final_answer == reply


def test_the_format_is_asked_in_the_rules_and_as_a_schema_on_a_last_call(
    demo, fake_openai, structured, settings
):
    settings.AGENT_MAX_STEPS = 1
    fake_openai.enqueue(
        tool_reply(tool_call("get_order", {"order_id": MUG})),
        answer("She paid 129.00 CNY.", ("looked_up_order", MUG)),
    )
    run = start_run(f"How much did she pay for order {MUG}?")

    drive(run)

    first, last = fake_openai.requests
    assert '"did"' in first["messages"][0]["content"]
    assert first["messages"][0]["content"] == last["messages"][0]["content"]
    assert "response_format" not in first  # a step that may call tools
    assert last["tool_choice"] == "none"
    assert last["response_format"]["json_schema"]["name"] == "answer"
    assert run.final_answer.startswith("She paid 129.00 CNY.")


def test_other_models_are_not_asked_and_their_json_is_not_read(demo, fake_openai):
    reply = json.dumps({"answer": "Done.", "did": [{"action": "proposed_refund"}]})
    fake_openai.enqueue(text_reply(reply))
    run = start_run("Thanks, that's all.")

    drive(run)

    (request,) = fake_openai.requests
    assert '"did"' not in request["messages"][0]["content"]
    assert "response_format" not in request
    assert run.final_answer == reply


@pytest.mark.django_db(transaction=False)
def test_a_claim_is_checked_against_the_order_it_names():
    looked_up = {
        "tool_name": "get_order",
        "ok": True,
        "result": {"order_id": MUG},
        "arguments_raw": json.dumps({"order_id": MUG}),
    }
    read = read_structured(
        "```json\n"
        + json.dumps(
            {
                "answer": "Checked.",
                "did": [
                    {"action": "looked_up_order", "order_id": MUG},
                    {"action": "looked_up_order", "order_id": "202609020031"},
                    {"action": "something_else", "order_id": ""},
                ],
            }
        )
        + "\n```"
    )

    assert read is not None and read.answer == "Checked."
    assert unfounded(read.did, [looked_up]) == [Claimed("looked_up_order", "202609020031")]
