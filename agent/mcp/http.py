"""The desk's MCP server over streamable HTTP at /mcp (DESIGN §12).

`DeskGate` stands in front of the SDK's transport. Every request must carry a valid MCP token
(a REST API token is refused, DESIGN §17). A request without an `Mcp-Session-Id` opens a
session: the token's user must hold a support role and the ticket (`X-Desk-Ticket`, or the
token's own) must be in the token's scope, else it is refused before the SDK sees it (401 bad
token or inactive user, 403 no support role or out of scope, 400 or 404 for the ticket), with a
JSON-RPC error body the host shows its user. When the SDK answers the opening request with a
session id, the McpSession row is written before the host receives that id. A later request
must belong to a session opened with its token, and may not name another ticket.

Sessions need the handshake: a request in the 2026-07-28 single-exchange era has no session
to bind a scope (or a JSON-RPC id) to, so it is answered -32022 with the handshake versions,
and hosts fall back to `initialize`.
"""

import json
import logging
import uuid
from collections.abc import Callable
from functools import partial
from typing import Any

import uvicorn
from mcp_types import INVALID_REQUEST, UNSUPPORTED_PROTOCOL_VERSION
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agent.mcp.auth import (
    TICKET_HEADER,
    SessionRefused,
    authenticated_token,
    session_scope,
    token_from_header,
)
from agent.mcp.server import Context, build_server, in_db_thread
from agent.mcp.sessions import mcp_session_end, mcp_session_of_token, mcp_session_start
from agent.models import McpSession, McpToken

logger = logging.getLogger(__name__)

MCP_PATH = "/mcp"
SESSION_HEADER = "mcp-session-id"
VERSION_HEADER = "mcp-protocol-version"
# Where the gate leaves the McpSession a request belongs to, for the server's handlers.
SESSION_SCOPE_KEY = "refund_desk.mcp_session"


def session_from_request(ctx: Context) -> uuid.UUID:
    """The session the gate found for this request."""
    if ctx.request is None:
        raise RuntimeError("an HTTP request carries its session; this request has none")
    return ctx.request.scope[SESSION_SCOPE_KEY]


def error_response(status: int, code: int, message: str, data: dict | None = None) -> Response:
    """A JSON-RPC error with no request id (the body is not read), as the SDK's transport
    answers: the SDK's client hands it to the caller of the refused request."""
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    headers = {"WWW-Authenticate": 'Bearer realm="refund-desk"'} if status == 401 else None
    return Response(
        json.dumps({"jsonrpc": "2.0", "id": None, "error": error}),
        status_code=status,
        media_type="application/json",
        headers=headers,
    )


def refusal_response(refusal: SessionRefused) -> Response:
    return error_response(
        refusal.status,
        INVALID_REQUEST,
        refusal.message,
        {"reason": refusal.reason, "status": refusal.status},
    )


class DeskGate:
    """ASGI middleware: authentication and the session's binding, before the SDK."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        try:
            key = token_from_header(headers.get("authorization"))
            token = await in_db_thread(partial(authenticated_token, key))
            transport_session_id = headers.get(SESSION_HEADER)
            if transport_session_id is None:
                await self._open(scope, receive, send, headers=headers, token=token)
            else:
                await self._continue(
                    scope, receive, send, headers=headers, token=token, sid=transport_session_id
                )
        except SessionRefused as refusal:
            await refusal_response(refusal)(scope, receive, send)

    async def _open(
        self, scope: Scope, receive: Receive, send: Send, *, headers: Headers, token: McpToken
    ) -> None:
        """A request with no session: it opens one, bound to the scope decided here."""
        binding = await in_db_thread(
            partial(
                session_scope,
                token=token,
                ticket_reference=headers.get(TICKET_HEADER),
                source=f"the {TICKET_HEADER} header",
            )
        )
        version = headers.get(VERSION_HEADER)
        if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
            await error_response(
                400,
                UNSUPPORTED_PROTOCOL_VERSION,
                "This server binds a user, a role and a ticket to a session when it starts: "
                "connect with the initialize handshake.",
                {"supported": list(HANDSHAKE_PROTOCOL_VERSIONS), "requested": version[:40]},
            )(scope, receive, send)
            return

        async def record_session(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] < 400:
                started = Headers(raw=message.get("headers", [])).get(SESSION_HEADER)
                if started:
                    await in_db_thread(
                        partial(
                            mcp_session_start,
                            scope=binding,
                            transport=McpSession.Transport.HTTP,
                            transport_session_id=started,
                        )
                    )
            await send(message)

        await self.app(scope, receive, record_session)

    async def _continue(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        *,
        headers: Headers,
        token: McpToken,
        sid: str,
    ) -> None:
        """A request of an open session: only with its token, only its ticket."""
        session = await in_db_thread(
            partial(mcp_session_of_token, transport_session_id=sid, token=token)
        )
        if session is None:
            # As the SDK answers an unknown session: the host opens a new one.
            await error_response(404, INVALID_REQUEST, "Session not found")(scope, receive, send)
            return
        named = headers.get(TICKET_HEADER)
        if named is not None and named.strip().upper() != session.ticket.reference:
            raise SessionRefused(
                400,
                "ticket_changed",
                f"This session is bound to {session.ticket.reference}; a session's ticket "
                f"cannot change. Open a new session for {named.strip()[:40]!r}.",
            )
        scope = {**scope, SESSION_SCOPE_KEY: session.pk}
        if scope["method"] == "DELETE":
            send = _on_success(send, partial(mcp_session_end, session_id=session.pk))
        await self.app(scope, receive, send)


def _on_success(send: Send, work: Callable[[], None]) -> Send:
    """`send`, doing `work` once the response starts with a success status."""

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start" and message["status"] < 400:
            await in_db_thread(work)
        await send(message)

    return sending


def http_app(*, host: str) -> ASGIApp:
    """The ASGI application: the gate in front of the SDK's streamable HTTP transport."""
    server = build_server(session_from_request)
    # On a loopback host the SDK also refuses other Host and Origin headers (DNS rebinding).
    return DeskGate(server.streamable_http_app(streamable_http_path=MCP_PATH, host=host))


def serve_http(*, host: str, port: int) -> None:
    uvicorn.run(http_app(host=host), host=host, port=port, log_level="info", lifespan="on")
