"""DEBUG is off unless `make run` turns it on for the developer: a production start never
shows a debug page, and the dev server still answers the API with DEBUG off (DESIGN §3)."""

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from django.conf import settings

from ops import devserver

BASE_DIR = Path(settings.BASE_DIR)


def clean_environment(tmp_path: Path, **extra: str) -> dict[str, str]:
    """Only what a process needs to start; a database of its own, never the test database."""
    return {
        "PATH": os.environ["PATH"],
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        **extra,
    }


def skip_if_dotenv_sets_debug() -> None:
    """Settings read BASE_DIR/.env; a developer's DJANGO_DEBUG there is not the default."""
    dotenv = BASE_DIR / ".env"
    if dotenv.exists() and any(
        line.strip().startswith("DJANGO_DEBUG") for line in dotenv.read_text().splitlines()
    ):
        pytest.skip(".env sets DJANGO_DEBUG")


def printed_by(code: str, env: dict[str, str]) -> str:
    """What `python -c code` prints, started in BASE_DIR with nothing but `env` (the settings
    a process of its own reads from that environment)."""
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return result.stdout


def debug_setting(env: dict[str, str]) -> str:
    return printed_by("from django.conf import settings; print(settings.DEBUG)", env).strip()


def test_it_turns_debug_off_when_django_debug_is_unset(tmp_path):
    skip_if_dotenv_sets_debug()

    assert debug_setting(clean_environment(tmp_path)) == "False"


def test_it_turns_debug_on_for_the_processes_make_run_starts(tmp_path):
    skip_if_dotenv_sets_debug()

    env = devserver.child_environment(clean_environment(tmp_path))

    assert env["DJANGO_DEBUG"] == "true"
    assert debug_setting(env) == "True"


def test_it_keeps_the_developers_django_debug_under_make_run(tmp_path):
    env = devserver.child_environment(clean_environment(tmp_path, DJANGO_DEBUG="false"))

    assert env["DJANGO_DEBUG"] == "false"
    assert debug_setting(env) == "False"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class DevServer:
    """`manage.py runserver` in a subprocess with the given environment."""

    def __init__(self, env: dict[str, str], log_path: Path):
        self.port = free_port()
        self._log = log_path.open("w")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "manage.py",
                "runserver",
                f"127.0.0.1:{self.port}",
                "--noreload",
                "--skip-checks",
            ],
            cwd=BASE_DIR,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        self.log_path = log_path

    def wait_until_listening(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"runserver exited:\n{self.log_path.read_text()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError(f"runserver not listening:\n{self.log_path.read_text()}")

    def get(self, path: str) -> tuple[int, str, bytes]:
        try:
            with urllib.request.urlopen(
                f"http://127.0.0.1:{self.port}{path}", timeout=10
            ) as response:
                return response.status, response.headers["Content-Type"], response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.headers["Content-Type"], error.read()

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=15)
        self._log.close()


@pytest.fixture
def dev_server(tmp_path):
    servers = []

    def start(env: dict[str, str]) -> DevServer:
        server = DevServer(env, tmp_path / f"runserver-{len(servers)}.log")
        servers.append(server)
        server.wait_until_listening()
        return server

    yield start
    for server in servers:
        server.stop()


def test_it_serves_static_files_under_make_run(tmp_path, dev_server):
    skip_if_dotenv_sets_debug()
    server = dev_server(devserver.child_environment(clean_environment(tmp_path)))

    status, content_type, body = server.get("/static/css/desk.css")

    assert (status, content_type) == (200, "text/css")
    assert body == (BASE_DIR / "static" / "css" / "desk.css").read_bytes()


def test_it_answers_the_api_from_the_dev_server_with_debug_off(tmp_path, dev_server):
    # Over plain http: with DEBUG off the desk otherwise redirects to HTTPS.
    server = dev_server(clean_environment(tmp_path, DJANGO_DEBUG="false", DJANGO_HTTPS="false"))

    status, content_type, body = server.get("/api/tickets/")

    assert (status, content_type) == (401, "application/json")
    assert json.loads(body) == {
        "message": "Authentication credentials were not provided.",
        "code": "not_authenticated",
        "extra": {},
    }
