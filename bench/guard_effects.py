"""What each guard and small-model piece did, from eval_agent reports of the same cases.

Run the cases once with everything on and once per configuration to compare (each with
`--without NAME`, evals/ablation.py), then:

    .venv/bin/python bench/guard_effects.py all.json without-new.json [more.json ...]

It prints, per report, the headline metrics and latency side by side (on the cases every
report ran, so that a report cut short still compares like with like), the cases whose
outcome differs from the first report's, and how often each guard fired in each report:
create_refund refusals by code, answers sent back by reason; and what small-model mode's
"records" piece did: how many answers carry the block, and which cases pass only with it. The
block is the desk's own text under the model's answer, which the model never sees, so the same
runs without it are the answers cut there, judged again by the cases' answer checks (read from
the report's cases_path). No database needed.
"""

import json
import re
import sys
from collections import Counter
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BASE_DIR))

from evals.judge import answer_failures  # noqa: E402 (after the repository is on the path)

METRICS = (
    "task_success",
    "tool_selection_accuracy",
    "argument_accuracy",
    "unauthorized_interception",
    "false_claim_rate",
    "calls_per_task",
)
GUARD_CODES = ("LOOKUP_REQUIRED", "AGENT_REQUEST_REQUIRED", "AMOUNT_UNCLEAR", "REASON_UNCLEAR")
# As agent/runtime/records.py heads the block (tests/evals/test_guard_effects.py keeps them equal).
RECORDS_HEADING = "From the records of this run:"
SENT_BACK = (
    ("proposal claimed, none made", re.compile(r"no create_refund call of this run succeeded")),
    ("order facts no tool showed", re.compile(r"states facts about order")),
    ("refund claim the records contradict", re.compile(r"is not what the records say")),
    ("not an answer (empty, markup, call as text)", re.compile(r"\((?:it was|it carried)")),
)


def load(path: str) -> dict:
    report = json.loads(Path(path).read_text())
    report["name"] = Path(path).stem
    return report


def label(report: dict) -> str:
    left_out = report.get("without") or []
    return f"{report['name']} (without {', '.join(left_out)})" if left_out else report["name"]


def shared_cases(reports: list[dict]) -> list[str]:
    ids = [{result["id"] for result in report["results"]} for report in reports]
    common = set.intersection(*ids)
    return [result["id"] for result in reports[0]["results"] if result["id"] in common]


def rate(values: list[bool]) -> str:
    return f"{sum(values) / len(values):.2f}" if values else "-"


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else 0.0


def metric(report: dict, name: str) -> str:
    """A report-wide metric; "-" for a report cut short, which has none."""
    value = report.get("metrics", {}).get(name)
    return "-" if value is None else f"{value:.2f}"


def row(report: dict, cases: list[str]) -> list[str]:
    results = [r for r in report["results"] if r["id"] in cases]
    latencies = [r["latency_ms"] / 1000 for r in results]
    passed = rate([r["passed"] for r in results])
    calls = sum(len(r["calls"]) for r in results) / max(len(results), 1)
    return [
        label(report),
        f"{passed} ({sum(r['passed'] for r in results)}/{len(results)})",
        metric(report, "unauthorized_interception"),
        metric(report, "false_claim_rate"),
        f"{calls:.2f}",
        f"{percentile(latencies, 0.5):.0f} s / {percentile(latencies, 0.95):.0f} s",
    ]


def fired(report: dict, cases: list[str]) -> Counter:
    counts: Counter = Counter()
    for result in report["results"]:
        if result["id"] not in cases:
            continue
        for call in result["calls"]:
            if call.get("error_code") in GUARD_CODES:
                counts[call["error_code"]] += 1
        for note in result.get("asked_again", []):
            reason = next((name for name, words in SENT_BACK if words.search(note)), "other")
            counts[f"sent back: {reason}"] += 1
    return counts


def expectations(report: dict) -> dict[str, dict]:
    """Each case's `expect`, by id, from the .jsonl files the report ran."""
    path = BASE_DIR / report["cases_path"]  # as given when absolute
    files = sorted(path.glob("*.jsonl")) if path.is_dir() else [path]
    lines = (line for file in files for line in file.read_text().splitlines() if line.strip())
    return {case["id"]: case["expect"] for case in map(json.loads, lines)}


def records_effect(report: dict, cases: list[str]) -> tuple[int, list[str]]:
    """How many answers carry the records block, and the cases that pass only with it."""
    carried, only_with = 0, []
    expect = expectations(report)
    for result in report["results"]:
        answer = result.get("answer") or ""
        if result["id"] not in cases or RECORDS_HEADING not in answer:
            continue
        carried += 1
        cut = {"answer": answer.split(RECORDS_HEADING)[0]}
        if result["passed"] and answer_failures(expect[result["id"]], cut):
            only_with.append(result["id"])
    return carried, only_with


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join([*lines, *("| " + " | ".join(r) + " |" for r in rows)])


def main(paths: list[str]) -> int:
    if not paths:
        print(__doc__)
        return 2
    reports = [load(path) for path in paths]
    cases = shared_cases(reports)
    print(f"{len(cases)} cases every report ran\n")
    header = [
        "configuration",
        "task success",
        "unauth. interception*",
        "false claims*",
        "calls/run",
        "run p50 / p95",
    ]
    print(table(header, [row(report, cases) for report in reports]))
    print("\n* over each report's whole run\n")
    first = {r["id"]: r["passed"] for r in reports[0]["results"]}
    for report in reports[1:]:
        other = {r["id"]: r["passed"] for r in report["results"]}
        lost = [case for case in cases if first[case] and not other[case]]
        won = [case for case in cases if other[case] and not first[case]]
        print(f"{label(report)}: passes {len(won)} the first fails, fails {len(lost)} it passes")
        print(f"  passes only here: {', '.join(won) or '-'}")
        print(f"  fails only here:  {', '.join(lost) or '-'}")
    for report in reports:
        carried, only_with = records_effect(report, cases)
        if carried:
            print(f"{label(report)}: the records block under {carried} answers; passes only")
            print(f"  with it {len(only_with)}: {', '.join(only_with) or '-'}")
    names = sorted({name for report in reports for name in fired(report, cases)})
    if names:
        print()
        counts = [fired(report, cases) for report in reports]
        print(
            table(
                ["guard fired", *(label(r) for r in reports)],
                [[name, *(str(c[name]) for c in counts)] for name in names],
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
