import logging
import os
from pathlib import Path

from celery import Celery, signals
from celery.fixups.django import DjangoFixup, DjangoWorkerFixup
from django.db import close_old_connections, transaction
from kombu.exceptions import OperationalError as BrokerOperationalError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

logger = logging.getLogger(__name__)


class KeptConnectionsWorkerFixup(DjangoWorkerFixup):
    """Celery's Django fix-up for a worker, except that between tasks the worker's database
    connections get the care Django gives them between requests: one that broke or outlived
    CONN_MAX_AGE is replaced, a healthy one is kept (its next query checks it first,
    CONN_HEALTH_CHECKS, or is the check itself: config/connections.py). Celery's own closes
    every connection before and after every task, so each step of a run would connect anew,
    and lose the statements it had prepared."""

    def close_database(self, **kwargs) -> None:
        close_old_connections()


class DeskDjangoFixup(DjangoFixup):
    """The fix-up Celery installs for Django, with KeptConnectionsWorkerFixup in workers."""

    _worker_fixup: DjangoWorkerFixup | None

    @property
    def worker_fixup(self) -> DjangoWorkerFixup:
        if self._worker_fixup is None:
            self._worker_fixup = KeptConnectionsWorkerFixup(self.app)
        return self._worker_fixup

    @worker_fixup.setter
    def worker_fixup(self, value: DjangoWorkerFixup) -> None:
        self._worker_fixup = value


def desk_fixups(celery_app: Celery) -> DjangoFixup:
    return DeskDjangoFixup(celery_app).install()


app = Celery("refund_desk", fixups=["config.celery:desk_fixups"])
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# What a publish raises when the broker cannot be reached: Celery wraps the transport's
# connection errors in kombu's OperationalError once its (bounded) publish retries are spent;
# the others can still escape from a connection that dies mid-publish.
BROKER_UNAVAILABLE = (BrokerOperationalError, RedisConnectionError, RedisTimeoutError, OSError)


def enqueue_on_commit(task_name: str, *args, **kwargs) -> None:
    """Send the task named `task_name` with these arguments once the current transaction
    commits.

    By name, so that a service never imports its app's tasks module (the tasks call the
    services): the message carries only the name, as `task.delay` would send it.
    A broker that is down must not turn a committed change into an error page: the rows are
    saved by then and a periodic sweep (reconcile_refunds, resume_stalled_runs) finds work
    whose task was never queued. So a failed publish is logged, not raised.
    """

    def publish() -> None:
        try:
            sent = app.send_task(task_name, args=args, kwargs=kwargs)
        except BROKER_UNAVAILABLE as exc:
            logger.error(
                "Could not enqueue %s%r: broker unavailable (%s); the periodic sweep "
                "will pick the work up",
                task_name,
                args,
                exc,
            )
        else:
            # The link between the request that did the work and the worker that carries it
            # on: the worker's lines name the same task id and request id.
            logger.info("Enqueued %s%r as task %s", task_name, args, getattr(sent, "id", "?"))

    transaction.on_commit(publish)


@signals.import_modules.connect
def make_beat_schedule_folder(sender, **kwargs) -> None:
    """A worker or beat is starting: the beat schedule file's folder (var/ on a fresh clone)
    must exist before `-B` opens it. The filesystem broker makes its own folders
    (ops/broker.py) and the SQLite backend the database's (config/sqlite/base.py)."""
    Path(sender.conf.beat_schedule_filename).parent.mkdir(parents=True, exist_ok=True)
