"""bench/guard_effects.py's reading of what the records block under an answer did: the same
answer cut at the block, judged again by the case's answer checks."""

import importlib.util
import json

from agent.runtime import records
from tests.services import BASE_DIR

spec = importlib.util.spec_from_file_location("guard_effects", BASE_DIR / "bench/guard_effects.py")
guard_effects = importlib.util.module_from_spec(spec)
spec.loader.exec_module(guard_effects)


def test_the_bench_knows_the_block_by_the_desks_own_heading():
    assert guard_effects.RECORDS_HEADING == records.HEADING


def test_a_case_that_passes_only_with_the_records_block_is_named(tmp_path):
    cases = tmp_path / "cases.jsonl"
    cases.write_text(
        "\n".join(
            json.dumps({"id": case, "expect": {"answer_must": ["R-6"]}})
            for case in ("cited", "from-records", "no-block")
        )
    )
    block = f"\n\n{records.HEADING}\n- Policy: R-6 Who approves."
    report = {
        "cases_path": str(cases),
        "results": [
            {"id": "cited", "passed": True, "answer": "R-6 says a reviewer." + block},
            {"id": "from-records", "passed": True, "answer": "A reviewer approves." + block},
            {"id": "no-block", "passed": False, "answer": "A reviewer approves."},
        ],
    }

    carried, only_with = guard_effects.records_effect(report, ["cited", "from-records", "no-block"])

    assert (carried, only_with) == (2, ["from-records"])
