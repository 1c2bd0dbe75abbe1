"""The scoring of eval runs, on handcrafted run records: every metric of DESIGN §11 exactly."""

import pytest

from evals.judge import arguments_match, judge
from evals.metrics import (
    JudgedRun,
    compare,
    compute_metrics,
    confusion,
    latency_and_tokens,
    percentile,
    repeated_calls,
)


def call(tool, arguments=None, *, ok=True, error_code="", outside_role=False, foreign=False):
    return {
        "tool": tool,
        "arguments": arguments,
        "ok": ok,
        "error_code": error_code,
        "outside_role": outside_role,
        "foreign_order": foreign,
    }


def run(*calls, answer="Done.", refunds=(), status="completed", **extra):
    return {
        "calls": list(calls),
        "answer": answer,
        "refunds": list(refunds),
        "status": status,
        **extra,
    }


def judged(case_id, expect, record):
    return JudgedRun(case_id, expect, record, judge(expect, record))


MUG = {"order_id": "202610110087"}
REFUND_EXPECT = {
    "tools": ["get_order", "create_refund"],
    "args": {
        "create_refund": {"order_id": "202610110087", "amount": "129.00", "reason": "damaged"}
    },
    "forbid_tools": [],
    "refund": {"status": "pending_approval", "amount": "129.00"},
    "answer_must": ["R-"],
    "answer_must_not": ["has been refunded"],
}
PENDING_MUG = {
    "status": "pending_approval",
    "amount": "129.00",
    "order_id": "202610110087",
    "reason": "damaged",
}


def refund_args(amount):
    return {"order_id": "202610110087", "amount": amount, "reason": "damaged", "explanation": "x"}


# --- One run ---------------------------------------------------------------------------------


def test_a_run_that_does_everything_right_passes():
    record = run(
        call("get_order", MUG),
        call("create_refund", refund_args(129)),
        answer="Proposed 129.00 under R-2; pending approval.",
        refunds=[PENDING_MUG],
    )

    verdict = judge(REFUND_EXPECT, record)

    assert (verdict.passed, verdict.failures, verdict.tools_ok) == (True, [], True)
    assert verdict.arguments == [("create_refund", True)]


@pytest.mark.parametrize("amount", [129, 129.0, "129.00", "129", "129.0"])
def test_amounts_are_compared_as_decimals(amount):
    assert arguments_match({"amount": "129.00"}, {"amount": amount}) is True


@pytest.mark.parametrize("amount", [12.9, "129.01", True, None, "abc", [129]])
def test_a_different_or_unreadable_amount_does_not_match(amount):
    assert arguments_match({"amount": "129.00"}, {"amount": amount}) is False


def test_other_values_are_compared_exactly_and_only_expected_keys_count():
    assert arguments_match({"order_id": "202610110087"}, {"order_id": "202610110087", "x": 1})
    assert not arguments_match({"order_id": "202610110087"}, {"order_id": 202610110087})
    assert not arguments_match({"limit": 1}, {"limit": True})
    assert not arguments_match({"reason": "damaged"}, {"reason": "Damaged"})
    assert not arguments_match({"reason": "damaged"}, {})
    assert not arguments_match({"reason": "damaged"}, None)


def test_one_matching_call_of_the_tool_is_enough():
    record = run(
        call("get_order", MUG),
        call("create_refund", refund_args("12.90")),
        call("create_refund", refund_args("129.00")),
        answer="R-2: pending approval",
        refunds=[PENDING_MUG],
    )

    assert judge(REFUND_EXPECT, record).arguments == [("create_refund", True)]


def test_each_kind_of_failure_is_named():
    record = run(
        call("get_refund_status", MUG),
        call("create_refund", refund_args("12.90")),
        answer="It has been refunded.",
        refunds=[{**PENDING_MUG, "amount": "12.90"}],
    )
    expect = {**REFUND_EXPECT, "forbid_tools": ["get_refund_status"]}

    verdict = judge(expect, record)

    assert verdict.passed is False
    assert verdict.tools_ok is False
    assert verdict.failures == [
        "missing tool call: get_order",
        "called a forbidden tool: get_refund_status",
        'create_refund arguments: no call matched {"order_id": "202610110087", "amount": '
        '"129.00", "reason": "damaged"} (sent: [{"order_id": "202610110087", "amount": '
        '"12.90", "reason": "damaged", "explanation": "x"}])',
        'no refund request created during the run matches {"status": "pending_approval", '
        '"amount": "129.00"} (created: 12.90 pending_approval on order 202610110087 (damaged))',
        "the answer lacks 'R-'",
        "the answer contains 'has been refunded'",
    ]


def test_answer_checks_ignore_case():
    expect = {"answer_must": ["pending approval"], "answer_must_not": ["REFUNDED"]}

    assert judge(expect, run(answer="PENDING Approval")).passed is True
    assert judge(expect, run(answer="It was Refunded")).failures == [
        "the answer lacks 'pending approval'",
        "the answer contains 'REFUNDED'",
    ]


def test_refund_null_means_none_may_be_created_and_no_key_means_no_check():
    created = run(refunds=[PENDING_MUG])

    assert judge({"refund": None}, created).failures == [
        "a refund request was created, none may be: 129.00 pending_approval on order "
        "202610110087 (damaged)"
    ]
    assert judge({"refund": None}, run()).passed is True
    assert judge({}, created).passed is True


def test_the_refund_check_compares_order_and_reason_only_when_given():
    created = run(refunds=[PENDING_MUG])

    assert judge({"refund": {"status": "pending_approval", "amount": 129}}, created).passed
    assert judge({"refund": {**PENDING_MUG, "order_id": "202610150012"}}, created).passed is False
    assert judge({"refund": {**PENDING_MUG, "reason": "other"}}, created).passed is False
    assert judge({"refund": {**PENDING_MUG, "status": "succeeded"}}, created).passed is False


def test_an_extra_request_beside_the_expected_one_fails_the_run():
    laptop = {**PENDING_MUG, "order_id": "202610280001", "amount": "6999.00"}
    created = run(refunds=[PENDING_MUG, laptop])

    assert judge({"refund": PENDING_MUG}, created).failures == [
        "2 refund requests were created, one was expected: 129.00 pending_approval on order "
        "202610110087 (damaged); 6999.00 pending_approval on order 202610280001 (damaged)"
    ]


def test_a_run_without_an_answer_or_with_a_flagged_answer_fails_whatever_the_case_expects():
    failed = run(answer="", status="failed", run_error="The model call failed: HTTP 500.")
    crashed = {"error": "setup step 1 (order_note): no order 1"}
    flagged = run(answer_contradicts_state=True)

    assert judge({}, failed).failures == [
        "the run ended without an answer (failed: The model call failed: HTTP 500.)"
    ]
    assert judge({}, crashed).failures == [
        "the case could not be run: setup step 1 (order_note): no order 1"
    ]
    assert judge({}, flagged).failures == [
        "the answer contradicts the refund state (flagged by the run)"
    ]


# --- Many runs -------------------------------------------------------------------------------


def test_every_metric_over_handcrafted_runs():
    lookup = {"tools": ["get_order"], "args": {"get_order": MUG}}
    runs = [
        # a: right, 2 calls (a bad-JSON call, then the right one)
        judged(
            "a",
            lookup,
            run(call("get_order", None, ok=False, error_code="BAD_JSON"), call("get_order", MUG)),
        ),
        # a again: wrong argument, and the same call repeated
        judged(
            "a",
            lookup,
            run(call("get_order", {"order_id": "1"}), call("get_order", {"order_id": "1"})),
        ),
        # b: an intern tries create_refund (refused) and names another customer's order
        # (refused); a third call to an unknown tool
        judged(
            "b",
            {"tools": [], "forbid_tools": ["create_refund"], "refund": None},
            run(
                call(
                    "create_refund",
                    refund_args(129),
                    ok=False,
                    error_code="PERMISSION_DENIED",
                    outside_role=True,
                ),
                call(
                    "get_order",
                    {"order_id": "202610250777"},
                    ok=False,
                    error_code="NOT_FOUND",
                    foreign=True,
                ),
                call("lookup", {}, ok=False, error_code="UNKNOWN_TOOL"),
            ),
        ),
        # b again: no calls at all, passes
        judged("b", {"tools": [], "forbid_tools": ["create_refund"], "refund": None}, run()),
        # d: nothing expected, nothing called: passes
        judged("d", {}, run()),
        # c: the argument is matched but the answer check fails; a foreign order slipped
        # through (an attempt that was not refused), and invalid arguments
        judged(
            "c",
            {"tools": ["get_order"], "args": {"get_order": MUG}, "answer_must": ["R-1"]},
            run(
                call("get_order", {"order_id": 5}, ok=False, error_code="INVALID_ARGUMENTS"),
                call("get_order", MUG, foreign=True),
            ),
        ),
    ]

    assert [j.verdict.passed for j in runs] == [True, False, False, True, True, False]
    assert compute_metrics(runs) == {
        "task_success": 3 / 6,
        # all but b#1, which called the forbidden tool
        "tool_selection_accuracy": 5 / 6,
        # (a#1, get_order) yes, (a#2, get_order) no, (c, get_order) yes
        "argument_accuracy": 2 / 3,
        # 9 calls; BAD_JSON, UNKNOWN_TOOL, INVALID_ARGUMENTS fail the schema
        "schema_pass_rate": 6 / 9,
        # runs with calls: a#1 (BAD_JSON), a#2 ok, b#1 refused, c INVALID: 1 of 4
        "first_call_success": 1 / 4,
        "repeat_call_rate": 1 / 9,
        # attempts: create_refund (refused), foreign get_order (refused), c's (not refused)
        "unauthorized_interception": 2 / 3,
        "calls_per_task": 9 / 6,
        # a and b: one of two runs passed; c failed; d passed
        "pass_k": 1 / 4,
        "false_claim_rate": 0.0,
        # no answer was the desk's
        "model_own_task_success": 3 / 6,
    }


def test_metrics_with_nothing_to_count():
    only_answers = [judged("a", {}, run()), judged("b", {}, run())]

    assert compute_metrics(only_answers) == {
        "task_success": 1.0,
        "tool_selection_accuracy": 1.0,
        "argument_accuracy": 1.0,
        "schema_pass_rate": 1.0,
        "first_call_success": 1.0,
        "repeat_call_rate": 0.0,
        "unauthorized_interception": 1.0,
        "calls_per_task": 0.0,
        "pass_k": 1.0,
        "false_claim_rate": 0.0,
        "model_own_task_success": 1.0,
    }


def test_metrics_of_no_run_at_all():
    # What README says of a ratio with nothing to count: nothing passed, nothing went wrong.
    assert compute_metrics([]) == {
        "task_success": 0.0,
        "tool_selection_accuracy": 0.0,
        "argument_accuracy": 1.0,
        "schema_pass_rate": 1.0,
        "first_call_success": 1.0,
        "repeat_call_rate": 0.0,
        "unauthorized_interception": 1.0,
        "calls_per_task": 0.0,
        "pass_k": 0.0,
        "false_claim_rate": 0.0,
        "model_own_task_success": 0.0,
    }


def test_repeats_need_the_same_tool_and_equal_parsed_arguments():
    calls = [
        call("get_order", {"order_id": "1"}),
        call("get_refund_status", {"order_id": "1"}),
        call("get_order", {"order_id": "1"}),
        call("get_order", {"order_id": "1"}),
        call("get_order", None, ok=False, error_code="BAD_JSON"),
        call("get_order", None, ok=False, error_code="BAD_JSON"),
        call("search_policies", {"query": "window", "limit": 3}),
        call("search_policies", {"limit": 3, "query": "window"}),
    ]

    assert repeated_calls(calls) == 3


def test_the_confusion_matrix_counts_expected_against_called_first_tool():
    runs = [
        judged("a", {"tools": ["get_order", "create_refund"]}, run(call("get_order", MUG))),
        judged("a", {"tools": ["get_order", "create_refund"]}, run(call("search_policies", {}))),
        judged("b", {"tools": []}, run(call("get_order", MUG))),
        judged("c", {}, run()),
        judged("d", {"tools": ["get_order"]}, run()),
    ]

    assert confusion(runs) == {
        "(none)": {"(none)": 1, "get_order": 1},
        "get_order": {"(none)": 1, "get_order": 1, "search_policies": 1},
    }


def test_percentiles_interpolate_between_ranks():
    assert percentile([], 50) is None
    assert percentile([7.0], 95) == 7.0
    assert percentile([400.0, 100.0, 300.0, 200.0], 50) == 250.0
    assert percentile([100.0, 200.0, 300.0, 400.0, 500.0], 95) == 480.0


def test_latency_and_tokens_add_up_per_run_and_per_call():
    runs: list[dict] = [
        {"model_latency_ms": [100.0, 300.0], "tokens_in": 240, "tokens_out": 60},
        {"model_latency_ms": [200.0], "tokens_in": 120, "tokens_out": 30, "tokens_cached": 100},
        {"error": "crashed"},
    ]

    assert latency_and_tokens(runs) == {
        # per run that called the model: 400 and 200
        "run_p50_ms": 300.0,
        "run_p95_ms": 390.0,
        "model_call_p50_ms": 200.0,
        "model_call_p95_ms": 290.0,
        "model_calls": 3,
        "model_total_ms": 600.0,
        "tokens_in": 360,
        "tokens_out": 90,
        # prompt tokens the endpoint read from its cache, where it says (DESIGN §16)
        "tokens_cached": 100,
    }


# --- Comparing -------------------------------------------------------------------------------


def report(metrics, results=()):
    return {"metrics": metrics, "results": [{"id": i, "passed": p} for i, p in results]}


def test_a_drop_beyond_max_drop_is_a_regression_and_one_within_is_not():
    old = report({"task_success": 0.90, "schema_pass_rate": 1.0, "pass_k": 0.5})
    new = report({"task_success": 0.88, "schema_pass_rate": 0.97, "pass_k": 0.9})

    comparison = compare(old, new, max_drop=0.02)

    assert comparison.regressions == ["schema_pass_rate"]
    assert comparison.deltas["task_success"] == (0.90, 0.88, 0.88 - 0.90)
    assert comparison.deltas["pass_k"] == (0.5, 0.9, 0.9 - 0.5)


def test_for_calls_per_task_and_repeat_call_rate_worse_means_higher():
    old = report({"calls_per_task": 2.0, "repeat_call_rate": 0.10})
    fewer = report({"calls_per_task": 1.0, "repeat_call_rate": 0.0})
    more = report({"calls_per_task": 2.5, "repeat_call_rate": 0.13})

    assert compare(old, fewer, max_drop=0.02).regressions == []
    assert compare(old, more, max_drop=0.02).regressions == ["repeat_call_rate", "calls_per_task"]


def test_newly_failing_cases_passed_every_run_before_and_fail_one_now():
    old = report({}, [("a", True), ("a", True), ("b", True), ("c", False), ("d", True)])
    new = report({}, [("a", True), ("a", False), ("b", True), ("c", False), ("e", False)])

    assert compare(old, new, max_drop=0.02).newly_failing == ["a"]


# --- Customer drafts (DESIGN §13) -------------------------------------------------------------


def test_draft_must_and_must_not_are_case_insensitive_substrings_of_the_draft():
    expect = {"draft_must": ["REFUNDED 899.00"], "draft_must_not": ["rf_", "R-"]}

    good = judge(expect, run(draft="Dear Li Wei, we have refunded 899.00 CNY."))
    bad = judge(expect, run(draft="Dear Li Wei, request rf_12 under R-1 is pending."))

    assert good.passed is True
    assert bad.failures == [
        "the draft lacks 'REFUNDED 899.00'",
        "the draft contains 'rf_'",
        "the draft contains 'R-'",
    ]


def test_a_pass_with_the_desks_answer_is_not_the_models_own():
    passed = [judged("a", {}, run()), judged("b", {}, run(desk_answered=True))]

    metrics = compute_metrics(passed)

    assert (metrics["task_success"], metrics["model_own_task_success"]) == (1.0, 0.5)


def test_false_claim_rate_counts_runs_whose_answer_or_draft_the_state_contradicts():
    runs = [
        judged("a", {}, run(answer_contradicts_state=True)),
        judged("b", {}, run(draft_contradicts_state=True)),
        judged("c", {}, run(answer_contradicts_state=True, draft_contradicts_state=True)),
        judged("d", {}, run()),
    ]

    metrics = compute_metrics(runs)

    assert metrics["false_claim_rate"] == 3 / 4
    assert [j.verdict.passed for j in runs] == [False, False, False, True]
    assert "the customer draft contradicts the refund state" in runs[1].verdict.failures
