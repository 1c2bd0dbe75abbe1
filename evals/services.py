"""Writes of the eval app: an EvalRun when the command starts, a result per case run as it
finishes (so a long eval shows its progress in admin), the metrics at the end."""

from datetime import datetime

from evals.models import EvalCaseResult, EvalRun


def eval_run_start(
    *,
    started_at: datetime,
    header: dict,
    cases_count: int,
) -> EvalRun:
    return EvalRun.objects.create(
        started_at=started_at,
        provider=header["provider"],
        model=header["model"],
        prompt_version=header["prompt_version"],
        tools_version=header["tools_version"],
        git_commit=header["git_commit"],
        cases_path=header["cases_path"],
        repeat=header["repeat"],
        concurrency=header["concurrency"],
        cases_count=cases_count,
    )


def eval_result_record(*, eval_run: EvalRun, result: dict) -> EvalCaseResult:
    return EvalCaseResult.objects.create(
        eval_run=eval_run,
        case_id=result["id"],
        repeat_index=result["repeat_index"],
        passed=result["passed"],
        tools_called=result["tools"],
        failures=result["failures"],
        answer=result["answer"],
        transcript={
            "message": result["message"],
            "calls": result["calls"],
            "refunds": result["refunds"],
            "answer": result["answer"],
        },
        first_tool="" if result["first_tool"] == "(none)" else result["first_tool"],
        latency_ms=round(result["latency_ms"]),
        tokens_in=result["tokens_in"],
        tokens_out=result["tokens_out"],
        error=result["error"],
    )


def eval_run_finish(*, eval_run: EvalRun, report: dict, finished_at: datetime) -> EvalRun:
    eval_run.finished_at = finished_at
    eval_run.metrics = report["metrics"]
    eval_run.report = report
    eval_run.latency_p50_ms = report["latency"]["run_p50_ms"]
    eval_run.latency_p95_ms = report["latency"]["run_p95_ms"]
    eval_run.tokens_in = report["tokens"]["in"]
    eval_run.tokens_out = report["tokens"]["out"]
    eval_run.save()
    return eval_run
