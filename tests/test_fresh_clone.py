"""A fresh clone has no var/: importing config creates nothing, and each folder is made by
the first process that needs it."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

BASE_DIR = Path(settings.BASE_DIR)

QUEUE = "fresh-clone"


@pytest.fixture
def clone(tmp_path) -> Path:
    """config/ copied without var/ beside it: processes run here take BASE_DIR from the copy."""
    clone = tmp_path / "clone"
    shutil.copytree(
        BASE_DIR / "config", clone / "config", ignore=shutil.ignore_patterns("__pycache__")
    )
    return clone


@pytest.fixture
def broker(tmp_path) -> Path:
    """Where the clone's processes put the filesystem broker: not made yet."""
    return tmp_path / "broker"


def run_in(clone: Path, broker: Path, code: str) -> None:
    env = {
        "PATH": os.environ["PATH"],
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "CELERY_FILESYSTEM_DIR": str(broker),
        "PYTHONDONTWRITEBYTECODE": "1",
        # The apps come from the checkout; `config` from the clone, which comes first on
        # the path as the working directory.
        "PYTHONPATH": str(BASE_DIR),
    }
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=clone,
        env=env,
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-4000:]


def files_under(root: Path) -> list[str]:
    return sorted(str(path.relative_to(root)) for path in root.rglob("*"))


def test_it_creates_no_folder_when_config_is_imported(tmp_path, clone, broker):
    before = files_under(tmp_path)

    run_in(
        clone,
        broker,
        "import config.settings, config.celery\n"
        "from config.celery import app\n"
        "assert app.conf.broker_url == 'filesystem://'\n",
    )

    assert files_under(tmp_path) == before
    assert not broker.exists()


def test_it_makes_the_broker_folders_on_the_first_publish(clone, broker):
    run_in(
        clone,
        broker,
        "from config.celery import app\n"
        f"app.send_task('refunds.tasks.expire_confirmations', queue={QUEUE!r})\n",
    )

    [message] = os.listdir(broker / "out")
    assert message.endswith(f".{QUEUE}.msg")
    body = json.loads((broker / "out" / message).read_text())
    assert body["headers"]["task"] == "refunds.tasks.expire_confirmations"
    assert not (clone / "var").exists()


def test_it_makes_the_database_folder_on_the_first_connection(clone, broker):
    run_in(clone, broker, "from django.db import connection\nconnection.ensure_connection()\n")

    assert (clone / "var" / "db.sqlite3").is_file()
    assert not broker.exists()


def test_it_makes_the_beat_schedule_folder_when_a_worker_starts(clone, broker):
    run_in(clone, broker, "from config.celery import app\napp.loader.init_worker()\n")

    assert (clone / "var").is_dir()
    # Nothing else yet, bar the folder of the shared file cache, which Django's cache makes
    # when the worker sets up its connections.
    assert set(os.listdir(clone / "var")) <= {"cache"}
