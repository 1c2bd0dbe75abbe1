"""What each run cost, in the eval report (JSON, text, HTML): steps, prompt and completion
tokens as the model's usage reported them, and each tool's latency."""

import pytest

from evals.judge import judge, step_cap_failures
from evals.metrics import per_run_usage, tool_latency
from tests.evals.cases import MUG, case, run_eval, write_cases
from tests.fakes.openai_server import text_reply, tool_call, tool_reply


def call(tool, elapsed_ms, error_code=""):
    return {"tool": tool, "arguments": {}, "ok": not error_code, "error_code": error_code,
            "elapsed_ms": elapsed_ms}  # fmt: skip


def record(*calls, steps=2, tokens_in=0, tokens_out=0, stop_reason="final_answer", **more):
    return {
        "status": "completed",
        "answer": "Done.",
        "calls": list(calls),
        "steps": steps,
        "tokens_in": tokens_in,
        "tokens_out": tokens_out,
        "stop_reason": stop_reason,
        **more,
    }


def test_per_run_usage_spreads_steps_and_tokens_over_the_runs_that_ran():
    runs = [
        record(steps=1, tokens_in=100, tokens_out=10),
        record(steps=2, tokens_in=300, tokens_out=30),
        record(steps=6, tokens_in=800, tokens_out=50, stop_reason="max_steps"),
        # The harness could not run this one: it cost nothing and is not a run's usage.
        {"error": "setup step 1 (refund): no order 1"},
    ]

    usage = per_run_usage(runs)

    assert usage == {
        "runs": 3,
        "steps": {"total": 9, "mean": 3.0, "p50": 2, "p95": 5.6, "max": 6},
        "prompt_tokens": {"total": 1200, "mean": 400.0, "p50": 300, "p95": 750.0, "max": 800},
        "completion_tokens": {"total": 90, "mean": 30.0, "p50": 30, "p95": 48.0, "max": 50},
        "at_step_limit": 1,
    }


def test_per_run_usage_of_no_run():
    assert per_run_usage([]) == {
        "runs": 0,
        "steps": {"total": 0, "mean": None, "p50": None, "p95": None, "max": None},
        "prompt_tokens": {"total": 0, "mean": None, "p50": None, "p95": None, "max": None},
        "completion_tokens": {"total": 0, "mean": None, "p50": None, "p95": None, "max": None},
        "at_step_limit": 0,
    }


def test_tool_latency_is_per_tool_with_its_timeouts():
    runs = [
        record(call("get_order", 10), call("get_refund_status", 2000, "TOOL_TIMEOUT")),
        record(call("get_order", 30), call("get_order", 20)),
    ]

    assert tool_latency(runs) == {
        "get_order": {"calls": 3, "p50_ms": 20.0, "p95_ms": 29.0, "max_ms": 30.0, "timeouts": 0},
        "get_refund_status": {
            "calls": 1,
            "p50_ms": 2000.0,
            "p95_ms": 2000.0,
            "max_ms": 2000.0,
            "timeouts": 1,
        },
    }


def test_only_a_run_stopped_at_the_cases_own_step_cap_fails_for_it():
    capped = record(stop_reason="max_steps", step_cap=3)

    assert step_cap_failures(capped) == [
        "the run reached the case's step cap (3 steps) before it answered"
    ]
    assert judge({}, capped).passed is False
    # Without a cap of its own, AGENT_MAX_STEPS stopping the run is not the case's failure.
    assert step_cap_failures(record(stop_reason="max_steps", step_cap=None)) == []
    assert step_cap_failures(record(stop_reason="final_answer", step_cap=3)) == []


@pytest.mark.django_db
def test_the_report_has_each_runs_tokens_steps_and_tool_latency(fake_openai, tmp_path):
    fake_openai.enqueue(
        tool_reply(
            tool_call("get_order", {"order_id": MUG}), prompt_tokens=1000, completion_tokens=40
        ),
        text_reply("The mug cost 129.00.", prompt_tokens=1500, completion_tokens=60),
        text_reply("Nothing to look up.", prompt_tokens=700, completion_tokens=20),
    )
    cases = write_cases(
        tmp_path / "cases.jsonl",
        [
            case("lookup", "What did she pay?", tools=["get_order"]),
            case("chat", "Say hello."),
        ],
    )
    html = tmp_path / "r.html"

    output, report = run_eval(
        "--cases", str(cases), "--out", str(tmp_path / "r.json"), "--html", str(html)
    )

    lookup, chat = report["results"]
    assert (lookup["tokens_in"], lookup["tokens_out"], lookup["steps"]) == (2500, 100, 2)
    assert (chat["tokens_in"], chat["tokens_out"], chat["steps"]) == (700, 20, 1)
    assert report["per_run"]["prompt_tokens"] == {
        "total": 3200,
        "mean": 1600.0,
        "p50": 1600.0,
        "p95": 2410.0,
        "max": 2500,
    }
    assert report["per_run"]["completion_tokens"]["total"] == 120
    assert report["per_run"]["steps"]["total"] == 3
    (order_call,) = lookup["calls"]
    assert report["tool_latency"] == {
        "get_order": {
            "calls": 1,
            "p50_ms": float(order_call["elapsed_ms"]),
            "p95_ms": float(order_call["elapsed_ms"]),
            "max_ms": float(order_call["elapsed_ms"]),
            "timeouts": 0,
        }
    }
    assert "steps per run               p50 2, p95 2, max 2 (0 at the step limit)" in output
    assert "prompt tokens per run       p50 1,600, p95 2,410, max 2,500" in output
    assert "completion tokens per run   p50 60, p95 96, max 100" in output
    assert "  get_order                 p50 " in output
    page = html.read_text(encoding="utf-8")
    assert "prompt tokens per run" in page
    assert "<td>get_order</td>" in page
