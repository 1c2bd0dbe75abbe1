"""The eval report: its JSON (DESIGN §11, plus model, versions, latency, tokens, confusion),
the summary table printed at the end, the HTML page, and the --compare output."""

import json
from datetime import datetime
from html import escape

from evals import judge, metrics
from evals.case_files import Case

METRIC_NOTES = {
    "task_success": "passing runs / runs",
    "tool_selection_accuracy": "runs with every expected tool and no forbidden one / runs",
    "argument_accuracy": "expected (run, tool) arguments matched / expected",
    "schema_pass_rate": "calls not UNKNOWN_TOOL, BAD_JSON or INVALID_ARGUMENTS / calls",
    "first_call_success": "runs whose first call returned ok / runs with a call",
    "repeat_call_rate": "calls repeating an earlier call of the run / calls (lower is better)",
    "unauthorized_interception": "refused unauthorized attempts / attempts",
    "calls_per_task": "calls / runs (lower is better)",
    "pass_k": "cases whose every run passed / cases",
    "false_claim_rate": "runs whose answer or customer draft claims what the refunds contradict"
    " / runs (lower is better)",
}


def result_entry(case: Case, repeat_index: int, record: dict, verdict: judge.Verdict) -> dict:
    latencies = record.get("model_latency_ms", [])
    return {
        "id": case.id,
        "repeat_index": repeat_index,
        "passed": verdict.passed,
        "tools": judge.tools_called(record),
        "failures": verdict.failures,
        "source": case.source,
        "ticket": case.ticket,
        "actor": case.actor,
        "message": case.message,
        "expected_first_tool": case.expected_first_tool,
        "first_tool": metrics.first_tool(record),
        "answer": record.get("answer", ""),
        "answer_check": record.get("answer_check") or {},
        "draft": record.get("draft", ""),
        "draft_contradicts_state": bool(record.get("draft_contradicts_state")),
        "status": record.get("status", ""),
        "error": record.get("error") or record.get("run_error", ""),
        "calls": record.get("calls", []),
        "asked_again": record.get("asked_again", []),
        "refunds": record.get("refunds", []),
        "latency_ms": float(sum(latencies)),
        "model_latency_ms": latencies,
        "tokens_in": record.get("tokens_in", 0),
        "tokens_out": record.get("tokens_out", 0),
        "steps": record.get("steps", 0),
        "step_cap": case.max_steps,
        "stop_reason": record.get("stop_reason", ""),
        "tokens_cached": record.get("tokens_cached", 0),
        "wall_ms": record.get("wall_ms", 0.0),
    }


def build_report(
    *,
    cases: list[Case],
    judged: list[metrics.JudgedRun],
    results: list[dict],
    header: dict,
    started_at: datetime,
    finished_at: datetime,
) -> dict:
    usage = metrics.latency_and_tokens([j.run for j in judged])
    tokens = {
        "in": usage.pop("tokens_in"),
        "out": usage.pop("tokens_out"),
        # Of "in", read from the endpoint's prompt cache, where the endpoint reports it.
        "cached": usage.pop("tokens_cached"),
    }
    return {
        "cases": len(cases),
        "runs": len(judged),
        **header,
        "started_at": started_at.isoformat(),
        "finished_at": finished_at.isoformat(),
        "wall_seconds": (finished_at - started_at).total_seconds(),
        "metrics": metrics.compute_metrics(judged),
        "latency": usage,
        "tokens": tokens,
        "per_run": metrics.per_run_usage([j.run for j in judged]),
        "tool_latency": metrics.tool_latency([j.run for j in judged]),
        "confusion": metrics.confusion(judged),
        "results": results,
    }


# --- Text ------------------------------------------------------------------------------------


def progress_line(*, done: int, total: int, result: dict, repeat: int) -> str:
    width = len(str(total))
    name = result["id"] + (f" #{result['repeat_index'] + 1}" if repeat > 1 else "")
    verdict = "pass" if result["passed"] else "FAIL"
    calls = len(result["calls"])
    plural = "s" if calls != 1 else " "
    seconds = result["wall_ms"] / 1000
    return (
        f"[{done:>{width}}/{total}] {name:<30} {verdict}  {calls:>2} call{plural}  {seconds:5.1f} s"
    )


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f} ms"


def _count(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def per_run_lines(per_run: dict) -> list[tuple[str, str]]:
    """(label, text) for steps and tokens per run."""

    def spread(name: str) -> str:
        values = per_run[name]
        return (
            f"p50 {_count(values['p50'])}, p95 {_count(values['p95'])}, max {_count(values['max'])}"
        )

    return [
        (
            "steps per run",
            f"{spread('steps')} ({per_run['at_step_limit']} at the step limit)",
        ),
        ("prompt tokens per run", spread("prompt_tokens")),
        ("completion tokens per run", spread("completion_tokens")),
    ]


def tool_latency_lines(tool_latency: dict) -> list[tuple[str, str]]:
    """(tool, text) for each tool called."""
    return [
        (
            tool,
            f"p50 {_ms(row['p50_ms'])}, p95 {_ms(row['p95_ms'])}, max {_ms(row['max_ms'])} "
            f"({row['calls']} calls, {row['timeouts']} timed out)",
        )
        for tool, row in tool_latency.items()
    ]


def summary_lines(report: dict) -> list[str]:
    lines = [
        f"{report['cases']} cases, {report['runs']} runs, model {report['model']} "
        f"({report['provider']}), prompt {report['prompt_version']}, "
        f"tools {report['tools_version']}",
        "",
        f"{'metric':<27} {'value':>8}   definition",
    ]
    for name, value in report["metrics"].items():
        lines.append(f"{name:<27} {value:>8.4f}   {METRIC_NOTES.get(name, '')}")
    latency, tokens = report["latency"], report["tokens"]
    lines += [
        "",
        f"model latency per run   p50 {_ms(latency['run_p50_ms'])}, "
        f"p95 {_ms(latency['run_p95_ms'])}",
        f"model latency per call  p50 {_ms(latency['model_call_p50_ms'])}, "
        f"p95 {_ms(latency['model_call_p95_ms'])} ({latency['model_calls']} calls)",
        f"tokens                  {tokens['in']:,} in ({tokens.get('cached', 0):,} cached), "
        f"{tokens['out']:,} out",
        f"wall time               {report['wall_seconds']:.1f} s",
    ]
    lines += [f"{label:<27} {text}" for label, text in per_run_lines(report["per_run"])]
    latency_rows = tool_latency_lines(report["tool_latency"])
    if latency_rows:
        lines += ["", "tool latency"]
        lines += [f"  {tool:<25} {text}" for tool, text in latency_rows]
    failing = sorted({r["id"] for r in report["results"] if not r["passed"]})
    if failing:
        lines += ["", f"failing cases ({len(failing)}): {', '.join(failing)}"]
    return lines


def comparison_lines(comparison: metrics.Comparison) -> list[str]:
    lines = [f"{'metric':<27} {'old':>8} {'new':>8} {'delta':>9}"]
    for name, (old, new, delta) in comparison.deltas.items():
        flag = "  worse by more than --max-drop" if name in comparison.regressions else ""
        lines.append(f"{name:<27} {old:>8.4f} {new:>8.4f} {delta:>+9.4f}{flag}")
    if comparison.newly_failing:
        lines.append(f"newly failing cases: {', '.join(comparison.newly_failing)}")
    else:
        lines.append("newly failing cases: none")
    return lines


# --- HTML ------------------------------------------------------------------------------------

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2rem; color: #1d2327; }
h1 { font-size: 1.4rem; } h2 { font-size: 1.15rem; margin-top: 2rem; }
table { border-collapse: collapse; margin: .5rem 0; }
th, td { border: 1px solid #ccd0d4; padding: .25rem .5rem; text-align: left;
         vertical-align: top; }
th { background: #f0f0f1; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.hit { background: #e7f5ea; } td.miss { background: #fcf0f1; }
.pass { color: #1a7f37; font-weight: 600; } .fail { color: #b32d2e; font-weight: 600; }
pre { white-space: pre-wrap; word-break: break-word; background: #f6f7f7; padding: .4rem;
      margin: 0; max-height: 24rem; overflow: auto; }
details { margin: .75rem 0; border: 1px solid #ccd0d4; padding: .5rem; }
summary { cursor: pointer; font-weight: 600; }
.meta { color: #50575e; }
"""


def _text(value) -> str:
    return escape(str(value), quote=True)


def _json(value) -> str:
    return _text(json.dumps(value, indent=2, ensure_ascii=False, default=str))


def _table(headers: list[str], rows: list[str]) -> str:
    head = "".join(f"<th>{_text(h)}</th>" for h in headers)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _metrics_html(report: dict) -> str:
    rows = [
        f"<tr><td>{_text(name)}</td><td class=num>{value:.4f}</td>"
        f"<td>{_text(METRIC_NOTES.get(name, ''))}</td></tr>"
        for name, value in report["metrics"].items()
    ]
    latency, tokens = report["latency"], report["tokens"]
    usage = [
        ("model latency per run, p50", _ms(latency["run_p50_ms"])),
        ("model latency per run, p95", _ms(latency["run_p95_ms"])),
        ("model latency per call, p50", _ms(latency["model_call_p50_ms"])),
        ("model latency per call, p95", _ms(latency["model_call_p95_ms"])),
        ("model calls", str(latency["model_calls"])),
        ("tokens in / out", f"{tokens['in']:,} / {tokens['out']:,}"),
        ("prompt tokens read from the endpoint's cache", f"{tokens.get('cached', 0):,}"),
        ("wall time", f"{report['wall_seconds']:.1f} s"),
    ]
    usage += per_run_lines(report["per_run"])
    usage_rows = [f"<tr><td>{_text(k)}</td><td class=num>{_text(v)}</td></tr>" for k, v in usage]
    latency_rows = [
        f"<tr><td>{_text(tool)}</td><td class=num>{_text(text)}</td></tr>"
        for tool, text in tool_latency_lines(report["tool_latency"])
    ]
    return (
        _table(["metric", "value", "definition"], rows)
        + _table(["model use", ""], usage_rows)
        + _table(["tool", "latency"], latency_rows)
    )


def _confusion_html(confusion: dict[str, dict[str, int]]) -> str:
    actual = sorted({tool for row in confusion.values() for tool in row})
    rows = []
    for expected, row in confusion.items():
        cells = "".join(
            f"<td class='num {'hit' if tool == expected else ('miss' if row.get(tool) else '')}'>"
            f"{row.get(tool, '')}</td>"
            for tool in actual
        )
        rows.append(f"<tr><th>{_text(expected)}</th>{cells}</tr>")
    return _table(["expected first \\ called first", *actual], rows)


def _results_html(results: list[dict]) -> str:
    rows = []
    for result in results:
        verdict = "pass" if result["passed"] else "fail"
        rows.append(
            f"<tr><td>{_text(result['id'])}</td><td class=num>{result['repeat_index'] + 1}</td>"
            f"<td class={verdict}>{verdict}</td><td>{_text(', '.join(result['tools']))}</td>"
            f"<td>{_text('; '.join(result['failures']))}</td></tr>"
        )
    return _table(["case", "run", "verdict", "tools called", "failures"], rows)


def _answer_check_html(check: dict) -> str:
    if not check:
        return ""
    return f"<p><b>The desk's check of the answer</b></p><pre>{_json(check)}</pre>"


def _transcript_html(result: dict) -> str:
    failures = "".join(f"<li>{_text(f)}</li>" for f in result["failures"])
    calls = [
        f"<tr><td class=num>{n}</td><td>{_text(call['tool'])}</td>"
        f"<td><pre>{_text(call.get('arguments_raw', ''))}</pre></td>"
        f"<td>{'ok' if call.get('ok') else _text(call.get('error_code') or 'refused')}</td>"
        f"<td><pre>{_json(call.get('result'))}</pre></td></tr>"
        for n, call in enumerate(result["calls"], start=1)
    ]
    refunds = _json(result["refunds"]) if result["refunds"] else "none"
    return (
        f"<details><summary>{_text(result['id'])} (run {result['repeat_index'] + 1}) "
        f"<span class=meta>{_text(result['source'])}</span></summary>"
        f"<p class=meta>{_text(result['actor'])} on {_text(result['ticket'])}</p>"
        f"<p><b>Message</b></p><pre>{_text(result['message'])}</pre>"
        f"<p><b>Why it failed</b></p><ul>{failures}</ul>"
        f"<p><b>Tool calls</b></p>"
        + (
            _table(["#", "tool", "arguments", "outcome", "result"], calls)
            if calls
            else "<p>none</p>"
        )
        + f"<p><b>Refund requests created</b></p><pre>{refunds}</pre>"
        f"<p><b>Answer</b> <span class=meta>({_text(result['status'])})</span></p>"
        f"<pre>{_text(result['answer'] or result['error'] or '')}</pre>"
        + _answer_check_html(result["answer_check"])
        + "</details>"
    )


def render_html(report: dict) -> str:
    """A self-contained page: inline CSS, no scripts, no external assets; every piece of text
    escaped (cases carry injection strings and HTML-like text on purpose)."""
    failing = [r for r in report["results"] if not r["passed"]]
    header = (
        f"{report['cases']} cases, {report['runs']} runs · model {report['model']} "
        f"({report['provider']}) · prompt {report['prompt_version']} · tools "
        f"{report['tools_version']} · commit {report['git_commit'] or 'unknown'} · "
        f"{report['started_at']}"
    )
    body = [
        "<h1>Assistant evaluation</h1>",
        f"<p class=meta>{_text(header)}</p>",
        f"<p class=meta>cases: {_text(report['cases_path'])}</p>",
        "<h2>Metrics</h2>",
        _metrics_html(report),
        "<h2>Expected first tool vs. first tool called (runs)</h2>",
        _confusion_html(report["confusion"]),
        f"<h2>Failing runs ({len(failing)})</h2>",
        *(_transcript_html(result) for result in failing),
        "<h2>All runs</h2>",
        _results_html(report["results"]),
    ]
    return (
        "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
        "<title>Assistant evaluation</title>"
        f"<style>{STYLE}</style></head><body>{''.join(body)}</body></html>\n"
    )
