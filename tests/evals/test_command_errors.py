"""eval_agent refuses what it cannot run with a message that says where and what, before any
case runs (nothing is stored, no report is written)."""

import json

import pytest
from django.core.management.base import CommandError

from evals.models import EvalRun
from tests.evals.cases import case, run_eval, write_cases

pytestmark = pytest.mark.django_db

GOOD = case("mug-paid", "What did the customer pay?", tools=["get_order"])


def refused(tmp_path, *args: str) -> str:
    out = tmp_path / "report.json"
    with pytest.raises(CommandError) as raised:
        run_eval(*args, "--out", str(out))
    assert not out.exists()
    assert EvalRun.objects.count() == 0
    return str(raised.value)


def test_a_missing_cases_path_is_refused(tmp_path):
    missing = tmp_path / "nowhere.jsonl"

    assert refused(tmp_path, "--cases", str(missing)) == f"{missing}: no such file or folder"


def test_a_folder_without_case_files_is_refused(tmp_path):
    assert refused(tmp_path, "--cases", str(tmp_path)) == (
        f"{tmp_path}: no *.jsonl case files in this folder"
    )


def test_a_line_that_is_not_json_is_named_by_file_and_line(tmp_path):
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps(GOOD) + "\n\n" + '{"id": "broken",\n', encoding="utf-8")

    message = refused(tmp_path, "--cases", str(cases))

    assert message.startswith(f"{cases}:3: not JSON: ")


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (
            {"ticket": "TCK-9999"},
            "unknown ticket 'TCK-9999' (demo tickets: TCK-1001, TCK-1002, TCK-1003, TCK-1004)",
        ),
        (
            {"actor": "reviewer"},
            "unknown actor 'reviewer' (demo users who run the assistant: agent, agent2, "
            "intern, supervisor)",
        ),
        ({"message": ""}, "'message' must be a non-empty string"),
        ({"expect": []}, "'expect' must be an object"),
        (
            {"expect": {"tools": ["get_orders"]}},
            "expect.tools names unknown tools ['get_orders'] (tools: get_order, "
            "list_customer_orders, search_policies, get_refund_status, read_tool_result, "
            "create_refund)",
        ),
        (
            {"expect": {"refund": {"status": "pending_approval"}}},
            "expect.refund.amount is required",
        ),
        (
            {"expect": {"args": {"create_refund": {"amount": "lots"}}}},
            "expect.args.create_refund.amount must be an amount such as \"129.00\", not 'lots'",
        ),
        (
            {"setup": [{"kind": "order_note", "order_id": "1", "note": "x"}]},
            "case 'second': setup step 1: unknown order '1' (demo orders: 202609020031, "
            "202610110087, 202610150012, 202610180099, 202610200456, 202610220314, "
            "202610250777, 202610280001)",
        ),
        (
            {"setup": [{"kind": "refund", "order_id": "202610110087", "amount": "5.00"}]},
            "case 'second': setup step 1 (refund) lacks ['reason', 'status']",
        ),
        (
            {"setup": [{"kind": "weather"}]},
            "case 'second': setup step 1: unknown kind 'weather' (kinds: customer_message, "
            "customer_name, order_currency, order_note, refund, role_limits, tool_timeout)",
        ),
    ],
)
def test_a_case_that_cannot_run_is_named_by_file_line_and_problem(tmp_path, change, problem):
    cases = write_cases(tmp_path / "cases.jsonl", [GOOD, {**GOOD, "id": "second", **change}])

    assert refused(tmp_path, "--cases", str(cases)) == f"{cases}:2: {problem}"


def test_a_case_id_used_twice_is_refused(tmp_path):
    cases = write_cases(tmp_path / "cases.jsonl", [GOOD, GOOD])

    assert refused(tmp_path, "--cases", str(cases)) == (
        f"{cases}:2: case id 'mug-paid' is already used at {cases}:1"
    )


# --- Setup steps, the step cap and the offline gap: the problem names the file and the case ---

MUG_REFUND = {
    "kind": "refund",
    "order_id": "202610110087",
    "amount": "129.00",
    "status": "rejected",
    "reason": "damaged",
}


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (
            {"setup": [{**MUG_REFUND, "colour": "red"}]},
            "setup step 1 (refund): unknown keys ['colour'] (known: ['amount', 'explanation', "
            "'note', 'order_id', 'reason', 'requested_by', 'status'])",
        ),
        (
            {"setup": [{**MUG_REFUND, "status": "refunded"}]},
            "setup step 1.status must be one of succeeded, pending_approval, rejected, "
            "withdrawn, outcome_unknown, provider_pending, not 'refunded'",
        ),
        (
            {"setup": [{**MUG_REFUND, "status": "succeeded", "note": "why"}]},
            "setup step 1.note is the reviewer's or the withdrawer's note: only for a rejected "
            "or withdrawn refund",
        ),
        (
            {"setup": [{**MUG_REFUND, "note": 7}]},
            "setup step 1.note must be a string",
        ),
        (
            {
                "setup": [
                    {
                        "kind": "order_currency",
                        "order_id": "202610110087",
                        "currency": "yen",
                        "amount_paid": "2600",
                    }
                ]
            },
            "setup step 1.currency must be a currency code such as \"JPY\", not 'yen'",
        ),
        (
            {
                "setup": [
                    {
                        "kind": "order_currency",
                        "order_id": "202610110087",
                        "currency": "JPY",
                        "amount_paid": "2600.50",
                    }
                ]
            },
            "setup step 1.amount_paid 2600.50 has more decimal places than JPY amounts can "
            "have (0)",
        ),
        (
            {
                "setup": [
                    {
                        "kind": "order_currency",
                        "order_id": "202610110087",
                        "currency": "USD",
                        "amount_paid": 19,
                    }
                ]
            },
            'setup step 1.amount_paid must be an amount string such as "129.00", not 19',
        ),
        (
            {"setup": [{"kind": "role_limits", "currency": "JPY", "limits": {"boss": "1"}}]},
            "setup step 1.limits names unknown roles ['boss'] (roles: intern, agent, supervisor)",
        ),
        (
            {"setup": [{"kind": "role_limits", "currency": "JPY", "limits": {}}]},
            'setup step 1.limits must map roles to amounts, like {"agent": "50000.00"}',
        ),
        (
            {"setup": [{"kind": "role_limits", "currency": "JPY", "limits": {"agent": "-1"}}]},
            "setup step 1.limits.agent must be zero or more",
        ),
        (
            {"setup": [{"kind": "tool_timeout", "tool": "get_orders"}]},
            "setup step 1.tool: unknown tool 'get_orders' (tools: get_order, "
            "list_customer_orders, search_policies, get_refund_status, read_tool_result, "
            "create_refund)",
        ),
        (
            {"setup": [{"kind": "tool_timeout", "tool": "get_order", "timeout_s": 0}]},
            "setup step 1.timeout_s must be a number of seconds above 0 and at most 30, not 0",
        ),
        (
            {"setup": [{"kind": "tool_timeout", "tool": "get_order", "timeout_s": True}]},
            "setup step 1.timeout_s must be a number of seconds above 0 and at most 30, not True",
        ),
        (
            {"setup": [{"kind": "tool_timeout", "tool": "get_order", "after": 3}]},
            "setup step 1 (tool_timeout): unknown keys ['after'] (known: ['timeout_s', 'tool'])",
        ),
        ({"max_steps": 0}, "'max_steps' must be a whole number from 1 to 20, not 0"),
        ({"max_steps": "3"}, "'max_steps' must be a whole number from 1 to 20, not '3'"),
        ({"max_steps": True}, "'max_steps' must be a whole number from 1 to 20, not True"),
        ({"max_steps": 21}, "'max_steps' must be a whole number from 1 to 20, not 21"),
        (
            {"offline_gap": " "},
            "'offline_gap' must say in a non-empty string what the offline planner does not do yet",
        ),
    ],
)
def test_a_bad_setup_step_or_step_cap_is_named_by_file_line_and_case(tmp_path, change, problem):
    cases = write_cases(tmp_path / "cases.jsonl", [GOOD, {**GOOD, "id": "second", **change}])

    assert refused(tmp_path, "--cases", str(cases)) == f"{cases}:2: case 'second': {problem}"


def test_skipping_the_offline_gaps_of_a_file_that_has_nothing_else_is_refused(tmp_path):
    cases = write_cases(tmp_path / "cases.jsonl", [{**GOOD, "offline_gap": "all of it"}])

    assert refused(tmp_path, "--cases", str(cases), "--skip-offline-gaps") == (
        "every case is marked offline_gap: nothing to run"
    )


def test_a_report_to_compare_with_that_cannot_be_read_is_refused_before_running(tmp_path):
    cases = write_cases(tmp_path / "cases.jsonl", [GOOD])
    not_json = tmp_path / "old.json"
    not_json.write_text("<html>", encoding="utf-8")
    not_a_report = tmp_path / "list.json"
    not_a_report.write_text("[1, 2]", encoding="utf-8")

    assert refused(tmp_path, "--cases", str(cases), "--compare", str(tmp_path / "gone.json")) == (
        f"--compare {tmp_path / 'gone.json'}: cannot read it (No such file or directory)"
    )
    assert refused(tmp_path, "--cases", str(cases), "--compare", str(not_json)).startswith(
        f"--compare {not_json}: not a JSON report ("
    )
    assert refused(tmp_path, "--cases", str(cases), "--compare", str(not_a_report)) == (
        f'--compare {not_a_report}: not an eval report (no "metrics" object)'
    )


def test_a_subset_naming_no_case_is_refused(tmp_path):
    cases = write_cases(tmp_path / "cases.jsonl", [GOOD])
    subset = tmp_path / "subset.txt"
    subset.write_text("# the fixed subset\nmug-paid\nno-such-case\n", encoding="utf-8")

    message = refused(tmp_path, "--cases", str(cases), "--subset", str(subset))

    assert message == f"--subset {subset}: no such case: no-such-case"


def test_the_small_model_subset_names_cases_of_the_set_covering_every_tag():
    from pathlib import Path

    from django.conf import settings

    from evals.case_files import load_cases
    from evals.management.commands.eval_agent import select_subset

    root = Path(settings.BASE_DIR) / "evals"
    every = load_cases(root / "cases")
    chosen = select_subset(every, str(root / "subsets" / "small-model.txt"))
    tags = {
        (key, value)
        for case in every
        for key, values in case_tags(root / "cases", case.id).items()
        for value in (values if isinstance(values, list) else [values])
    }
    covered = {
        (key, value)
        for case in chosen
        for key, values in case_tags(root / "cases", case.id).items()
        for value in (values if isinstance(values, list) else [values])
    }
    assert len(chosen) >= 40
    assert covered == tags


def case_tags(folder, case_id: str) -> dict:
    for path in sorted(folder.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip() and json.loads(line)["id"] == case_id:
                return json.loads(line)["tags"]
    raise KeyError(case_id)
