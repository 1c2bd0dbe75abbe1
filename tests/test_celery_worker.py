import uuid
from datetime import timedelta

import pytest
from celery import current_app
from django.utils import timezone

from refunds.models import RefundRequest
from refunds.tasks import expire_confirmations
from tests.factories import RefundProposalFactory
from tests.services import (
    WorkerProcess,
    backends,
    terminate_backends,
    wait_for,
)


@pytest.mark.services
def test_a_real_worker_executes_a_task_from_the_real_broker(celery_worker, agent_user):
    """Redis in CI, the filesystem transport on a laptop."""
    lapsed = RefundProposalFactory(requested_by=agent_user)
    lapsed.confirmations.update(expires_at=timezone.now() - timedelta(minutes=1))

    sent = expire_confirmations.delay()

    wait_for(lambda: celery_worker.finished(sent), what="the task", worker=celery_worker)
    lapsed.refresh_from_db()
    assert lapsed.status == RefundRequest.Status.EXPIRED
    assert "refunds.tasks.expire_confirmations" in celery_worker.log()


@pytest.fixture
def named_worker(transactional_db):
    """A real worker whose connections pg_stat_activity shows under its own name."""
    worker = WorkerProcess(
        current_app.conf.task_default_queue, application_name=f"kept-{uuid.uuid4().hex[:8]}"
    ).start()
    yield worker
    worker.stop()


def run_task(worker) -> None:
    sent = expire_confirmations.delay()
    wait_for(lambda: worker.finished(sent), what="the task", worker=worker)


@pytest.mark.services
def test_a_worker_keeps_its_database_connection_from_task_to_task(postgres, named_worker):
    # Given a worker that has run a task
    run_task(named_worker)
    after_one = backends(named_worker.application_name)

    # When it runs five more
    for _ in range(5):
        run_task(named_worker)

    # Then they all used the connection it had (Celery's own fix-up closes it after every
    # task, and the next one connects again)
    assert after_one
    assert backends(named_worker.application_name) == after_one


@pytest.mark.services
def test_a_worker_replaces_a_connection_that_died_between_tasks(postgres, named_worker, agent_user):
    # Given a worker whose connection the database dropped while it was idle
    run_task(named_worker)
    assert terminate_backends(named_worker.application_name) >= 1
    wait_for(lambda: not backends(named_worker.application_name), what="the connection to close")
    lapsed = RefundProposalFactory(requested_by=agent_user)
    lapsed.confirmations.update(expires_at=timezone.now() - timedelta(minutes=1))

    # When the next task comes
    run_task(named_worker)

    # Then it ran on a new connection
    lapsed.refresh_from_db()
    assert lapsed.status == RefundRequest.Status.EXPIRED
    assert "OperationalError" not in named_worker.log()
