"""--compare as the release gate, run as CI runs it: `manage.py eval_agent` in its own process,
whose exit status is the verdict. The offline planner answers two cases, one it passes and
one it fails, so the new report's task_success is exactly 0.5."""

import json
import os
import subprocess
import sys

import pytest
from django.conf import settings

from tests.evals.cases import case, write_cases

PASSES = case("mug-paid", "What did the customer pay?", tools=["get_order"])
# The planner looks the order up; it never lists the customer's orders for this question.
FAILS = case("mug-paid-listed", "What did the customer pay?", tools=["list_customer_orders"])


@pytest.fixture(scope="module")
def desk(tmp_path_factory):
    """A migrated database of its own and the offline planner, for manage.py processes."""
    folder = tmp_path_factory.mktemp("compare")
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{folder / 'desk.sqlite3'}",
        "LLM_PROVIDER": "offline",
        "REDIS_URL": "",
        "CELERY_FILESYSTEM_DIR": str(folder / "broker"),
    }
    manage(env, "migrate", "--noinput", "-v0").check_returncode()
    cases = write_cases(folder / "cases.jsonl", [PASSES, FAILS])
    return env, folder, cases


def manage(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def old_report(folder, name: str, *, task_success: float) -> str:
    """An earlier report in which both cases passed."""
    path = folder / name
    report = {
        "metrics": {"task_success": task_success},
        "results": [{"id": "mug-paid", "passed": True}, {"id": "mug-paid-listed", "passed": True}],
    }
    path.write_text(json.dumps(report), encoding="utf-8")
    return str(path)


def test_a_drop_within_max_drop_exits_0_and_names_the_newly_failing_case(desk):
    env, folder, cases = desk
    old = old_report(folder, "within.json", task_success=0.52)

    finished = manage(
        env, "eval_agent", "--cases", str(cases), "--out", str(folder / "within-new.json"),
        "--compare", old,
    )  # fmt: skip

    assert finished.returncode == 0, finished.stderr
    assert json.loads((folder / "within-new.json").read_text())["metrics"]["task_success"] == 0.5
    assert "task_success                  0.5200   0.5000   -0.0200" in finished.stdout
    assert "newly failing cases: mug-paid-listed" in finished.stdout


def test_a_drop_beyond_max_drop_exits_1_with_the_metric_named_and_the_report_written(desk):
    env, folder, cases = desk
    old = old_report(folder, "beyond.json", task_success=0.53)

    finished = manage(
        env, "eval_agent", "--cases", str(cases), "--out", str(folder / "beyond-new.json"),
        "--compare", old, "--max-drop", "0.02",
    )  # fmt: skip

    assert finished.returncode == 1
    assert finished.stderr.strip() == (
        f"CommandError: metrics worse than {old} by more than 0.02: task_success"
    )
    assert "task_success                  0.5300   0.5000   -0.0300  worse by more than" in (
        finished.stdout
    )
    assert "newly failing cases: mug-paid-listed" in finished.stdout
    assert (folder / "beyond-new.json").exists()
