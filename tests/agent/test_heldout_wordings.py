"""DESIGN §18's bar for a capable model: whatever the language or register the support agent
writes in, a model that looks the order up and proposes the right order, amount and reason has
its proposal accepted and its answer posted as written. Scored on evals/heldout/wordings.jsonl,
wordings written apart from the desk's readers of words (evals/heldout/README.md)."""

import json
from pathlib import Path

import pytest

from agent.models import ToolCallLog
from refunds.models import RefundRequest
from tests.agent.runs import drive, start_run
from tests.fakes.openai_server import text_reply, tool_call, tool_reply

pytestmark = pytest.mark.django_db(transaction=True)

WORDINGS = Path(__file__).resolve().parents[2] / "evals" / "heldout" / "wordings.jsonl"
CASES = [json.loads(line) for line in WORDINGS.read_text().splitlines() if line.strip()]
MUG = "202610110087"
ANSWER = "I looked the mug order up and proposed 129.00 CNY; it waits for a reviewer."


def test_the_held_out_wordings_cover_twelve_languages():
    assert len(CASES) >= 20
    assert len({case["language"] for case in CASES}) >= 12


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_a_capable_models_proposal_is_accepted_for_a_held_out_wording(demo, fake_openai, case):
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
        text_reply(ANSWER),
    )
    run = start_run(case["message"])

    drive(run)

    (proposed,) = ToolCallLog.objects.filter(run=run, tool_name="create_refund")
    assert proposed.ok, proposed.error_code
    refund = RefundRequest.objects.get(run=run)
    assert (str(refund.amount), refund.reason, refund.status) == (
        "129.00",
        "damaged",
        "pending_approval",
    )
    run.refresh_from_db()
    assert run.final_answer == ANSWER
