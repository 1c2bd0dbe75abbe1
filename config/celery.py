import logging
import os
from pathlib import Path

from celery import Celery
from django.db import transaction
from kombu.exceptions import OperationalError as BrokerOperationalError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

logger = logging.getLogger(__name__)

app = Celery("refund_desk")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# What a publish raises when the broker cannot be reached: Celery wraps the transport's
# connection errors in kombu's OperationalError once its (bounded) publish retries are spent;
# the others can still escape from a connection that dies mid-publish.
BROKER_UNAVAILABLE = (BrokerOperationalError, RedisConnectionError, RedisTimeoutError, OSError)


def enqueue_on_commit(task, *args, **kwargs) -> None:
    """`task.delay(*args, **kwargs)` once the current transaction commits.

    A broker that is down must not turn a committed change into an error page: the rows are
    saved by then and a periodic sweep (reconcile_refunds, resume_stalled_runs) finds work
    whose task was never queued. So a failed publish is logged, not raised.
    """
    def publish() -> None:
        try:
            task.delay(*args, **kwargs)
        except BROKER_UNAVAILABLE as exc:
            logger.error("Could not enqueue %s%r: broker unavailable (%s); the periodic sweep "
                         "will pick the work up", task.name, args, exc)

    transaction.on_commit(publish)


def ensure_filesystem_broker_folders() -> None:
    """Kombu's filesystem transport expects its folders to exist."""
    options = app.conf.broker_transport_options or {}
    for key in ("data_folder_in", "data_folder_out", "processed_folder", "control_folder"):
        if options.get(key):
            Path(options[key]).mkdir(parents=True, exist_ok=True)


if app.conf.broker_url == "filesystem://":
    ensure_filesystem_broker_folders()
