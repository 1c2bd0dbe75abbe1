"""Eval runs in admin: listed with their model, versions and main metrics, each with its case
results; a measurement nobody can add, change or delete."""

from datetime import UTC, datetime

import pytest

from evals.models import EvalCaseResult, EvalRun

pytestmark = pytest.mark.django_db


@pytest.fixture
def stored_eval():
    eval_run = EvalRun.objects.create(
        started_at=datetime(2026, 11, 30, 9, 0, tzinfo=UTC),
        finished_at=datetime(2026, 11, 30, 9, 5, tzinfo=UTC),
        provider="openai",
        model="qwen2.5-1.5b-instruct",
        prompt_version="desk-2026.11-4",
        tools_version="cd628f2ad9c1",
        cases_path="evals/cases",
        cases_count=2,
        metrics={"task_success": 0.5, "tool_selection_accuracy": 0.75, "pass_k": 0.5},
    )
    EvalCaseResult.objects.create(
        eval_run=eval_run,
        case_id="mug-damaged",
        passed=False,
        tools_called=["get_order"],
        failures=["missing tool call: create_refund"],
        transcript={"calls": [{"tool": "get_order", "arguments": {"order_id": "202610110087"}}]},
        first_tool="get_order",
    )
    return eval_run


def test_it_lists_runs_with_model_versions_and_metrics(admin_client, stored_eval):
    response = admin_client.get("/admin/evals/evalrun/")

    html = response.content.decode()
    assert response.status_code == 200
    assert list(response.context["cl"].result_list) == [stored_eval]
    for shown in ("qwen2.5-1.5b-instruct", "desk-2026.11-4", "cd628f2ad9c1", "0.5000", "0.7500"):
        assert shown in html


def test_it_shows_a_run_with_its_case_results(admin_client, stored_eval):
    response = admin_client.get(f"/admin/evals/evalrun/{stored_eval.pk}/change/")

    html = response.content.decode()
    assert response.status_code == 200
    assert "mug-damaged" in html
    assert "missing tool call: create_refund" in html
    assert "&quot;task_success&quot;: 0.5" in html


def test_nobody_adds_changes_or_deletes_an_eval_run_or_result(admin_client, stored_eval):
    result = stored_eval.results.get()

    responses = [
        admin_client.get("/admin/evals/evalrun/add/"),
        admin_client.post(f"/admin/evals/evalrun/{stored_eval.pk}/change/", {"model": "x"}),
        admin_client.post(f"/admin/evals/evalrun/{stored_eval.pk}/delete/", {"post": "yes"}),
        admin_client.get("/admin/evals/evalcaseresult/add/"),
        admin_client.post(f"/admin/evals/evalcaseresult/{result.pk}/change/", {"passed": "on"}),
        admin_client.post(f"/admin/evals/evalcaseresult/{result.pk}/delete/", {"post": "yes"}),
    ]

    assert [r.status_code for r in responses] == [403] * 6
    stored_eval.refresh_from_db()
    result.refresh_from_db()
    assert (stored_eval.model, result.passed) == ("qwen2.5-1.5b-instruct", False)
    assert EvalCaseResult.objects.count() == 1
