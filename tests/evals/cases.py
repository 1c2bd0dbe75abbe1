"""Helpers for the eval command's tests: case files written by the test, the command run."""

import io
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.core.management import call_command

from evals.models import EvalRun

MUG = "202610110087"


def case(case_id: str, message: str, *, ticket="TCK-1001", actor="agent", **expect) -> dict:
    return {
        "id": case_id,
        "ticket": ticket,
        "actor": actor,
        "message": message,
        "expect": expect,
    }


def write_cases(path: Path, cases: list[dict]) -> Path:
    path.write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    return path


def run_eval(*args: str) -> tuple[str, dict]:
    """Run `manage.py eval_agent` with `args`; its output and the report it wrote."""
    out = io.StringIO()
    call_command("eval_agent", *args, stdout=out, stderr=io.StringIO())
    report_path = Path(args[args.index("--out") + 1])
    return out.getvalue(), json.loads(report_path.read_text())


@contextmanager
def database_for_the_module(django_db_blocker) -> Iterator[None]:
    """Database access for a module-scoped fixture that runs one eval for several tests (an
    eval takes seconds); what the eval stored is deleted afterwards."""
    with django_db_blocker.unblock():
        try:
            yield
        finally:
            EvalRun.objects.all().delete()
