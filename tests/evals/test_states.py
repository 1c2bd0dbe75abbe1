"""The states where assistants go wrong, set up for a case (evals/cases/README.md): refunds a
reviewer rejected, a requester withdrew, whose outcome is unknown or that wait at the provider;
an order in another currency with the policy's limits in it; a tool that does not answer in
time; and a case's own step cap. Each is made by the desk's own services or the executor's
own timeout, in the worker that runs the case against the configured model."""

import pytest

from tests.evals.cases import MUG, case, run_eval, write_cases
from tests.fakes.openai_server import text_reply, tool_call, tool_reply

pytestmark = pytest.mark.django_db

HEADPHONES = "202610150012"


def earlier_refund(status: str, **more) -> dict:
    return {
        "kind": "refund",
        "order_id": MUG,
        "amount": "129.00",
        "status": status,
        "reason": "damaged",
        **more,
    }


def status_case(case_id: str, *steps: dict) -> dict:
    return {**case(case_id, "Where is the mug refund?", refund=None), "setup": list(steps)}


def test_refunds_are_set_up_rejected_withdrawn_unknown_and_pending_at_the_provider(
    fake_openai, tmp_path
):
    statuses = ["rejected", "withdrawn", "outcome_unknown", "provider_pending"]
    for _ in statuses:
        fake_openai.enqueue(
            tool_reply(tool_call("get_refund_status", {"order_id": MUG})), text_reply("Checked.")
        )
    cases = write_cases(
        tmp_path / "cases.jsonl",
        [
            status_case("rejected", earlier_refund("rejected", note="No damage on the photos.")),
            status_case(
                "withdrawn", earlier_refund("withdrawn", requested_by="agent", note="Changed mind")
            ),
            status_case("unknown", earlier_refund("outcome_unknown")),
            status_case("at-provider", earlier_refund("provider_pending")),
        ],
    )

    _, report = run_eval("--cases", str(cases), "--out", str(tmp_path / "r.json"))

    seen = {}
    for result in report["results"]:
        assert result["passed"] is True, result["failures"]
        (call,) = result["calls"]
        (request,) = call["result"]["refund_requests"]
        seen[result["id"]] = (
            request["status"],
            request["latest_confirmation"]["status"],
            request["provider_refund_id"] is not None,
            call["result"]["refunded"],
        )
        # The earlier refund is the situation, not something the run created.
        assert result["refunds"] == []
    assert seen == {
        # Settled by a reviewer or its requester: nothing left the shop.
        "rejected": ("rejected", "rejected", False, "0.00"),
        "withdrawn": ("withdrawn", "withdrawn", False, "0.00"),
        # Approved and sent: the money may have left (unknown) or is on its way (pending).
        "unknown": ("outcome_unknown", "approved", False, "129.00"),
        "at-provider": ("provider_pending", "approved", True, "129.00"),
    }


def test_an_order_in_another_currency_is_refunded_in_it_within_that_currencys_limits(
    fake_openai, tmp_path
):
    fake_openai.enqueue(
        tool_reply(
            tool_call("get_order", {"order_id": MUG}),
            tool_call("search_policies", {"query": "authority limits per role"}),
        ),
        tool_reply(
            tool_call(
                "create_refund",
                {
                    "order_id": MUG,
                    "amount": 2600,
                    "reason": "damaged",
                    "explanation": "Arrived broken.",
                },
            )
        ),
        text_reply("Proposed 2600 JPY, pending approval."),
    )
    jpy = {
        **case(
            "jpy",
            "The mug arrived broken, refund it in full.",
            tools=["get_order", "create_refund"],
            refund={"status": "pending_approval", "amount": "2600.00", "order_id": MUG},
        ),
        "setup": [
            {"kind": "order_currency", "order_id": MUG, "currency": "JPY", "amount_paid": "2600"},
            {
                "kind": "role_limits",
                "currency": "JPY",
                "limits": {"intern": "0", "agent": "10000", "supervisor": "100000"},
            },
        ],
    }
    cases = write_cases(tmp_path / "cases.jsonl", [jpy])

    _, report = run_eval("--cases", str(cases), "--out", str(tmp_path / "r.json"))

    (result,) = report["results"]
    assert result["passed"] is True, result["failures"]
    order, policies, proposal = (call["result"] for call in result["calls"])
    assert (order["currency"], order["amount_paid"], order["lines"][0]["unit_price"]) == (
        "JPY",
        "2600.00",
        "2600.00",
    )
    r5 = next(clause for clause in policies["clauses"] if clause["ref"] == "R-5")
    assert (
        "In JPY: interns up to 0 JPY; agents up to 10000 JPY; supervisors up to 100000 JPY."
        in (r5["text"])
    )
    # 2600 is over the agent's 500.00 CNY limit as a bare number: only the JPY limit applies.
    assert proposal["status"] == "pending_approval"
    assert [(r["amount"], r["currency"]) for r in result["refunds"]] == [("2600.00", "JPY")]


def test_a_tool_set_up_to_time_out_is_answered_tool_timeout_by_the_executor(fake_openai, tmp_path):
    fake_openai.enqueue(
        # The case whose get_order does not answer: the other tools still do.
        tool_reply(
            tool_call("get_order", {"order_id": MUG}),
            tool_call("get_refund_status", {"order_id": MUG}),
        ),
        text_reply("I could not look the order up in time."),
        # The next case, in the same worker: get_order answers again.
        tool_reply(tool_call("get_order", {"order_id": MUG})),
        text_reply("129.00"),
    )
    slow = {
        **case("slow", "What did she pay?", tools=["get_order"], answer_must=["time"]),
        "setup": [{"kind": "tool_timeout", "tool": "get_order", "timeout_s": 0.5}],
    }
    cases = write_cases(
        tmp_path / "cases.jsonl", [slow, case("fine", "What did she pay?", tools=["get_order"])]
    )

    _, report = run_eval("--cases", str(cases), "--out", str(tmp_path / "r.json"))

    slow_result, fine_result = report["results"]
    assert slow_result["passed"] is True, slow_result["failures"]
    order, status = slow_result["calls"]
    assert (order["ok"], order["error_code"]) == (False, "TOOL_TIMEOUT")
    assert order["result"]["error"]["retryable"] is True
    # The executor gave up at the case's TOOL_TIMEOUT_S, not the 8 s default.
    assert 500 <= order["elapsed_ms"] < 5000
    assert (status["ok"], status["error_code"]) == (True, "")
    assert report["tool_latency"]["get_order"]["timeouts"] == 1
    (fine_order,) = fine_result["calls"]
    assert (fine_order["ok"], fine_order["result"]["amount_paid"]) == (True, "129.00")


def test_a_run_that_reaches_the_cases_step_cap_fails_it(fake_openai, tmp_path):
    fake_openai.enqueue(
        # Capped at 1 step: the lookup is the only step, then the run must answer.
        tool_reply(tool_call("get_order", {"order_id": MUG})),
        text_reply("The mug cost 129.00."),
        # Capped at 2 steps: a lookup and the answer fit.
        tool_reply(tool_call("get_order", {"order_id": MUG})),
        text_reply("The mug cost 129.00."),
    )
    question = case("capped", "What did she pay?", tools=["get_order"], answer_must=["129"])
    cases = write_cases(
        tmp_path / "cases.jsonl",
        [{**question, "max_steps": 1}, {**question, "id": "fits", "max_steps": 2}],
    )

    _, report = run_eval("--cases", str(cases), "--out", str(tmp_path / "r.json"))

    capped, fits = report["results"]
    assert (capped["step_cap"], capped["stop_reason"], capped["passed"]) == (
        1,
        "max_steps",
        False,
    )
    assert capped["failures"] == [
        "the run reached the case's step cap (1 steps) before it answered"
    ]
    assert (fits["step_cap"], fits["stop_reason"], fits["steps"], fits["passed"]) == (
        2,
        "final_answer",
        2,
        True,
    )
    assert report["per_run"]["at_step_limit"] == 1


def test_a_refund_state_the_policy_would_never_allow_fails_its_setup_by_name(settings, tmp_path):
    settings.LLM_PROVIDER = "offline"
    # 1000.00 on a 129.00 mug: the refund service refuses the proposal, so no rejected
    # refund can come of it.
    impossible = status_case("impossible", {**earlier_refund("rejected"), "amount": "1000.00"})
    cases = write_cases(tmp_path / "cases.jsonl", [impossible])

    _, report = run_eval("--cases", str(cases), "--out", str(tmp_path / "r.json"))

    (result,) = report["results"]
    assert result["calls"] == []
    assert result["failures"] == [
        "the case could not be run: setup step 1 (refund): The policy refuses this refund. "
        "R-2: requested 1000.00 CNY exceeds the refundable balance of 129.00 CNY (paid 129.00 "
        "CNY, already refunded 0.00 CNY)"
    ]
