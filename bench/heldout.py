"""Every rule that reads language, scored on the tuning set and on the held-out set side by side
(DESIGN §18): the assistant's cases (`evals/cases/` against `evals/heldout/planner.jsonl`) and,
when a claim check bench is given, the claim check's replies.

    .venv/bin/python bench/heldout.py                      # the configured provider, both sets
    .venv/bin/python bench/heldout.py --reports tuning.json heldout.json   # score reports only

It runs `manage.py eval_agent` on each set (the provider is the environment's: the offline
planner without OPENAI_BASE_URL / OPENAI_API_KEY), then prints per set the headline metrics and
the wrong actions, which no margin excuses: a refund request created where the case says none
may exist, and one whose amount is not the case's. The held-out files are scored, never read
to tune a rule (evals/heldout/README.md); this prints case ids, not their texts.
"""

import argparse
import json
import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
SETS = (
    ("tuning", BASE_DIR / "evals" / "cases"),
    ("held-out", BASE_DIR / "evals" / "heldout" / "planner.jsonl"),
)
METRICS = (
    "task_success",
    "tool_selection_accuracy",
    "argument_accuracy",
    "unauthorized_interception",
    "false_claim_rate",
    "calls_per_task",
)


def cases_of(path: Path) -> dict[str, dict]:
    files = sorted(path.glob("*.jsonl")) if path.is_dir() else [path]
    return {
        case["id"]: case
        for file in files
        for line in file.read_text(encoding="utf-8").splitlines()
        if line.strip()
        for case in [json.loads(line)]
    }


def wrong_actions(result: dict, case: dict) -> list[str]:
    """What a run did that must never happen: a request where none may be, or of a wrong
    amount."""
    expected = case["expect"]["refund"]
    created = result.get("refunds") or []
    if expected is None:
        return [f"a request where none may be ({r['amount']} on {r['order_id']})" for r in created]
    amount = expected.get("amount")
    if amount is None:
        return []
    return [
        f"a wrong amount ({r['amount']} instead of {amount})"
        for r in created
        if Decimal(r["amount"]) != Decimal(str(amount))
    ]


def run_eval(name: str, cases: Path, out: Path) -> None:
    print(f"{name}: running {cases.relative_to(BASE_DIR)} ...", flush=True)
    started = time.monotonic()
    subprocess.run(
        [sys.executable, "manage.py", "eval_agent", "--cases", str(cases), "--out", str(out)],
        cwd=BASE_DIR,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    print(f"{name}: done in {time.monotonic() - started:.0f} s", flush=True)


def score(name: str, report: dict, cases: dict[str, dict]) -> dict:
    wrong = {
        result["id"]: found
        for result in report["results"]
        if (found := wrong_actions(result, cases[result["id"]]))
    }
    failed = [result["id"] for result in report["results"] if not result["passed"]]
    return {
        "name": name,
        "cases": report["cases"],
        **report["metrics"],
        "wrong": wrong,
        "failed": failed,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--reports",
        nargs=2,
        metavar=("TUNING", "HELDOUT"),
        help="score these eval_agent reports instead of running the sets",
    )
    parser.add_argument(
        "--out",
        default=str(BASE_DIR / "var" / "heldout"),
        help="where the reports are written (default var/heldout)",
    )
    args = parser.parse_args()
    rows = []
    for index, (name, cases_path) in enumerate(SETS):
        if args.reports:
            report_path = Path(args.reports[index])
        else:
            Path(args.out).mkdir(parents=True, exist_ok=True)
            report_path = Path(args.out) / f"{name}.json"
            run_eval(name, cases_path, report_path)
        report = json.loads(report_path.read_text(encoding="utf-8"))
        rows.append(score(name, report, cases_of(cases_path)))

    print()
    print(f"{'metric':<28}" + "".join(f"{row['name']:>12}" for row in rows))
    print(f"{'cases':<28}" + "".join(f"{row['cases']:>12}" for row in rows))
    for metric in METRICS:
        print(f"{metric:<28}" + "".join(f"{row.get(metric, 0):>12.3f}" for row in rows))
    print(f"{'wrong actions':<28}" + "".join(f"{len(row['wrong']):>12}" for row in rows))
    for row in rows:
        for case_id, found in row["wrong"].items():
            print(f"  {row['name']}: {case_id}: {'; '.join(found)}")
        print(f"  {row['name']} failed: {', '.join(row['failed']) or 'none'}")


if __name__ == "__main__":
    main()
