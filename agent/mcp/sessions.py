"""The McpSession record: started once with its scope, seen on every request, ended when the
host closes it."""

import uuid

from django.utils import timezone

from agent.context import McpContext
from agent.mcp.auth import SessionScope
from agent.models import McpSession, McpToken

CLIENT_NAME_CHARS = 200
CLIENT_VERSION_CHARS = 100


def mcp_session_start(
    *, scope: SessionScope, transport: str, transport_session_id: str = ""
) -> McpSession:
    return McpSession.objects.create(
        user=scope.user,
        role=scope.role,
        ticket=scope.ticket,
        customer=scope.customer,
        token=scope.token,
        transport=transport,
        transport_session_id=transport_session_id,
    )


def mcp_session_of_token(*, transport_session_id: str, token: McpToken) -> McpSession | None:
    """The open HTTP session with that Mcp-Session-Id, if it was opened with `token`.

    A session opened with another token is answered like one that does not exist: a session
    id is not a credential, and what exists is not revealed.
    """
    return (
        McpSession.objects.select_related("ticket")
        .filter(transport_session_id=transport_session_id, token=token, ended_at__isnull=True)
        .first()
    )


def mcp_session_seen(
    *, session_id: uuid.UUID, client_name: str = "", client_version: str = ""
) -> None:
    """Note a request of the session, and the host's name and version once it has said them."""
    fields: dict[str, object] = {"last_seen_at": timezone.now()}
    if client_name:
        fields["client_name"] = client_name[:CLIENT_NAME_CHARS]
        fields["client_version"] = client_version[:CLIENT_VERSION_CHARS]
    McpSession.objects.filter(pk=session_id).update(**fields)


def mcp_session_end(*, session_id: uuid.UUID) -> None:
    McpSession.objects.filter(pk=session_id, ended_at__isnull=True).update(ended_at=timezone.now())


def mcp_context(session_id: uuid.UUID) -> McpContext:
    """The scope the session was bound with when it started, for its tools."""
    return McpContext.for_session(McpSession.objects.select_related("user").get(pk=session_id))
