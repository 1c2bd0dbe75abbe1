"""The desk's MCP server over stdio, for a host that starts it as a local process.

The process is the session: DESK_TOKEN and DESK_TICKET in its environment are checked once,
as the HTTP gate checks the headers, and bind the one McpSession every request belongs to.
Each later request checks the token again, so revoking it, or deactivating its user, stops a
running host. A server that may not start still speaks MCP, answering every request with the
refusal, so the host shows why instead of a closed pipe.
"""

import logging
import os
import uuid
from functools import partial

from mcp.server import Server
from mcp.server.context import CallNext, HandlerResult
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_REQUEST

from agent.mcp.auth import (
    SessionRefused,
    authenticated_token,
    session_scope,
    token_from_environment,
)
from agent.mcp.server import Context, build_server, in_db_thread
from agent.mcp.sessions import mcp_session_end, mcp_session_start
from agent.models import McpSession

logger = logging.getLogger(__name__)

TOKEN_VARIABLE = "DESK_TOKEN"
TICKET_VARIABLE = "DESK_TICKET"


def start_session(token: str | None, ticket_reference: str | None) -> McpSession:
    key = token_from_environment(token)
    scope = session_scope(
        token=authenticated_token(key),
        ticket_reference=ticket_reference,
        source=f"the {TICKET_VARIABLE} environment variable",
    )
    return mcp_session_start(scope=scope, transport=McpSession.Transport.STDIO)


def token_still_valid(key: str, session: McpSession) -> None:
    if authenticated_token(key).pk != session.token_id:
        raise SessionRefused(401, "token_invalid", "The MCP token is not valid.")


async def serve_stdio() -> SessionRefused | None:
    """Serve until the host closes stdin; the refusal, when the session may not start."""
    token, ticket = os.environ.get(TOKEN_VARIABLE), os.environ.get(TICKET_VARIABLE)
    try:
        session = await in_db_thread(partial(start_session, token, ticket))
    except SessionRefused as refusal:
        logger.error("MCP session refused: %s", refusal.message)
        await _run(refusing_server(refusal))
        return refusal
    key = token_from_environment(token)
    server = build_server(
        lambda ctx: session.pk, still_authenticated=partial(token_still_valid, key, session)
    )
    try:
        await _run(server)
    finally:
        await in_db_thread(partial(mcp_session_end, session_id=session.pk))
    return None


async def _run(server: Server) -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def refusing_server(refusal: SessionRefused) -> Server:
    """The server, refusing every request that would use the session with `refusal`: the
    handshake of a host that starts with one, otherwise its first request for tools or
    resources (a 2026-07-28 host has no handshake to refuse)."""

    def refuse() -> None:
        raise refusal

    async def refuse_handshake(ctx: Context, call_next: CallNext) -> HandlerResult:
        if ctx.method == "initialize":
            raise MCPError(INVALID_REQUEST, refusal.message, data={"reason": refusal.reason})
        return await call_next(ctx)

    server = build_server(_no_session, still_authenticated=refuse)
    server.middleware.append(refuse_handshake)
    return server


def _no_session(ctx: Context) -> uuid.UUID:
    raise AssertionError("a refused server has no session")
