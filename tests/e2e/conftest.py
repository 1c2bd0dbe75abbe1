"""The real parts around the desk's end-to-end stories: a worker process on this session's
queue, a mail server that holds its answer until told, a folder for attachments, a camera."""

import os
from pathlib import Path

import pytest

from tests.conftest import TEST_QUEUE
from tests.e2e.story import HOLD_LIMIT_S, INBOUND_SECRET, Camera
from tests.fakes.smtp_server import HeldSMTPServer
from tests.services import WorkerProcess


@pytest.fixture
def media_root(tmp_path) -> Path:
    """Where the live server keeps attachments and the worker reads them back to email."""
    directory = tmp_path / "media"
    directory.mkdir()
    return directory


@pytest.fixture
def desk_settings(settings, media_root):
    """The live server's side: the offline planner, inbound email accepted with our secret."""
    settings.LLM_PROVIDER = "offline"
    settings.INBOUND_SECRET = INBOUND_SECRET
    settings.MEDIA_ROOT = media_root


@pytest.fixture
def mail_server():
    server = HeldSMTPServer(HOLD_LIMIT_S).start()
    yield server
    server.stop()


@pytest.fixture
def worker(transactional_db, mail_server, media_root):
    """A real worker on this session's queue: runs the assistant, executes the refund through
    the simulated provider, emails replies to the fake mail server named by EMAIL_URL."""
    process = WorkerProcess(
        TEST_QUEUE,
        log_name="story",
        extra_env={
            "EMAIL_URL": mail_server.url,
            "MEDIA_ROOT": str(media_root),
            "EMAIL_TIMEOUT_S": "30",
            "LLM_PROVIDER": "offline",
            "REFUND_ADAPTER": "simulated",
            "SIMULATED_PROVIDER_MODE": "normal",
            "SIMULATED_PROVIDER_LATENCY_S": "0",
        },
    ).start()
    yield process
    process.stop()


@pytest.fixture
def camera(tmp_path) -> Camera:
    directory = Path(os.environ.get("STORY_SHOTS_DIR") or tmp_path / "shots")
    directory.mkdir(parents=True, exist_ok=True)
    return Camera(directory)
