"""The worker processes behind eval_agent: a worker that dies costs the case it was running,
not the eval."""

from evals import runner
from evals.case_files import load_cases
from tests.evals.cases import case, write_cases


def test_a_worker_that_dies_fails_its_case_and_a_new_one_runs_the_rest(
    settings, monkeypatch, tmp_path
):
    settings.LLM_PROVIDER = "offline"
    cases = load_cases(
        write_cases(
            tmp_path / "cases.jsonl",
            [case(name, "What did the customer pay?") for name in ("first", "second")],
        )
    )
    started: list[runner.Worker] = []
    start = runner.Worker.__init__

    def start_and_kill_the_first(worker, **kwargs):
        start(worker, **kwargs)
        if not started:
            worker.process.kill()
        started.append(worker)

    monkeypatch.setattr(runner.Worker, "__init__", start_and_kill_the_first)

    finished = {
        job.case.id: record
        for job, record in runner.run_jobs(runner.jobs_for(cases, 1), concurrency=1)
    }

    assert finished["first"] == {"error": "the eval worker stopped:"}
    assert finished["second"]["status"] == "completed"
    assert "paid 129.00 CNY" in finished["second"]["answer"]
    assert len(started) == 2
    assert all(worker.process.returncode is not None for worker in started)


def test_jobs_run_each_case_k_times_one_case_after_another(tmp_path):
    cases = load_cases(write_cases(tmp_path / "c.jsonl", [case("a", "Hi"), case("b", "Hi")]))

    jobs = runner.jobs_for(cases, 2)

    assert [(job.index, job.case.id, job.repeat_index) for job in jobs] == [
        (0, "a", 0),
        (1, "a", 1),
        (2, "b", 0),
        (3, "b", 1),
    ]


def test_the_workers_count_their_metrics_apart_from_the_desks(settings, tmp_path):
    settings.PROMETHEUS_MULTIPROC_DIR = str(tmp_path / "desk-metrics")

    env = runner.worker_environment(tmp_path / "eval")

    assert env["PROMETHEUS_MULTIPROC_DIR"] == str(tmp_path / "eval" / "metrics")
    assert env["CELERY_FILESYSTEM_DIR"] == str(tmp_path / "eval" / "broker")
