"""An eval worker process, started by evals/runner.py (not meant to be run by hand).

    python -m evals.worker template PATH   migrate and seed a demo shop into the SQLite file PATH
    python -m evals.worker serve TEMPLATE  run cases: one JSON job per line on stdin,
                                           one JSON record per line on stdout
        [--without=NAME ...]               with these guards or small-model pieces left
                                           out (evals/ablation.py)

A job is {"case": {...}, "database": PATH}: the case runs on a copy of TEMPLATE at PATH, which
is deleted afterwards. The process inherits the provider settings from the parent's
environment (evals/runner.py puts the effective ones there).
"""

import json
import os
import sys
import time
import traceback
from pathlib import Path

import django


def protocol_stream():
    """The real stdout, for records only; anything else printed goes to stderr (the log)."""
    stream = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    return stream


def serve(template: Path) -> None:
    # Models can be imported only once Django is set up (main() does that first).
    from evals import case_setup, shop

    records = protocol_stream()
    for line in sys.stdin:
        if not line.strip():
            continue
        job = json.loads(line)
        database = Path(job["database"])
        started = time.monotonic()
        try:
            shop.fresh_copy(template, database)
            record = shop.run_case(job["case"])
        except case_setup.HarnessError as exc:
            record = {"error": str(exc)}
        except Exception as exc:
            traceback.print_exc()
            record = {"error": f"{type(exc).__name__}: {exc}"}
        finally:
            shop.discard(database)
        record["wall_ms"] = (time.monotonic() - started) * 1000
        records.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
        records.flush()


def main(argv: list[str]) -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    django.setup()
    without = [arg.removeprefix("--without=") for arg in argv if arg.startswith("--without=")]
    argv = [arg for arg in argv if not arg.startswith("--without=")]
    if without:
        from evals.ablation import leave_out

        leave_out(without)
    if len(argv) == 2 and argv[0] == "template":
        from evals.shop import build_template

        build_template(Path(argv[1]))
        return 0
    if len(argv) == 2 and argv[0] == "serve":
        serve(Path(argv[1]))
        return 0
    sys.stderr.write(__doc__ or "")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
