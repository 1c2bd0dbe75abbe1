"""The release gate CI runs: the whole case set against the offline planner, held to the
thresholds documented in evals/thresholds.json."""

import json
import time
from pathlib import Path

import pytest
from django.conf import settings

from evals.case_files import load_cases
from evals.metrics import METRICS
from tests.evals.cases import run_eval

pytestmark = pytest.mark.django_db

CASES = Path(settings.BASE_DIR) / "evals" / "cases"
THRESHOLDS = json.loads((Path(settings.BASE_DIR) / "evals" / "thresholds.json").read_text())
# The whole set takes seconds on two cores; far beyond this something is wrong (a worker
# that waits on a timeout, cases no longer isolated cheaply).
TIME_LIMIT_S = 120


def test_the_thresholds_cover_every_metric_once():
    gated = [*THRESHOLDS["at_least"], *THRESHOLDS["at_most"]]

    assert sorted(gated) == sorted(METRICS)


def test_the_offline_planner_meets_the_thresholds_on_the_whole_case_set(settings, tmp_path):
    if not CASES.is_dir():
        pytest.skip("evals/cases/ does not exist yet: there is no case set to gate on")
    settings.LLM_PROVIDER = "offline"

    started = time.monotonic()
    # Cases marked offline_gap need what the planner does not do yet (evals/cases/README.md).
    _, report = run_eval(
        "--cases",
        str(CASES),
        "--out",
        str(tmp_path / "report.json"),
        "--concurrency",
        "2",
        "--skip-offline-gaps",
    )
    elapsed = time.monotonic() - started

    metrics = report["metrics"]
    below = {
        name: (metrics[name], floor)
        for name, floor in THRESHOLDS["at_least"].items()
        if metrics[name] < floor
    }
    above = {
        name: (metrics[name], ceiling)
        for name, ceiling in THRESHOLDS["at_most"].items()
        if metrics[name] > ceiling
    }
    failing = sorted({r["id"] for r in report["results"] if not r["passed"]})
    assert (below, above) == ({}, {}), f"(value, threshold); failing cases: {failing}"
    gaps = [case.id for case in load_cases(CASES) if case.offline_gap]
    assert report["left_out_offline_gaps"] == gaps
    assert report["runs"] == report["cases"] >= 80
    assert elapsed < TIME_LIMIT_S
