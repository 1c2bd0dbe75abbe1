"""`make run`: the web server and a Celery worker (with beat) side by side; Ctrl-C stops both."""

import argparse
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

import environ

BASE_DIR = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def banner(url: str) -> str:
    password = os.environ.get("DEMO_PASSWORD", "demo-pass-123")
    database = os.environ.get("DATABASE_URL", "sqlite (var/db.sqlite3)")
    broker = os.environ.get("REDIS_URL", "filesystem (var/broker/)")
    mail = os.environ.get("EMAIL_URL", "written to var/mail/ as files")
    return "\n".join(
        [
            "",
            f"  Refund Desk is running at {url}",
            f"  Demo logins (password {password}):",
            "    agent, agent2     support agents (propose refunds up to 500.00)",
            "    supervisor        support supervisor (up to 5000.00)",
            "    intern            read-only assistant",
            "    reviewer, reviewer2  approve refunds at /review/",
            "    admin             superuser, Django admin at /admin/",
            f"  Database: {database}   Broker: {broker}",
            f"  Replies to customers: {mail}",
            *inbound_email_lines(os.environ),
            "  Press Ctrl-C to stop the web server and the worker.",
            "",
        ]
    )


def inbound_email_lines(environment: Mapping[str, str]) -> list[str]:
    """Whether customer email reaches the desk, and how to turn it on when it does not: without
    INBOUND_SECRET the inbound endpoint answers 503 and a customer's reply is never seen."""
    if environment.get("INBOUND_SECRET"):
        return [
            "  Inbound email: on (POST /api/inbound/email/ with header X-Inbound-Secret;"
            " README: Inbound email)"
        ]
    return [
        "  Inbound email: off (customer email does not reach the desk). To turn it on, set",
        '    INBOUND_SECRET in .env to 32+ random characters (python -c "import secrets;'
        ' print(secrets.token_urlsafe(32))")',
        "    and restart; your mail gateway then posts to /api/inbound/email/ with it.",
    ]


def child_environment(environment: Mapping[str, str]) -> dict[str, str]:
    """The environment of the web server and the worker: DEBUG on for the developer (static
    files served, debug pages) and replies written to var/mail/ as files, each unless already
    set."""
    return {
        "DJANGO_DEBUG": "true",
        "EMAIL_URL": "filemail://var/mail",
        **environment,
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", default="8000")
    args = parser.parse_args()
    # As the settings will: so a DJANGO_DEBUG in .env counts as set (and the banner is right).
    environ.Env.read_env(BASE_DIR / ".env", overwrite=False)
    env = child_environment(os.environ)
    processes = [
        subprocess.Popen(
            [
                str(BIN / "celery"),
                "-A",
                "config",
                "worker",
                "-B",
                "--loglevel=INFO",
                "--concurrency=2",
                "--schedule",
                str(BASE_DIR / "var" / "celerybeat-schedule"),
            ],
            cwd=BASE_DIR,
            env=env,
        ),
        subprocess.Popen(
            [sys.executable, "manage.py", "runserver", f"{args.host}:{args.port}"],
            cwd=BASE_DIR,
            env=env,
        ),
    ]
    print(banner(f"http://{args.host}:{args.port}/"), flush=True)
    # Stopped by a supervisor (SIGTERM) rather than Ctrl-C: still stop both children.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        while all(p.poll() is None for p in processes):
            time.sleep(0.5)
        print("A process stopped; shutting the other down.", file=sys.stderr)
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        for process in processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in processes:
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
    return 0


if __name__ == "__main__":
    sys.exit(main())
