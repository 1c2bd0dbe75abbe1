"""Each case runs on a fresh demo shop shaped by its setup steps, in a worker process that
talks to the configured model: cases never see each other's refunds, and the provider the
command is configured for is the one the runs use."""

import pytest

from tests.evals.cases import MUG, case, run_eval, write_cases
from tests.fakes.openai_server import text_reply, tool_call, tool_reply

pytestmark = pytest.mark.django_db

REFUND_THE_MUG = case(
    "mug-refund",
    "The mug arrived broken, please refund it",
    tools=["get_order", "create_refund"],
    refund={"status": "pending_approval", "amount": "129.00", "order_id": MUG},
)


def test_cases_on_the_same_order_never_see_each_others_refunds(settings, tmp_path):
    settings.LLM_PROVIDER = "offline"
    cases = write_cases(
        tmp_path / "cases.jsonl",
        [{**REFUND_THE_MUG, "id": f"mug-refund-{n}"} for n in range(3)],
    )

    _, report = run_eval(
        "--cases", str(cases), "--out", str(tmp_path / "r.json"),
        "--repeat", "2", "--concurrency", "2",
    )  # fmt: skip

    # Each run proposed the ticket's first intent on the order: a shop that had seen another
    # run's proposal would have answered with that one (UNCHANGED), creating nothing.
    refunds = [r["refunds"] for r in report["results"]]
    assert len(refunds) == 6
    assert all(len(created) == 1 for created in refunds)
    assert len({created[0]["request_id"] for created in refunds}) == 1
    assert report["metrics"]["task_success"] == 1.0


def test_setup_steps_shape_the_shop_the_model_sees(fake_openai, tmp_path):
    fake_openai.enqueue(
        tool_reply(
            tool_call("get_order", {"order_id": MUG}),
            tool_call("get_refund_status", {"order_id": MUG}),
        ),
        text_reply("Done."),
    )
    setup = [
        {"kind": "customer_message", "body": "Any news about my mug?"},
        {"kind": "order_note", "order_id": MUG, "note": "Ring twice."},
        {"kind": "customer_name", "customer_email": "li.wei@example.com", "name": "Lina Renamed"},
        {
            "kind": "refund",
            "order_id": MUG,
            "amount": "50.00",
            "status": "succeeded",
            "reason": "damaged",
        },
    ]
    cases = write_cases(
        tmp_path / "cases.jsonl", [{**case("shaped", "Status?", refund=None), "setup": setup}]
    )

    _, report = run_eval("--cases", str(cases), "--out", str(tmp_path / "r.json"))

    (result,) = report["results"]
    assert result["passed"] is True, result["failures"]
    prompt = "\n".join(m["content"] for m in fake_openai.requests[0]["messages"][:3])
    # The renamed customer, by first name only (DESIGN §17)
    assert "Lina" in prompt and "Renamed" not in prompt
    assert "Any news about my mug?" in prompt
    order, status = (call["result"] for call in result["calls"])
    assert (order["note"], order["refunded"]) == (
        {"untrusted_customer_text": "Ring twice."},
        "50.00",
    )
    assert [(r["status"], r["amount"]) for r in status["refund_requests"]] == [
        ("succeeded", "50.00")
    ]
    # The earlier refund is the situation, not something the run created.
    assert result["refunds"] == []


def test_a_case_whose_setup_cannot_be_applied_fails_and_the_others_still_run(settings, tmp_path):
    settings.LLM_PROVIDER = "offline"
    pending = {
        "kind": "refund",
        "order_id": MUG,
        "amount": "10.00",
        "status": "pending_approval",
        "reason": "damaged",
    }
    # A ticket holds one open intent per order: the second pending request cannot exist.
    impossible = {**case("two-pending", "What did the customer pay?"), "setup": [pending, pending]}
    cases = write_cases(
        tmp_path / "cases.jsonl",
        [impossible, case("mug-paid", "What did the customer pay?", tools=["get_order"])],
    )

    _, report = run_eval("--cases", str(cases), "--out", str(tmp_path / "r.json"))

    broken, fine = report["results"]
    assert broken["passed"] is False
    assert broken["calls"] == []
    assert broken["failures"] == [
        "the case could not be run: setup step 2 (refund): TCK-1001 already has an open "
        "refund request on order 202610110087"
    ]
    assert fine["passed"] is True
