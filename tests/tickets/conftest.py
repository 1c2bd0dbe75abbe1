"""Fixtures for the ticket tests."""

import pytest

from config.celery import app as celery_app


@pytest.fixture
def published(monkeypatch) -> list[tuple[str, tuple]]:
    """Every task published (its name and arguments), recorded instead of sent to the broker;
    `deliver` then runs them here, as a worker would."""
    tasks: list[tuple[str, tuple]] = []

    def send_task(name, args=(), kwargs=None, **options):
        tasks.append((name, tuple(args)))

    monkeypatch.setattr(celery_app, "send_task", send_task)
    return tasks
