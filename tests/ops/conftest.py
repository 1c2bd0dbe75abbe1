import io
import json
import logging
import os
import subprocess
import sys

import pytest

from config.health import forget_recorded_times
from tests.services import BASE_DIR


@pytest.fixture
def ops_store():
    """The heartbeat and sweep records, empty before and after the test."""
    forget_recorded_times()
    yield
    forget_recorded_times()


@pytest.fixture
def printed():
    """Everything the configured log handlers print during the test, formatted as in
    production, in one stream."""
    loggers = [
        logging.getLogger(),
        *(
            logger
            for logger in logging.Logger.manager.loggerDict.values()
            if isinstance(logger, logging.Logger)
        ),
    ]
    # Exactly StreamHandler: pytest's capturing handlers are subclasses.
    handlers = {
        handler
        for logger in loggers
        for handler in logger.handlers
        if type(handler) is logging.StreamHandler
    }
    assert handlers, "no configured log handler to read"
    stream = io.StringIO()
    previous = {handler: handler.setStream(stream) for handler in handlers}
    yield stream
    for handler, old in previous.items():
        handler.setStream(old)


# A process of its own, so that its settings (DATABASE_URL, REDIS_URL, ...) can point at a
# server that is not there.
_FETCH_HEALTHZ = """
import json
import django

django.setup()
from django.test import Client

response = Client(HTTP_HOST="localhost").get("/healthz")
print(json.dumps({"status_code": response.status_code, "body": response.json()}))
"""


def healthz_in_another_process(**environment: str) -> tuple[int, dict]:
    completed = subprocess.run(
        [sys.executable, "-c", _FETCH_HEALTHZ],
        cwd=BASE_DIR,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", **environment},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    answer = json.loads(completed.stdout.strip().splitlines()[-1])
    return answer["status_code"], answer["body"]
