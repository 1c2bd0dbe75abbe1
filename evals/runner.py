"""Running eval cases in worker processes (evals/worker.py), each case on a fresh demo shop.

The template shop is migrated and seeded once per eval, into a SQLite file in a temporary
folder; every case runs on its own copy of it. `concurrency` workers run cases at once (each
one case at a time), so N cases against a remote model take about N / concurrency model
round trips. The workers talk to the provider this process is configured for: the effective
settings, not only the environment, are handed to them.
"""

import contextlib
import itertools
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from django.conf import settings

from evals.case_files import Case

# Settings a worker must share with this process; each is read from the environment variable
# of the same name, so the effective value (an override in a test too) is passed that way.
SHARED_SETTINGS = (
    "LLM_PROVIDER",
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
    "AGENT_MODEL",
    "AGENT_MAX_STEPS",
    "AGENT_MAX_TOOL_CALLS_PER_STEP",
    "AGENT_TOKEN_BUDGET",
    "AGENT_LEASE_SECONDS",
    "TOOL_TIMEOUT_S",
    "LLM_TIMEOUT_S",
    "CONFIRMATION_TTL_MINUTES",
    "AGENT_DRAFT_WITH_MODEL",
    "AGENT_SMALL_MODEL",
    "AGENT_SMALL_MODEL_PIECES",
    "LLM_MAX_TOKENS",
    "LLM_TEMPERATURE",
    "LLM_STREAM",
    "LLM_REQUIRED_CALL",
)
LOG_TAIL_LINES = 15
STOP_TIMEOUT_S = 10


class RunnerError(Exception):
    """The eval could not start (the template shop could not be built)."""


@dataclass(frozen=True)
class Job:
    index: int  # position in the eval, for the report's order
    case: Case
    repeat_index: int


def setting_text(value: object) -> str:
    """A setting as its environment variable writes it (a list: comma-separated)."""
    return ",".join(map(str, value)) if isinstance(value, list | tuple) else str(value)


def worker_environment(workdir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    env.update({name: setting_text(getattr(settings, name)) for name in SHARED_SETTINGS})
    # Tasks a run enqueues (its next step) go to a throwaway folder: nobody else may advance
    # an eval's runs, and nothing of it may reach a real broker.
    env["REDIS_URL"] = ""
    env["CELERY_FILESYSTEM_DIR"] = str(workdir / "broker")
    # An eval's runs are not the desk's work: what they count for /metrics (tool latency, run
    # steps and tokens, model latency) stays in the throwaway folder too.
    env["PROMETHEUS_MULTIPROC_DIR"] = str(workdir / "metrics")
    # Only used until the worker points at a case's copy.
    env["DATABASE_URL"] = f"sqlite:///{template_path(workdir)}"
    return env


def log_tail(path: Path) -> str:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(lines[-LOG_TAIL_LINES:])


def template_path(workdir: Path) -> Path:
    return workdir / "template.sqlite3"


def build_template(workdir: Path, env: dict[str, str]) -> None:
    template = template_path(workdir)
    log = workdir / "template.log"
    with log.open("w") as output:
        finished = subprocess.run(
            [sys.executable, "-m", "evals.worker", "template", str(template)],
            cwd=settings.BASE_DIR,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            check=False,
        )
    if finished.returncode != 0:
        raise RunnerError(f"could not build the demo shop for the cases:\n{log_tail(log)}")


class WorkerDied(Exception):
    pass


class Worker:
    """One `python -m evals.worker serve` process: a case in, its record out."""

    def __init__(
        self,
        *,
        number: int,
        workdir: Path,
        template: Path,
        env: dict[str, str],
        without: tuple[str, ...] = (),
    ):
        self.workdir = workdir
        self.log = workdir / f"worker-{number}.log"
        self._log_file: IO[str] = self.log.open("a")
        # Guards and small-model pieces left out, in this worker only (evals/ablation.py).
        left_out = [f"--without={name}" for name in without]
        self.process = subprocess.Popen(
            [sys.executable, "-m", "evals.worker", "serve", str(template), *left_out],
            cwd=settings.BASE_DIR,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log_file,
            text=True,
            encoding="utf-8",
        )

    def run(self, job: Job) -> dict:
        database = self.workdir / f"case-{job.index}.sqlite3"
        request = {"case": job.case.as_dict(), "database": str(database)}
        assert self.process.stdin is not None and self.process.stdout is not None
        try:
            self.process.stdin.write(json.dumps(request, ensure_ascii=False) + "\n")
            self.process.stdin.flush()
            line = self.process.stdout.readline()
        except OSError:
            line = ""
        if not line:
            raise WorkerDied(f"the eval worker stopped:\n{log_tail(self.log)}".rstrip())
        return json.loads(line)

    def stop(self) -> None:
        if self.process.stdin is not None:
            # A worker that died leaves a broken pipe, and unsent bytes that cannot be flushed.
            with contextlib.suppress(OSError):
                self.process.stdin.close()
        try:
            self.process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()
        self._log_file.close()


def jobs_for(cases: list[Case], repeat: int) -> list[Job]:
    """Each case `repeat` times, one case's runs after another."""
    runs = [(case, index) for case in cases for index in range(repeat)]
    return [Job(index=n, case=case, repeat_index=index) for n, (case, index) in enumerate(runs)]


def run_jobs(
    jobs: list[Job], *, concurrency: int, without: list[str] | None = None
) -> Iterator[tuple[Job, dict]]:
    """(job, record) as each job finishes, in finishing order. Records are produced on
    worker threads but yielded on the caller's, so the caller may use the database. `without`:
    guards and small-model pieces the workers leave out (evals/ablation.py)."""
    workdir = Path(tempfile.mkdtemp(prefix="eval-agent-"))
    try:
        env = worker_environment(workdir)
        yield from _run_on_workers(
            jobs, concurrency=concurrency, workdir=workdir, env=env, without=tuple(without or ())
        )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _run_on_workers(
    jobs: list[Job],
    *,
    concurrency: int,
    workdir: Path,
    env: dict[str, str],
    without: tuple[str, ...],
) -> Iterator[tuple[Job, dict]]:
    count = max(1, min(concurrency, len(jobs)))
    template = template_path(workdir)
    idle: queue.Queue[Worker] = queue.Queue()
    numbers = itertools.count(1)

    def start_worker() -> Worker:
        return Worker(
            number=next(numbers), workdir=workdir, template=template, env=env, without=without
        )

    def run_one(job: Job) -> dict:
        worker = idle.get()
        try:
            return worker.run(job)
        except WorkerDied as exc:
            worker.stop()
            worker = start_worker()
            return {"error": str(exc)}
        finally:
            idle.put(worker)

    pool = ThreadPoolExecutor(max_workers=count, thread_name_prefix="eval")
    try:
        # The workers start (import Django and the app) while the template is built: they
        # read it only when their first case arrives.
        for _ in range(count):
            idle.put(start_worker())
        build_template(workdir, env)
        futures = {pool.submit(run_one, job): job for job in jobs}
        for future in as_completed(futures):
            yield futures[future], future.result()
    finally:
        # Stopped early (an error, Ctrl-C): cases not started yet are dropped.
        pool.shutdown(wait=True, cancel_futures=True)
        while not idle.empty():
            idle.get().stop()
