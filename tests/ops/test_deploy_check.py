"""`manage.py check --deploy` passes with production settings, and refuses the public
development key; `make run` and the test suite still speak plain http."""

import secrets
import subprocess
import sys
from pathlib import Path

from ops import devserver
from tests.services import BASE_DIR


def production_environment(tmp_path: Path, **extra: str) -> dict[str, str]:
    """What an operator sets: a key of their own, DEBUG off, their host; nothing else."""
    return {
        "PATH": "/usr/bin:/bin",
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
        "DJANGO_DEBUG": "false",
        "ALLOWED_HOSTS": "desk.example.com",
        **extra,
    }


def run_in(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args],
        cwd=BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def secure_settings(env: dict[str, str]) -> str:
    code = (
        "from django.conf import settings as s; print(s.SECURE_SSL_REDIRECT, "
        "s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.SECURE_HSTS_SECONDS)"
    )
    result = run_in(env, "-c", code)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_it_passes_the_deploy_check_with_production_settings(tmp_path):
    env = production_environment(tmp_path)

    result = run_in(env, "manage.py", "check", "--deploy", "--fail-level", "WARNING")

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "System check identified no issues (1 silenced)."


def test_it_refuses_the_public_development_key_in_the_deploy_check(tmp_path):
    env = production_environment(tmp_path)
    del env["DJANGO_SECRET_KEY"]

    result = run_in(env, "manage.py", "check", "--deploy")

    assert result.returncode == 1
    assert "(config.E001) DJANGO_SECRET_KEY is unset: the development key is public." in (
        result.stderr
    )


def test_it_redirects_to_https_and_secures_cookies_by_default_with_debug_off(tmp_path):
    assert secure_settings(production_environment(tmp_path)) == "True True True 31536000"


def test_it_serves_plain_http_under_make_run(tmp_path):
    env = production_environment(tmp_path)
    del env["DJANGO_DEBUG"]

    assert secure_settings(devserver.child_environment(env)) == "False False False 0"


def test_it_serves_plain_http_when_told_with_debug_off(tmp_path):
    assert secure_settings(production_environment(tmp_path, DJANGO_HTTPS="false")) == (
        "False False False 0"
    )
