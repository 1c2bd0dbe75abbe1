"""The acceptance list runs end to end: the HTTP API starts a run, a real Celery worker process
drives it over the real broker (Redis in CI, the filesystem transport on a laptop), the model is
the fake OpenAI-compatible server over HTTP, payments go to the simulated provider.

Each test module shares one model server and one worker, so the list does not pay a worker
start per test. A module may set `WORKER_ENV` (extra environment for its worker) and
`WORKER_INCLUDE` (test-only modules the worker imports).
"""

import re

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from agent.models import AgentRun
from tests.conftest import TEST_QUEUE
from tests.fakes.openai_server import FakeOpenAI
from tests.services import WorkerProcess, wait_for

# The worker reads its settings from the environment, not from the test's `settings`.
PAYMENTS_ENV = {
    "REFUND_ADAPTER": "simulated",
    "SIMULATED_PROVIDER_MODE": "normal",
    "SIMULATED_PROVIDER_LATENCY_S": "0",
}
FINISHED = (AgentRun.Status.COMPLETED, AgentRun.Status.FAILED, AgentRun.Status.CANCELLED)


class ScriptedModel(FakeOpenAI):
    """The fake model server, reused across the tests of a module."""

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self._script.clear()
        self._handler = None


@pytest.fixture(scope="module")
def model_server():
    server = ScriptedModel().start()
    yield server
    server.stop()


def start_worker(model: FakeOpenAI, module, name: str) -> WorkerProcess:
    env = {**model.worker_env, **PAYMENTS_ENV, **getattr(module, "WORKER_ENV", {})}
    include = getattr(module, "WORKER_INCLUDE", [])
    extra_args = ["--include", ",".join(include)] if include else []
    return WorkerProcess(TEST_QUEUE, extra_env=env, log_name=name, extra_args=extra_args).start()


@pytest.fixture(scope="module")
def module_worker(request, django_db_setup, model_server):
    """One worker for the module, started once the test database exists."""
    worker = start_worker(model_server, request.module, f"acc-{request.module.__name__[-12:]}")
    yield worker
    worker.stop()


@pytest.fixture
def fake_openai(model_server, settings):
    """The module's model server with an empty script and request log; this process's
    settings point at it too (the run records its model name when it starts)."""
    model_server.reset()
    settings.LLM_PROVIDER = "openai"
    settings.OPENAI_BASE_URL = model_server.base_url
    settings.OPENAI_API_KEY = "test-key"
    yield model_server
    model_server.reset()


@pytest.fixture
def worker(module_worker, transactional_db, demo, fake_openai, simulated_provider):
    """The module's worker, alive, with the demo data and an empty script."""
    assert module_worker.process.poll() is None, f"worker died:\n{module_worker.log()[-3000:]}"
    return module_worker


@pytest.fixture
def extra_workers(request, model_server, worker):
    """Start `count` more workers like the module's one; they stop at the end of the test."""
    started: list[WorkerProcess] = []

    def start(count: int) -> list[WorkerProcess]:
        for index in range(count):
            started.append(start_worker(model_server, request.module, f"acc-extra-{index}"))
        return started

    yield start
    for process in started:
        process.stop()


def api_as(username: str) -> APIClient:
    client = APIClient()
    client.force_authenticate(get_user_model().objects.get(username=username))
    return client


def post_run(
    message: str,
    *,
    reference: str = "TCK-1001",
    username: str = "agent",
    client: APIClient | None = None,
) -> str:
    """Start a run through the API; returns its id."""
    response = (client or api_as(username)).post(
        f"/api/tickets/{reference}/runs/", {"message": message}, format="json"
    )
    assert response.status_code == 202, response.content
    assert response.json()["status"] == "queued"
    return response.json()["id"]


def wait_for_run(run_id: str, worker: WorkerProcess, *, timeout: float = 30.0) -> AgentRun:
    """Poll the database until the run has ended."""
    wait_for(
        lambda: AgentRun.objects.filter(pk=run_id, status__in=FINISHED).exists(),
        timeout=timeout,
        what=f"run {run_id} to end",
        worker=worker,
    )
    return AgentRun.objects.get(pk=run_id)


def tasks_received(worker: WorkerProcess, task_name: str) -> int:
    """How many deliveries of `task_name` the worker has logged so far."""
    return len(re.findall(rf"Task {re.escape(task_name)}\[[^\]]+\] received", worker.log()))
