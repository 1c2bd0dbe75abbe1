"""The third-party corpora kept in tests/data (what each is and its licence: tests/data/README.md).

Read by tests/redteam, tests/agent/test_untrusted.py and the benches.
"""

import json
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent / "data"

# InjecAgent's attacker cases: direct harm (30), then data stealing (32).
INJECAGENT_KINDS = ("dh", "ds")


def injecagent_cases(kind: str) -> list[dict]:
    """The attacker cases of one kind, in file order."""
    path = DATA_DIR / "injecagent" / f"attacker_cases_{kind}.jsonl"
    with open(path, encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def injecagent_instructions() -> list[str]:
    """The 62 attacker instructions, direct harm first."""
    return [
        case["Attacker Instruction"] for kind in INJECAGENT_KINDS for case in injecagent_cases(kind)
    ]


def tau2_reasons() -> list[str]:
    """The 114 tau2-bench retail customers' reasons for calling, in task order."""
    with open(DATA_DIR / "tau2-retail" / "reasons_for_call.json", encoding="utf-8") as handle:
        return [task["reason_for_call"] for task in json.load(handle)]
