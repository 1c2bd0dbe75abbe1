"""Periodic housekeeping of the desk's data."""

import logging

from celery import shared_task

from ops.retention import purge_expired_data, retention_cutoff

logger = logging.getLogger(__name__)


@shared_task
def purge_data() -> dict[str, int]:
    """Daily (beat): what is older than DATA_RETENTION_DAYS goes (ops/retention.py). Safe to
    run twice: what is purged is never selected again."""
    counts = purge_expired_data(cutoff=retention_cutoff())
    logger.info("Purged data past retention: %s", counts)
    return counts
