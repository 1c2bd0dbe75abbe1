import logging
import os
from contextvars import Token
from pathlib import Path

from celery import Celery, bootsteps, signals
from celery.fixups.django import DjangoFixup, DjangoWorkerFixup
from django.conf import settings
from django.db import close_old_connections, transaction
from kombu.exceptions import OperationalError as BrokerOperationalError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from config.health import record_sweep, record_worker_heartbeat, sweep_task_names
from config.logs import (
    LogContextFilter,
    bind_log_context,
    current_log_context,
    reset_log_context,
)

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
    (config/broker.py) and the SQLite backend the database's (config/sqlite/base.py)."""
    Path(sender.conf.beat_schedule_filename).parent.mkdir(parents=True, exist_ok=True)


# --- Operations: the log context across processes, heartbeats, sweep times -----------------

# The message header that carries the enqueuing request's id to the task (config/logs.py).
REQUEST_ID_HEADER = "desk_request_id"
_task_log_tokens: dict[str, Token] = {}


@signals.before_task_publish.connect
def pass_the_request_id_on(headers=None, **kwargs) -> None:
    """A task enqueued while serving a request, or by a task that inherited one, carries its
    id: one id follows an approval into its execution and a run through all its steps."""
    request_id = current_log_context().get("request_id")
    if request_id and headers is not None:
        headers.setdefault(REQUEST_ID_HEADER, request_id)


def _inherited_request_id(task) -> str | None:
    # A worker puts a message's headers on the task's request; apply() keeps them in .headers.
    request = task.request
    return getattr(request, REQUEST_ID_HEADER, None) or (request.headers or {}).get(
        REQUEST_ID_HEADER
    )


@signals.task_prerun.connect
def enter_task_log_context(task_id=None, task=None, **kwargs) -> None:
    if task_id and task is not None:
        token = bind_log_context(request_id=_inherited_request_id(task))
        _task_log_tokens[task_id] = token


@signals.task_postrun.connect
def leave_task_log_context(task_id=None, **kwargs) -> None:
    token = _task_log_tokens.pop(task_id, None) if task_id else None
    if token is not None:
        reset_log_context(token)


@signals.after_setup_logger.connect
@signals.after_setup_task_logger.connect
def show_log_context(logger=None, **kwargs) -> None:
    """Celery replaces the settings' log handlers with its own in a worker or beat; its
    formats (CELERY_WORKER_LOG_FORMAT) end with the log context, which this filter adds."""
    for handler in logger.handlers if logger is not None else ():
        if not any(isinstance(existing, LogContextFilter) for existing in handler.filters):
            handler.addFilter(LogContextFilter())


@signals.task_success.connect
def record_sweep_success(sender=None, **kwargs) -> None:
    """A periodic sweep finished: /healthz and /metrics measure beat's lag from here."""
    if sender is None or sender.name not in sweep_task_names():
        return
    try:
        record_sweep(sender.name)
    except Exception as exc:  # the sweep did its work; only the record of it is lost
        logger.warning("Could not record that %s ran (%s)", sender.name, type(exc).__name__)


def record_heartbeat() -> None:
    try:
        record_worker_heartbeat()
    except Exception as exc:  # the next beat tries again; /healthz says stale meanwhile
        logger.warning("Could not record the worker heartbeat (%s)", type(exc).__name__)


class WorkerHeartbeat(bootsteps.StartStopStep):
    """Records, when the worker's consumer has connected to the broker and every
    WORKER_HEARTBEAT_S after, that a worker is alive (config/health.py). A consumer step: it
    stops while the consumer has lost the broker and starts again when it is back, so the
    heartbeat means "alive and connected", not just "the process exists". The worker's timer
    runs it, with the filesystem transport (a timer thread) as with Redis (the event loop)."""

    # After the consumer has started taking tasks off its queues.
    requires = ("celery.worker.consumer.tasks:Tasks",)

    def __init__(self, parent, **kwargs):
        super().__init__(parent, **kwargs)
        self.timer_entry = None

    def start(self, parent) -> None:
        record_heartbeat()
        self.timer_entry = parent.timer.call_repeatedly(
            settings.WORKER_HEARTBEAT_S, record_heartbeat
        )

    def stop(self, parent) -> None:
        if self.timer_entry is not None:
            self.timer_entry.cancel()
            self.timer_entry = None

    shutdown = stop


app.steps["consumer"].add(WorkerHeartbeat)
