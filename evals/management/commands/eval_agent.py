"""manage.py eval_agent: run the eval cases through the real runtime and report (DESIGN §11)."""

import json
import subprocess
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError
from django.utils import timezone

from agent.runtime.prompts import PROMPT_VERSION
from agent.tools.registry import TOOLS_VERSION
from evals import ablation, judge, metrics, report, runner, services
from evals.case_files import Case, CaseError, load_cases
from evals.models import EvalRun


def git_commit() -> str:
    try:
        finished = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=settings.BASE_DIR,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return finished.stdout.strip() if finished.returncode == 0 else ""


def read_report(path: str) -> dict:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise CommandError(f"--compare {path}: cannot read it ({exc.strerror})") from exc
    except ValueError as exc:
        raise CommandError(f"--compare {path}: not a JSON report ({exc})") from exc
    if not isinstance(data, dict) or not isinstance(data.get("metrics"), dict):
        raise CommandError(f'--compare {path}: not an eval report (no "metrics" object)')
    return data


def select_subset(cases: list[Case], path: str) -> list[Case]:
    """The cases a subset file names, in the order of the case files. A name that is no case
    stops the command: a fixed subset must stay the same set of cases."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise CaseError(f"--subset {path}: cannot read it ({exc.strerror})") from exc
    wanted = {line.split("#", 1)[0].strip() for line in lines} - {""}
    unknown = wanted - {case.id for case in cases}
    if unknown:
        raise CaseError(f"--subset {path}: no such case: {', '.join(sorted(unknown))}")
    return [case for case in cases if case.id in wanted]


def eval_header(options: dict) -> dict:
    """What the report and the stored EvalRun say about how the cases were run."""
    remote = settings.LLM_PROVIDER == "openai"
    return {
        "provider": settings.LLM_PROVIDER,
        "model": settings.AGENT_MODEL if remote else "offline",
        "base_url": settings.OPENAI_BASE_URL if remote else "",
        "prompt_version": PROMPT_VERSION,
        "tools_version": TOOLS_VERSION,
        "git_commit": git_commit(),
        "cases_path": str(options["cases"]),
        "subset": str(options.get("subset") or ""),
        "repeat": options["repeat"],
        "concurrency": options["concurrency"],
        "without": options.get("without") or [],
        "small_model": settings.AGENT_SMALL_MODEL,
    }


def positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise ValueError(text)
    return value


class Command(BaseCommand):
    help = (
        "Run the eval cases through the assistant's real runtime against the configured "
        "provider, each on a fresh demo shop, and write a report (DESIGN §11)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--cases", required=True, help="a .jsonl file or a folder of them")
        parser.add_argument("--out", required=True, help="where to write the JSON report")
        parser.add_argument("--repeat", type=positive, default=1, help="runs per case (pass^k)")
        parser.add_argument(
            "--concurrency", type=positive, default=1, help="cases run at once (default 1)"
        )
        parser.add_argument(
            "--subset",
            help="a text file of case ids, one a line (# starts a comment): run only those "
            "cases of --cases (e.g. evals/subsets/small-model.txt)",
        )
        parser.add_argument(
            "--without",
            action="append",
            choices=ablation.NAMES,
            metavar="NAME",
            help="leave this guard or small-model piece out, to measure what it is worth "
            f"(repeatable; one of {', '.join(ablation.NAMES)}; evals/ablation.py)",
        )
        parser.add_argument("--html", help="also write a self-contained HTML report here")
        parser.add_argument(
            "--skip-offline-gaps",
            action="store_true",
            help="leave out the cases marked offline_gap (what the offline planner does not do "
            "yet); the CI gate runs the offline planner so",
        )
        parser.add_argument(
            "--compare",
            help="an earlier JSON report: print the deltas, exit 1 if a metric got worse by "
            "more than --max-drop",
        )
        parser.add_argument(
            "--max-drop",
            type=float,
            default=0.02,
            help="largest allowed worsening of a metric with --compare (default 0.02); for "
            "calls_per_task and repeat_call_rate worse means higher",
        )

    def handle(self, *args, **options) -> None:
        try:
            cases = load_cases(options["cases"])
            if options["subset"]:
                cases = select_subset(cases, options["subset"])
        except CaseError as exc:
            raise CommandError(str(exc)) from exc
        left_out = self.offline_gaps(cases) if options["skip_offline_gaps"] else []
        cases = [case for case in cases if case.id not in left_out]
        old = read_report(options["compare"]) if options["compare"] else None
        header = {**eval_header(options), "left_out_offline_gaps": left_out}
        started_at = timezone.now()
        try:
            eval_run = services.eval_run_start(
                started_at=started_at, header=header, cases_count=len(cases)
            )
        except DatabaseError as exc:
            raise CommandError(
                f"cannot store the eval in the database ({exc}); is it migrated?"
            ) from exc
        self.stdout.write(
            f"Running {len(cases)} cases x {header['repeat']} on {header['model']} "
            f"({header['provider']}), {header['concurrency']} at a time"
        )
        judged, results = self.run_cases(cases, header=header, eval_run=eval_run)
        finished_at = timezone.now()
        full = report.build_report(
            cases=cases,
            judged=judged,
            results=results,
            header=header,
            started_at=started_at,
            finished_at=finished_at,
        )
        self.write(options["out"], json.dumps(full, indent=2, ensure_ascii=False, default=str))
        if options["html"]:
            self.write(options["html"], report.render_html(full))
        services.eval_run_finish(eval_run=eval_run, report=full, finished_at=finished_at)
        self.stdout.write("")
        self.stdout.write("\n".join(report.summary_lines(full)))
        self.stdout.write(f"\nReport: {options['out']} (eval run {eval_run.pk})")
        if old is not None:
            self.gate(old, full, max_drop=options["max_drop"], old_path=options["compare"])

    def offline_gaps(self, cases: list[Case]) -> list[str]:
        """The ids of the cases marked offline_gap, to be left out."""
        gaps = [case.id for case in cases if case.offline_gap]
        if len(gaps) == len(cases):
            raise CommandError("every case is marked offline_gap: nothing to run")
        if gaps:
            self.stdout.write(
                f"Leaving out {len(gaps)} cases the offline planner cannot pass yet "
                f"(offline_gap): {', '.join(gaps)}"
            )
        return gaps

    def run_cases(
        self, cases: list[Case], *, header: dict, eval_run: EvalRun
    ) -> tuple[list[metrics.JudgedRun], list[dict]]:
        """Every run judged and stored as it finishes; both lists in case order."""
        jobs = runner.jobs_for(cases, header["repeat"])
        judged: dict[int, metrics.JudgedRun] = {}
        results: dict[int, dict] = {}
        try:
            for job, record in runner.run_jobs(
                jobs, concurrency=header["concurrency"], without=header["without"]
            ):
                verdict = judge.judge(job.case.expect, record)
                judged[job.index] = metrics.JudgedRun(job.case.id, job.case.expect, record, verdict)
                results[job.index] = result = report.result_entry(
                    job.case, job.repeat_index, record, verdict
                )
                services.eval_result_record(eval_run=eval_run, result=result)
                self.progress(
                    done=len(results), total=len(jobs), result=result, repeat=header["repeat"]
                )
        except runner.RunnerError as exc:
            raise CommandError(str(exc)) from exc
        return [judged[n] for n in sorted(judged)], [results[n] for n in sorted(results)]

    def progress(self, *, done: int, total: int, result: dict, repeat: int) -> None:
        line = report.progress_line(done=done, total=total, result=result, repeat=repeat)
        self.stdout.write(line if result["passed"] else self.style.WARNING(line))
        if result["failures"]:
            self.stdout.write(f"        {result['failures'][0]}")
        self.stdout.flush()

    def write(self, path: str, text: str) -> None:
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")

    def gate(self, old: dict, new: dict, *, max_drop: float, old_path: str) -> None:
        comparison = metrics.compare(old, new, max_drop=max_drop)
        self.stdout.write(f"\nCompared with {old_path}:")
        self.stdout.write("\n".join(report.comparison_lines(comparison)))
        if comparison.regressions:
            raise CommandError(
                f"metrics worse than {old_path} by more than {max_drop}: "
                f"{', '.join(comparison.regressions)}",
                returncode=1,
            )
