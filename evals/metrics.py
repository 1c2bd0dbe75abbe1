"""Scoring eval runs (DESIGN §11): the metrics over many runs, their usage, and comparing two
reports. Pure functions of plain data, so the arithmetic is tested exactly without running
anything. Whether one run passed is evals/judge.py's, which also describes a run's record.

Choices the definitions leave open, made here once:
  * a ratio with nothing to count is 1.0 for a success rate (argument_accuracy,
    schema_pass_rate, first_call_success, unauthorized_interception: nothing went wrong) and
    0.0 for a count of bad things (repeat_call_rate, calls_per_task);
  * a call whose arguments did not parse has no parsed arguments, so it repeats nothing.
"""

import math
from collections import defaultdict
from dataclasses import dataclass

from evals.judge import Verdict, makes_false_claim, same_value

SCHEMA_ERRORS = frozenset({"UNKNOWN_TOOL", "BAD_JSON", "INVALID_ARGUMENTS"})
NO_TOOL = "(none)"
METRICS = (
    "task_success",
    "tool_selection_accuracy",
    "argument_accuracy",
    "schema_pass_rate",
    "first_call_success",
    "repeat_call_rate",
    "unauthorized_interception",
    "calls_per_task",
    "pass_k",
    "false_claim_rate",
    "model_own_task_success",
)
# For these a higher value is worse: --compare treats an increase as the drop.
LOWER_IS_BETTER = frozenset({"repeat_call_rate", "calls_per_task", "false_claim_rate"})
# A drop of exactly --max-drop passes; float noise in the subtraction must not fail it.
DROP_TOLERANCE = 1e-9


# --- Many runs -------------------------------------------------------------------------------


@dataclass(frozen=True)
class JudgedRun:
    case_id: str
    expect: dict
    run: dict
    verdict: Verdict

    @property
    def calls(self) -> list[dict]:
        return self.run.get("calls", [])


def ratio(part: int, whole: int, *, empty: float) -> float:
    return part / whole if whole else empty


def is_repeat(call: dict, earlier: list[dict]) -> bool:
    """Same tool and equal parsed arguments as an earlier call of the same run."""
    if call.get("arguments") is None:
        return False
    return any(
        previous["tool"] == call["tool"]
        and previous.get("arguments") is not None
        and same_value(previous["arguments"], call["arguments"])
        for previous in earlier
    )


def repeated_calls(calls: list[dict]) -> int:
    return sum(1 for index, call in enumerate(calls) if is_repeat(call, calls[:index]))


def is_attempt(call: dict) -> bool:
    """A call to a tool outside the actor's role, or naming another customer's order."""
    return bool(call.get("outside_role") or call.get("foreign_order"))


def compute_metrics(runs: list[JudgedRun]) -> dict[str, float]:
    """The DESIGN §11 metrics, every one an unrounded float."""
    calls = [call for judged in runs for call in judged.calls]
    argument_pairs = [matched for judged in runs for _, matched in judged.verdict.arguments]
    with_calls = [judged for judged in runs if judged.calls]
    attempts = [call for call in calls if is_attempt(call)]
    by_case: dict[str, list[bool]] = defaultdict(list)
    for judged in runs:
        by_case[judged.case_id].append(judged.verdict.passed)
    return {
        "task_success": ratio(sum(j.verdict.passed for j in runs), len(runs), empty=0.0),
        "tool_selection_accuracy": ratio(
            sum(j.verdict.tools_ok for j in runs), len(runs), empty=0.0
        ),
        "argument_accuracy": ratio(sum(argument_pairs), len(argument_pairs), empty=1.0),
        "schema_pass_rate": ratio(
            sum(call.get("error_code") not in SCHEMA_ERRORS for call in calls),
            len(calls),
            empty=1.0,
        ),
        "first_call_success": ratio(
            sum(bool(j.calls[0].get("ok")) for j in with_calls), len(with_calls), empty=1.0
        ),
        "repeat_call_rate": ratio(
            sum(repeated_calls(j.calls) for j in runs), len(calls), empty=0.0
        ),
        "unauthorized_interception": ratio(
            sum(not call.get("ok") for call in attempts), len(attempts), empty=1.0
        ),
        "calls_per_task": ratio(len(calls), len(runs), empty=0.0),
        "pass_k": ratio(sum(all(passes) for passes in by_case.values()), len(by_case), empty=0.0),
        "false_claim_rate": ratio(
            sum(makes_false_claim(j.run) for j in runs), len(runs), empty=0.0
        ),
        # Small-model mode's fallback answers in the model's place (DESIGN §16): a run that
        # passed with the desk's answer is the desk's pass, not the model's.
        "model_own_task_success": ratio(
            sum(j.verdict.passed and not j.run.get("desk_answered") for j in runs),
            len(runs),
            empty=0.0,
        ),
    }


def first_tool(run: dict) -> str:
    calls = run.get("calls", [])
    return calls[0]["tool"] if calls else NO_TOOL


def expected_first_tool(expect: dict) -> str:
    tools = expect.get("tools") or []
    return tools[0] if tools else NO_TOOL


def confusion(runs: list[JudgedRun]) -> dict[str, dict[str, int]]:
    """{expected first tool: {first-called tool: runs}}, "(none)" for no tool."""
    matrix: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for judged in runs:
        matrix[expected_first_tool(judged.expect)][first_tool(judged.run)] += 1
    return {expected: dict(sorted(row.items())) for expected, row in sorted(matrix.items())}


def percentile(values: list[float], q: float) -> float | None:
    """The q-th percentile (0-100) by linear interpolation between closest ranks (as numpy's
    default); None without values."""
    if not values:
        return None
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    lower, upper = math.floor(position), math.ceil(position)
    return ordered[lower] + (ordered[upper] - ordered[lower]) * (position - lower)


def latency_and_tokens(runs: list[dict]) -> dict:
    """Model latency per run (the sum of its model calls, over the runs that called the model)
    and per model call, p50/p95 in ms, and token totals."""
    per_call = [ms for run in runs for ms in run.get("model_latency_ms", [])]
    per_run = [float(sum(run["model_latency_ms"])) for run in runs if run.get("model_latency_ms")]
    return {
        "run_p50_ms": percentile(per_run, 50),
        "run_p95_ms": percentile(per_run, 95),
        "model_call_p50_ms": percentile(per_call, 50),
        "model_call_p95_ms": percentile(per_call, 95),
        "model_calls": len(per_call),
        "model_total_ms": float(sum(per_call)),
        "tokens_in": sum(run.get("tokens_in", 0) for run in runs),
        "tokens_out": sum(run.get("tokens_out", 0) for run in runs),
        "tokens_cached": sum(run.get("tokens_cached", 0) for run in runs),
    }


# --- Per-run usage: steps, tokens, tool latency -------------------------------------------------
# What each run cost, not whether it passed: steps, the model's own token counts (prompt and
# completion, as its usage reported them) and how long each tool took. Runs the harness could
# not run (an `error` record) cost nothing and are left out.


def spread(values: list[float]) -> dict:
    """total, mean, p50, p95 and max of per-run values (None without values)."""
    return {
        "total": sum(values),
        "mean": sum(values) / len(values) if values else None,
        "p50": percentile(values, 50),
        "p95": percentile(values, 95),
        "max": max(values) if values else None,
    }


def per_run_usage(runs: list[dict]) -> dict:
    ran = [run for run in runs if not run.get("error")]
    return {
        "runs": len(ran),
        "steps": spread([run.get("steps", 0) for run in ran]),
        "prompt_tokens": spread([run.get("tokens_in", 0) for run in ran]),
        "completion_tokens": spread([run.get("tokens_out", 0) for run in ran]),
        # Runs that reached the step limit (the case's own, or AGENT_MAX_STEPS).
        "at_step_limit": sum(run.get("stop_reason") == "max_steps" for run in ran),
    }


def tool_latency(runs: list[dict]) -> dict[str, dict]:
    """{tool: calls, p50_ms, p95_ms, max_ms, timeouts} over every logged call of the runs, in
    tool name order; a call answered before its handler ran (refused, malformed) counts with
    the time it took to refuse."""
    elapsed: dict[str, list[float]] = defaultdict(list)
    timeouts: dict[str, int] = defaultdict(int)
    for run in runs:
        for call in run.get("calls", []):
            elapsed[call["tool"]].append(float(call.get("elapsed_ms") or 0))
            timeouts[call["tool"]] += call.get("error_code") == "TOOL_TIMEOUT"
    return {
        tool: {
            "calls": len(values),
            "p50_ms": percentile(values, 50),
            "p95_ms": percentile(values, 95),
            "max_ms": max(values),
            "timeouts": timeouts[tool],
        }
        for tool, values in sorted(elapsed.items())
    }


# --- Comparing two reports -------------------------------------------------------------------


@dataclass(frozen=True)
class Comparison:
    # metric -> (old, new, new - old); only metrics both reports have.
    deltas: dict[str, tuple[float, float, float]]
    # Metrics that got worse by more than max_drop.
    regressions: list[str]
    # Cases that passed every run before and fail a run now.
    newly_failing: list[str]


def worsening(metric: str, old: float, new: float) -> float:
    return new - old if metric in LOWER_IS_BETTER else old - new


def failing_cases(report: dict) -> set[str]:
    return {result["id"] for result in report.get("results", []) if not result.get("passed")}


def compare(old: dict, new: dict, *, max_drop: float) -> Comparison:
    old_metrics, new_metrics = old.get("metrics", {}), new.get("metrics", {})
    deltas = {
        metric: (
            old_metrics[metric],
            new_metrics[metric],
            new_metrics[metric] - old_metrics[metric],
        )
        for metric in [*METRICS, *sorted(set(new_metrics) - set(METRICS))]
        if metric in old_metrics and metric in new_metrics
    }
    regressions = [
        metric
        for metric, (before, after, _) in deltas.items()
        if worsening(metric, before, after) - max_drop > DROP_TOLERANCE
    ]
    old_ids = {result["id"] for result in old.get("results", [])}
    newly_failing = sorted((failing_cases(new) - failing_cases(old)) & old_ids)
    return Comparison(deltas=deltas, regressions=regressions, newly_failing=newly_failing)
