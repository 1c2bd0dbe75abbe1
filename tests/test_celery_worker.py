from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from refunds.models import RefundRequest
from refunds.tasks import expire_confirmations
from tests.factories import RefundProposalFactory
from tests.services import wait_for


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


def worker_connections() -> set[tuple]:
    """(pid, started) of the database's connections other than this test's own."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid, backend_start FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        return set(cursor.fetchall())


def run_task(worker) -> None:
    sent = expire_confirmations.delay()
    wait_for(lambda: worker.finished(sent), what="the task", worker=worker)


@pytest.mark.services
def test_a_worker_keeps_its_database_connection_from_task_to_task(postgres, celery_worker):
    # Given a worker that has run a task
    run_task(celery_worker)
    after_one = worker_connections()

    # When it runs five more
    for _ in range(5):
        run_task(celery_worker)

    # Then they all used the connection it had (Celery's own fix-up closes it after every
    # task, and the next one connects again)
    assert after_one
    assert worker_connections() == after_one


@pytest.mark.services
def test_a_worker_replaces_a_connection_that_died_between_tasks(
    postgres, celery_worker, agent_user
):
    # Given a worker whose connection the database dropped while it was idle
    run_task(celery_worker)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
    wait_for(lambda: not worker_connections(), what="the connection to close")
    lapsed = RefundProposalFactory(requested_by=agent_user)
    lapsed.confirmations.update(expires_at=timezone.now() - timedelta(minutes=1))

    # When the next task comes
    run_task(celery_worker)

    # Then it ran on a new connection
    lapsed.refresh_from_db()
    assert lapsed.status == RefundRequest.Status.EXPIRED
    assert "OperationalError" not in celery_worker.log()
