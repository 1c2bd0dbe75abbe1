"""How much of the shop the evaluation cases cover: cases per tool, clause, role, injection kind
and kind of case, counted from each case's optional "tags" (see evals/cases/README.md).

    python -m evals.coverage [PATH]      # PATH: a .jsonl file or a folder of them
    python evals/coverage.py [PATH]      # default: evals/cases

Plain Python on purpose (no Django): the table can be printed anywhere the case files are.
"""

import json
import sys
from collections import Counter
from pathlib import Path

DEFAULT_CASES = Path(__file__).resolve().parent / "cases"

# The tags vocabulary. A value outside it is a typo that would hide a gap, so every dimension
# lists its values in a fixed order and the table shows the zeros too.
TOOLS = (
    "get_order",
    "list_customer_orders",
    "search_policies",
    "get_refund_status",
    "create_refund",
)
CLAUSES = ("R-1", "R-2", "R-3", "R-4", "R-5", "R-6")
ROLES = ("intern", "agent", "supervisor")
INJECTIONS = ("ticket_message", "order_note", "customer_name")
KINDS = (
    "happy",
    "boundary",
    "role",
    "partial",
    "ambiguity",
    "out_of_scope",
    "cross_customer",
    "injection",
    "multi_step",
    "honesty",
    "error_handling",
)
NO_INJECTION = "none"

# (title, tags key, known values, whether the key holds a list)
DIMENSIONS = (
    ("tool", "tool", TOOLS, True),
    ("clause", "clause", CLAUSES, True),
    ("role", "role", ROLES, False),
    ("injection", "injection", (*INJECTIONS, NO_INJECTION), False),
    ("kind", "kind", KINDS, False),
)


def case_files(path: Path) -> list[Path]:
    """The .jsonl files at `path`: the file itself, or a folder's files in name order."""
    if path.is_dir():
        return sorted(path.glob("*.jsonl"))
    return [path]


def load_cases(path: Path) -> list[dict]:
    """Every case of every file at `path`, in file then line order; blank lines are skipped."""
    cases = []
    for file in case_files(path):
        for line in file.read_text(encoding="utf-8").splitlines():
            if line.strip():
                cases.append(json.loads(line))
    return cases


def _values(tags: dict, key: str, is_list: bool) -> list[str]:
    value = tags.get(key)
    if key == "injection":
        return [value or NO_INJECTION]
    if is_list:
        return list(dict.fromkeys(value or []))
    return [value] if value else []


def coverage(cases: list[dict]) -> dict[str, Counter]:
    """For each dimension, how many cases carry each value (a case counts once per value)."""
    counts: dict[str, Counter] = {title: Counter() for title, *_ in DIMENSIONS}
    for case in cases:
        tags = case.get("tags") or {}
        for title, key, _, is_list in DIMENSIONS:
            counts[title].update(_values(tags, key, is_list))
    return counts


def gaps(counts: dict[str, Counter]) -> list[str]:
    """'dimension value' for every known value no case covers (no injection is not a gap)."""
    return [
        f"{title} {value}"
        for title, _, known, _ in DIMENSIONS
        for value in known
        if value != NO_INJECTION and not counts[title][value]
    ]


def format_table(cases: list[dict], *, source: str = "") -> str:
    counts = coverage(cases)
    width = max(len(value) for _, _, known, _ in DIMENSIONS for value in known) + 2
    lines = [f"{len(cases)} cases" + (f" in {source}" if source else "")]
    for title, _, known, _ in DIMENSIONS:
        lines += ["", f"{'per ' + title:<{width}}{'cases':>6}"]
        lines += [f"  {value:<{width - 2}}{counts[title][value]:>6}" for value in known]
        unknown = sorted(set(counts[title]) - set(known))
        lines += [
            f"  {value + ' (unknown)':<{width - 2}}{counts[title][value]:>6}" for value in unknown
        ]
    missing = gaps(counts)
    lines += ["", "not covered: " + (", ".join(missing) if missing else "nothing")]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    path = Path(argv[0]) if argv else DEFAULT_CASES
    if not path.exists():
        sys.stderr.write(f"no such file or folder: {path}\n")
        return 2
    files = case_files(path)
    source = f"{path} ({len(files)} file{'s' if len(files) != 1 else ''})"
    sys.stdout.write(format_table(load_cases(path), source=source))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
