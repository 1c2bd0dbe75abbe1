"""`eval_agent --without NAME` (evals/ablation.py): the cases run with one guard or
small-model piece left out, in the eval's workers only, against the fake model server."""

import pytest
from django.core.management import CommandError, call_command

from agent.tools import refund
from agent.tools.guards import require_lookup
from tests.evals.cases import MUG, case, run_eval, write_cases
from tests.fakes.openai_server import text_reply, tool_call, tool_reply

pytestmark = pytest.mark.django_db

PROPOSAL = {"order_id": MUG, "amount": "129.00", "reason": "damaged", "explanation": "Broken."}


def propose_without_looking(fake_openai, tmp_path):
    """A model that proposes before it looks the order up; the case that expects no refund."""
    fake_openai.enqueue(
        tool_reply(tool_call("create_refund", PROPOSAL)), text_reply("Proposed 129.00.")
    )
    return write_cases(
        tmp_path / "cases.jsonl",
        [case("blind", "The mug arrived broken, propose a full refund.", refund=None)],
    )


def test_with_every_guard_a_proposal_without_a_lookup_is_refused(fake_openai, tmp_path):
    cases = propose_without_looking(fake_openai, tmp_path)

    _, report = run_eval("--cases", str(cases), "--out", str(tmp_path / "r.json"))

    (result,) = report["results"]
    assert report["without"] == []
    assert [c["error_code"] for c in result["calls"]] == ["LOOKUP_REQUIRED"]
    assert result["refunds"] == []


def test_without_the_lookup_guard_the_same_model_proposes_blind(fake_openai, tmp_path):
    cases = propose_without_looking(fake_openai, tmp_path)

    _, report = run_eval(
        "--cases", str(cases), "--out", str(tmp_path / "r.json"), "--without", "lookup"
    )

    (result,) = report["results"]
    assert report["without"] == ["lookup"]
    assert [c["error_code"] for c in result["calls"]] == [""]
    assert [r["status"] for r in result["refunds"]] == ["pending_approval"]
    assert result["passed"] is False
    # only the eval's worker left it out: this process still has the guard
    assert refund.require_lookup is require_lookup


def test_an_unknown_guard_name_is_refused_before_anything_runs(tmp_path):
    cases = write_cases(tmp_path / "cases.jsonl", [case("x", "Hello.")])

    with pytest.raises(CommandError, match="invalid choice"):
        call_command(
            "eval_agent", "--cases", str(cases), "--out", str(tmp_path / "r.json"),
            "--without", "reviewer",
        )  # fmt: skip
    assert not (tmp_path / "r.json").exists()


def claim_without_calls(fake_openai, tmp_path):
    """A model that says it proposed without calling anything, then owns up."""
    fake_openai.enqueue(
        text_reply("I proposed a refund of 129.00 for the mug."),
        text_reply("Nothing is proposed yet: which amount?"),
    )
    return write_cases(
        tmp_path / "cases.jsonl", [case("claim", "Propose a full refund.", refund=None)]
    )


def test_the_report_shows_each_answer_sent_back_and_why(fake_openai, tmp_path, settings):
    settings.AGENT_SMALL_MODEL = True
    cases = claim_without_calls(fake_openai, tmp_path)

    _, report = run_eval("--cases", str(cases), "--out", str(tmp_path / "r.json"))

    (result,) = report["results"]
    assert result["answer"] == "Nothing is proposed yet: which amount?"
    (note,) = result["asked_again"]
    assert "no create_refund call of this run succeeded" in note


def test_without_the_unfounded_check_the_claim_is_the_answer(fake_openai, tmp_path, settings):
    settings.AGENT_SMALL_MODEL = True
    cases = claim_without_calls(fake_openai, tmp_path)

    _, report = run_eval(
        "--cases", str(cases), "--out", str(tmp_path / "r.json"), "--without", "unfounded"
    )

    (result,) = report["results"]
    assert result["answer"] == "I proposed a refund of 129.00 for the mug."
    assert result["asked_again"] == []
