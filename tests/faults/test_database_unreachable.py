"""The database cannot be reached: the API and the pages answer 503 with Retry-After, not a
500, so clients and proxies know to try again (the desk is not broken, its database is away).

Each request is made in a process of its own whose DATABASE_URL points at a port nothing
listens on: the shared server is never stopped."""

import json
import os
import subprocess
import sys

from tests.services import BASE_DIR

# Nothing listens on port 1.
UNREACHABLE = "postgres://desk:hunter2@127.0.0.1:1/refund_desk_o1"

_REQUEST = """
import json, sys
import django

django.setup()
from django.test import Client

path, headers = sys.argv[1], json.loads(sys.argv[2])
response = Client(HTTP_HOST="localhost", raise_request_exception=False).get(path, **headers)
print(json.dumps({
    "status": response.status_code,
    "retry_after": response.get("Retry-After"),
    "content_type": response["Content-Type"],
    "body": response.content.decode(),
}))
"""


def get_without_database(path: str, **headers: str) -> dict:
    completed = subprocess.run(
        [sys.executable, "-c", _REQUEST, path, json.dumps(headers)],
        cwd=BASE_DIR,
        env={
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DJANGO_DEBUG": "false",
            "DATABASE_URL": UNREACHABLE,
        },
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout.strip().splitlines()[-1])


def test_an_api_request_answers_503_with_retry_after_while_the_database_is_unreachable():
    answer = get_without_database("/api/tickets/", HTTP_AUTHORIZATION="Token " + "a" * 40)

    assert (answer["status"], answer["retry_after"], answer["content_type"]) == (
        503,
        "5",
        "application/json",
    )
    assert json.loads(answer["body"]) == {
        "message": "The database cannot be reached right now; try again in 5 seconds.",
        "code": "database_unavailable",
        "extra": {"retry_after": 5},
    }


def test_a_page_answers_503_with_retry_after_while_the_database_is_unreachable():
    answer = get_without_database("/tickets/", HTTP_COOKIE="sessionid=" + "a" * 32)

    assert (answer["status"], answer["retry_after"], answer["content_type"]) == (
        503,
        "5",
        "text/html; charset=utf-8",
    )
    assert "The desk cannot reach its database right now." in answer["body"]
    # Nothing about where the database is or who connects to it
    told = [word for word in ("hunter2", "127.0.0.1", "refund_desk_o1") if word in answer["body"]]
    assert told == []
