"""A tool call's argument check, the hand-written validator against the jsonschema one, side by
side in one run: microseconds a call for real tool calls, valid and invalid, and whether both
give the same clean arguments and field errors.

    .venv/bin/python bench/tool_validation.py [--number 2000] [--repeat 5] [--fuzz 20000]
        [--old-rev REV]

The old validator is read from git (the last agent/tools/validation.py with its own checks,
or REV's) into a module of its own here; nothing else imports it. `--fuzz N` also compares
both on N random argument objects (random keys, types, spellings and amounts) and prints the
first differences.
"""

import argparse
import importlib.util
import os
import random
import subprocess
import sys
import tempfile
import timeit
from decimal import Decimal
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BASE_DIR))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("LOG_LEVEL", "WARNING")

VALIDATOR_PATH = "agent/tools/validation.py"
# Only the hand-written validator defines it.
OLD_MARKER = "def _check_money"

MUG = {
    "order_id": "202610110087",
    "amount": Decimal("129.00"),
    "reason": "damaged",
    "explanation": "Arrived broken.",
}
CALLS: list[tuple[str, str, dict]] = [
    ("get_order", "valid", {"order_id": "202610110087"}),
    ("get_order", "invalid", {"order_id": "202610110087\n"}),
    ("list_customer_orders", "valid", {"status": "Delivered", "limit": Decimal("5")}),
    ("list_customer_orders", "invalid", {"limit": True, "cursor": "x" * 201}),
    ("search_policies", "valid", {"query": "refund window after delivery", "limit": 3}),
    ("read_tool_result", "valid", {"result_ref": "tc_1234", "offset": 8000}),
    ("create_refund", "valid", MUG),
    ("create_refund", "valid", {**MUG, "amount": "129.5", "reason": "Not received"}),
    (
        "create_refund",
        "invalid",
        {**MUG, "amount": Decimal("0.001"), "reason": "broken", "customer_id": 7},
    ),
]


def git(*args: str) -> str:
    done = subprocess.run(["git", *args], cwd=BASE_DIR, capture_output=True, text=True, check=True)
    return done.stdout


def old_source(rev: str | None) -> str:
    if rev:
        return git("show", f"{rev}:{VALIDATOR_PATH}")
    head = git("show", f"HEAD:{VALIDATOR_PATH}")
    if OLD_MARKER in head:
        return head
    removed = git("log", "-1", "--format=%H", "-S", OLD_MARKER, "--", VALIDATOR_PATH).strip()
    return git("show", f"{removed}^:{VALIDATOR_PATH}")


def load_old(rev: str | None):
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as file:
        file.write(old_source(rev))
    spec = importlib.util.spec_from_file_location("old_tool_validation", file.name)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    os.unlink(file.name)
    return module


def per_call_us(validate, tool, arguments, number: int, repeat: int) -> float:
    timer = timeit.Timer(lambda: validate(tool, arguments))
    return min(timer.repeat(repeat=repeat, number=number)) / number * 1e6


# --- Random arguments, for --fuzz ---------------------------------------------------------

KEYS = [
    "order_id",
    "amount",
    "reason",
    "explanation",
    "status",
    "limit",
    "cursor",
    "query",
    "result_ref",
    "offset",
    "customer_id",
    "approved",
    "note",
    "x" * 70,
]


def random_value(rng: random.Random):
    return rng.choice(
        [
            None,
            True,
            False,
            rng.randint(-5, 30),
            rng.choice([0, 1, 8000, 10**12]),
            Decimal(rng.choice(["2.0", "2.5", "0.001", "129.00", "-5", "1E+2", "1e20"])),
            Decimal(rng.choice(["NaN", "Infinity", "-Infinity"])),
            float(rng.choice(["2.5", "3.0", "nan", "inf"])),
            rng.choice(["", "x", "x" * 201, "x" * 1001, "129.00", " 12.5 ", "129,00"]),
            rng.choice(["202610110087", "1234567", "202610110087\n", "tc_12", "tc_x"]),
            rng.choice(["Damaged", "not-received", "DELIVERED", "lost", "wrong item"]),
            [129],
            {"a": 1},
        ]
    )


def random_arguments(rng: random.Random) -> dict:
    return {key: random_value(rng) for key in rng.sample(KEYS, rng.randint(0, 6))}


def fuzz(old, new, tools, count: int) -> int:
    rng = random.Random(7)
    differences = 0
    for _ in range(count):
        tool = rng.choice(tools)
        arguments = random_arguments(rng)
        before, after = old.validate_arguments(tool, arguments), new(tool, arguments)
        if repr(before) != repr(after):
            differences += 1
            if differences <= 5:
                print(f"  {tool.name} {arguments!r}\n    old {before!r}\n    new {after!r}")
    return differences


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--number", type=int, default=2000, help="calls a timing (default 2000)")
    parser.add_argument("--repeat", type=int, default=5, help="timings a call, best kept")
    parser.add_argument("--fuzz", type=int, default=0, help="random argument objects to compare")
    parser.add_argument("--old-rev", help="the revision to read the old validator from")
    args = parser.parse_args()

    import django

    django.setup()
    from agent.tools.registry import TOOLS, get_tool
    from agent.tools.validation import validate_arguments

    old = load_old(args.old_rev)
    print(f"{'tool':22} {'call':8} {'old us':>8} {'new us':>8} {'new/old':>8}  same")
    for name, kind, arguments in CALLS:
        tool = get_tool(name)
        assert tool is not None
        old_us = per_call_us(old.validate_arguments, tool, arguments, args.number, args.repeat)
        new_us = per_call_us(validate_arguments, tool, arguments, args.number, args.repeat)
        same = repr(old.validate_arguments(tool, arguments)) == repr(
            validate_arguments(tool, arguments)
        )
        print(
            f"{name:22} {kind:8} {old_us:8.1f} {new_us:8.1f} {new_us / old_us:8.1f}  "
            f"{'yes' if same else 'NO'}"
        )
    if args.fuzz:
        differences = fuzz(old, validate_arguments, list(TOOLS), args.fuzz)
        print(f"fuzz: {differences} of {args.fuzz} random argument objects differ")


if __name__ == "__main__":
    main()
