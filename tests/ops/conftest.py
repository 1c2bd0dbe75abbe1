import json
import os
import subprocess
import sys

import pytest

from ops.health import forget_recorded_times
from tests.services import BASE_DIR


@pytest.fixture
def ops_store():
    """The heartbeat and sweep records, empty before and after the test."""
    forget_recorded_times()
    yield
    forget_recorded_times()


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
