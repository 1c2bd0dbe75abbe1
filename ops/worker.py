"""The Celery app's operations: the log context carried from whoever enqueues a task to the
worker that runs it, the worker's heartbeat and the times the periodic sweeps last ran
(/healthz and /metrics read both).

Imported by OpsConfig.ready(): config/celery.py makes the app and imports no app. A worker
and beat set Django up (Celery's Django fix-up, when they import the task modules) before they
configure logging and build the consumer, so these handlers and the heartbeat step are in
place by then; a web process has them from its own start.
"""

import logging
from contextvars import Token

from celery import bootsteps, signals
from django.conf import settings

from config.celery import app as celery_app
from config.log_context import bind_log_context, current_log_context, reset_log_context
from ops.health import record_sweep, record_worker_heartbeat, sweep_task_names
from ops.logs import LogContextFilter

logger = logging.getLogger(__name__)


# The message header that carries the enqueuing request's id to the task (config/log_context.py).
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
    WORKER_HEARTBEAT_S after, that a worker is alive (ops/health.py). A consumer step: it
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


celery_app.steps["consumer"].add(WorkerHeartbeat)
