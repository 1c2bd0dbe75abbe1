"""An MCP host for the tests: the official `mcp` client over real HTTP or stdio, against
`manage.py mcp_server` running in its own process on the test database."""

import json
import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
from django.contrib.auth import get_user_model
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from agent.mcp_tokens import mcp_token_issue
from agent.untrusted import untrusted_blocks
from tests.factories import api_token_key
from tests.services import BASE_DIR, database_url_for_subprocess
from tickets.models import Ticket

# What the server process needs from this one's environment; the stdio client passes on
# nothing else.
PASSED_ON = ("CELERY_FILESYSTEM_DIR", "REDIS_URL", "TEST_DB_SUFFIX", "LOG_LEVEL")


def server_environment() -> dict[str, str]:
    passed = {name: os.environ[name] for name in PASSED_ON if name in os.environ}
    return {**passed, "DATABASE_URL": database_url_for_subprocess()}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class HttpServer:
    """`manage.py mcp_server` serving streamable HTTP in a subprocess."""

    def __init__(self):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.log_path = BASE_DIR / "var" / f"test-mcp-{uuid.uuid4().hex[:8]}.log"
        self.process: subprocess.Popen | None = None

    def start(self, timeout: float = 30.0) -> "HttpServer":
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = self.log_path.open("w")
        self.process = subprocess.Popen(
            [sys.executable, "manage.py", "mcp_server", "--port", str(self.port)],
            cwd=BASE_DIR,
            env={**os.environ, **server_environment()},
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the MCP server exited early:\n{self.log()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return self
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"the MCP server did not listen after {timeout}s:\n{self.log()}")

    def log(self) -> str:
        return self.log_path.read_text() if self.log_path.exists() else ""

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        if getattr(self, "_log", None):
            self._log.close()
        self.log_path.unlink(missing_ok=True)


def run_host(work: Callable[..., Awaitable[Any]], *args) -> Any:
    """Run a host's async `work` with an event loop of its own, on a thread of its own: the
    test's thread may already have a loop running (Playwright's sync API leaves one there for
    the browser tests). `work` must not touch the database: Django would give code in an
    event loop a connection of its own that nothing closes."""
    outcome: dict[str, Any] = {}

    def host() -> None:
        try:
            outcome["value"] = anyio.run(work, *args)
        except BaseException as raised:  # re-raised on the test's thread
            outcome["raised"] = raised

    thread = threading.Thread(target=host, name="mcp-host")
    thread.start()
    thread.join()
    if "raised" in outcome:
        raise outcome["raised"]
    return outcome["value"]


def token_for(username: str, reference: str = "TCK-1001", *, days: int = 1) -> str:
    """An MCP token of `username` for the customer of ticket `reference` (so a session names
    its ticket, as a host configured with X-Desk-Ticket does)."""
    user = get_user_model().objects.get(username=username)
    customer = Ticket.objects.get(reference=reference).customer
    return mcp_token_issue(user=user, customer=customer, days=days).key


def rest_token_for(username: str) -> str:
    user = get_user_model().objects.get(username=username)
    return api_token_key(user)


def desk_headers(token: str | None, ticket: str | None = "TCK-1001") -> dict[str, str]:
    headers = {}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    if ticket is not None:
        headers["X-Desk-Ticket"] = ticket
    return headers


@asynccontextmanager
async def http_host(
    url: str,
    *,
    token: str | None,
    ticket: str | None = "TCK-1001",
    transport: httpx2.AsyncBaseTransport | None = None,
    mode: str = "auto",
) -> AsyncIterator[Client]:
    """A connected client, configured the way a host is: two fixed headers."""
    http = httpx2.AsyncClient(
        headers=desk_headers(token, ticket), transport=transport, timeout=30.0
    )
    async with http, Client(streamable_http_client(url, http_client=http), mode=mode) as client:
        yield client


def stdio_parameters(env: dict[str, str]) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["manage.py", "mcp_server", "--stdio"],
        cwd=str(BASE_DIR),
        env={**server_environment(), **env},
    )


@asynccontextmanager
async def stdio_host(
    *, token: str | None, ticket: str | None = "TCK-1001", mode: str = "auto"
) -> AsyncIterator[Client]:
    env = {}
    if token is not None:
        env["DESK_TOKEN"] = token
    if ticket is not None:
        env["DESK_TICKET"] = ticket
    async with Client(stdio_parameters(env), mode=mode) as client:
        yield client


def mcp_error(raised: BaseException) -> MCPError | None:
    """The MCPError a client raised, possibly inside the exception groups of its tasks."""
    if isinstance(raised, MCPError):
        return raised
    for inner in getattr(raised, "exceptions", ()):
        found = mcp_error(inner)
        if found is not None:
            return found
    return None


def result_json(result) -> dict:
    """The JSON of a tool result, out of the untrusted block it arrives in."""
    (text,) = [block.text for block in result.content]
    (body,) = untrusted_blocks(text)
    return json.loads(body)
