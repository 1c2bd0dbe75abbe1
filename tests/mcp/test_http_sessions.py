"""Who may open an MCP session over HTTP, and what it stays bound to (DESIGN §12): refused at
session start with the HTTP status and a message the host shows; once open, fixed to its
user and ticket; the bound ticket's resources."""

import json
from datetime import timedelta

import httpx2
import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from agent.mcp_tokens import mcp_token_revoke
from agent.models import McpSession, McpToken, ToolCallLog
from agent.untrusted import untrusted_blocks
from tests.mcp.hosts import desk_headers, http_host, mcp_error, run_host, token_for
from tickets.models import Ticket, TicketMessage

pytestmark = pytest.mark.django_db(transaction=True)

PROTOCOL = "2025-11-25"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": PROTOCOL,
        "capabilities": {},
        "clientInfo": {"name": "raw-host", "version": "0.1"},
    },
}
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def post(url: str, body: dict, headers: dict) -> httpx2.Response:
    return httpx2.post(url, json=body, headers={**ACCEPT, **headers}, timeout=15)


def answer(response: httpx2.Response) -> dict:
    """The JSON-RPC message of a response, whether plain JSON or one server-sent event."""
    if response.headers["content-type"].startswith("application/json"):
        return response.json()
    (data,) = [
        line[len("data: ") :] for line in response.text.splitlines() if line.startswith("data: ")
    ]
    return json.loads(data)


def open_raw_session(url: str, headers: dict) -> dict:
    """The headers of a session opened with a bare handshake."""
    opened = post(url, INITIALIZE, headers)
    assert opened.status_code == 200, opened.text
    session = {
        **headers,
        "Mcp-Session-Id": opened.headers["mcp-session-id"],
        "MCP-Protocol-Version": PROTOCOL,
    }
    post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
    return session


def list_tools(url: str, headers: dict) -> httpx2.Response:
    return post(url, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, headers)


async def refusal_seen_by_a_host(url: str, **host) -> str:
    try:
        async with http_host(url, **host) as client:
            await client.list_tools()
    except BaseException as raised:  # the client raises inside its task groups
        error = mcp_error(raised)
        if error is None:
            raise
        return error.message
    raise AssertionError("the session was not refused")


# --- Refused at session start ----------------------------------------------------------------


def test_a_bad_token_is_refused_with_401(mcp_url, demo):
    response = post(mcp_url, INITIALIZE, desk_headers("not-a-token"))
    message = run_host(lambda: refusal_seen_by_a_host(mcp_url, token="not-a-token"))

    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert answer(response)["error"]["message"] == "The MCP token is not valid."
    assert message == "The MCP token is not valid."
    assert not McpSession.objects.exists()


def test_a_request_without_a_token_is_refused_with_401(mcp_url, demo):
    missing = post(mcp_url, INITIALIZE, desk_headers(None))
    malformed = post(
        mcp_url, INITIALIZE, {"Authorization": "Basic YWdlbnQ6eA==", "X-Desk-Ticket": "TCK-1001"}
    )

    assert (missing.status_code, malformed.status_code) == (401, 401)
    assert "Authorization: Bearer <token>" in answer(missing)["error"]["message"]
    assert answer(malformed)["error"]["data"]["reason"] == "token_malformed"


def test_the_apis_token_spelling_is_accepted_too(mcp_url, demo):
    response = post(
        mcp_url,
        INITIALIZE,
        {"Authorization": f"Token {token_for('agent')}", "X-Desk-Ticket": "TCK-1001"},
    )

    assert response.status_code == 200
    assert McpSession.objects.get().user.username == "agent"


def test_an_inactive_user_is_refused_with_401(mcp_url, demo):
    token = token_for("agent")
    get_user_model().objects.filter(username="agent").update(is_active=False)

    response = post(mcp_url, INITIALIZE, desk_headers(token))

    assert response.status_code == 401
    assert answer(response)["error"]["data"]["reason"] == "user_inactive"
    assert not McpSession.objects.exists()


def test_an_expired_token_is_refused_with_401_and_kept(mcp_url, demo):
    # Given an MCP token past its expiry
    token = token_for("agent")
    McpToken.objects.update(expires_at=timezone.now() - timedelta(seconds=1))

    # When a host opens a session with it
    response = post(mcp_url, INITIALIZE, desk_headers(token))

    # Then it is refused, and the token stays on record
    assert response.status_code == 401
    assert answer(response)["error"]["data"]["reason"] == "token_expired"
    assert "The MCP token has expired." in answer(response)["error"]["message"]
    assert McpToken.objects.count() == 1
    assert not McpSession.objects.exists()


def test_a_user_without_a_support_role_is_refused_with_403(mcp_url, demo):
    # A token is made only for a support role: this user lost theirs since.
    token = token_for("agent")
    get_user_model().objects.get(username="agent").groups.clear()

    response = post(mcp_url, INITIALIZE, desk_headers(token))

    assert response.status_code == 403
    assert "Only interns, agents and supervisors" in answer(response)["error"]["message"]
    assert not McpSession.objects.exists()


def test_a_missing_ticket_is_refused_with_400(mcp_url, demo):
    token = token_for("agent")
    response = post(mcp_url, INITIALIZE, desk_headers(token, ticket=None))
    message = run_host(lambda: refusal_seen_by_a_host(mcp_url, token=token, ticket=None))

    assert response.status_code == 400
    assert "X-Desk-Ticket" in message
    assert not McpSession.objects.exists()


def test_an_unknown_ticket_is_refused_with_404(mcp_url, demo):
    response = post(mcp_url, INITIALIZE, desk_headers(token_for("agent"), ticket="TCK-9999"))

    assert response.status_code == 404
    assert answer(response)["error"]["message"] == "There is no ticket 'TCK-9999' on the desk."
    assert not McpSession.objects.exists()


def test_a_host_negotiates_the_handshake_the_session_needs(mcp_url, demo):
    """The 2026-07-28 single-exchange era has no session to bind: a host probing it is told
    the handshake versions and falls back to them."""
    token = token_for("agent")
    probe = post(
        mcp_url,
        {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {}},
        {**desk_headers(token), "MCP-Protocol-Version": "2026-07-28"},
    )

    async def negotiated():
        async with http_host(mcp_url, token=token) as client:
            return client.protocol_version

    assert probe.status_code == 400
    assert answer(probe)["error"]["code"] == -32022
    assert answer(probe)["error"]["data"]["supported"] == list(HANDSHAKE_PROTOCOL_VERSIONS)
    assert run_host(negotiated) in HANDSHAKE_PROTOCOL_VERSIONS


# --- Bound when it starts --------------------------------------------------------------------


def test_a_session_records_its_scope_and_host(mcp_url, demo):
    headers = open_raw_session(
        mcp_url, desk_headers(token_for("supervisor", "TCK-1002"), ticket="tck-1002")
    )

    listed = list_tools(mcp_url, headers)

    assert listed.status_code == 200
    session = McpSession.objects.get()
    assert (session.user.username, session.role, session.ticket.reference) == (
        "supervisor",
        "supervisor",
        "TCK-1002",
    )
    assert session.customer.name == "Maria Garcia"
    assert session.transport_session_id == headers["Mcp-Session-Id"]
    assert (session.client_name, session.client_version) == ("raw-host", "0.1")
    assert session.last_seen_at >= session.started_at


def test_a_session_cannot_move_to_another_ticket(mcp_url, demo):
    headers = open_raw_session(mcp_url, desk_headers(token_for("agent")))

    moved = list_tools(mcp_url, {**headers, "X-Desk-Ticket": "TCK-1003"})
    stayed = list_tools(mcp_url, headers)

    assert moved.status_code == 400
    assert "bound to TCK-1001" in answer(moved)["error"]["message"]
    assert stayed.status_code == 200
    assert McpSession.objects.get().ticket.reference == "TCK-1001"


def test_a_session_answers_only_the_user_who_opened_it(mcp_url, demo):
    headers = open_raw_session(mcp_url, desk_headers(token_for("agent")))

    borrowed = list_tools(mcp_url, {**headers, **desk_headers(token_for("agent2"))})
    tokenless = list_tools(mcp_url, {**headers, "Authorization": ""})

    assert borrowed.status_code == 404
    assert tokenless.status_code == 401


def test_a_revoked_token_stops_an_open_session(mcp_url, demo):
    headers = open_raw_session(mcp_url, desk_headers(token_for("agent")))
    mcp_token_revoke(token=McpToken.objects.get())

    response = list_tools(mcp_url, headers)

    assert response.status_code == 401
    assert answer(response)["error"]["data"]["reason"] == "token_revoked"


def test_listing_tools_is_refused_once_the_role_is_gone(mcp_url, demo):
    headers = open_raw_session(mcp_url, desk_headers(token_for("agent")))
    get_user_model().objects.get(username="agent").groups.clear()

    response = list_tools(mcp_url, headers)

    assert "no longer holds" in answer(response)["error"]["message"]


def test_a_request_id_used_for_another_call_is_refused_without_running(mcp_url, demo):
    headers = open_raw_session(mcp_url, desk_headers(token_for("agent")))

    def call_7(name: str, arguments: dict) -> dict:
        request = {"name": name, "arguments": arguments}
        return answer(
            post(
                mcp_url,
                {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": request},
                headers,
            )
        )

    def result(message: dict) -> dict:
        (text,) = untrusted_blocks(message["result"]["content"][0]["text"])
        return json.loads(text)

    first = call_7("get_order", {"order_id": "202610110087"})
    same = call_7("get_order", {"order_id": "202610110087"})
    other = call_7("list_customer_orders", {})

    assert result(same) == result(first)
    assert result(first)["ok"] is True
    assert other["error"] == {
        "code": -32600,
        "message": "The call id 7 was already used for another call; nothing was run. Send "
        "each call with an id of its own.",
        "data": {"reason": "id_reused"},
    }
    assert list(ToolCallLog.objects.values_list("tool_call_id", "tool_name")) == [
        ("7", "get_order")
    ]


def test_closing_a_session_ends_it(mcp_url, demo):
    token = token_for("intern")

    async def use_and_close():
        async with http_host(mcp_url, token=token) as client:
            await client.list_tools()

    run_host(use_and_close)

    session = McpSession.objects.get()
    assert session.ended_at is not None
    gone = list_tools(
        mcp_url,
        {**desk_headers(token), "Mcp-Session-Id": session.transport_session_id},
    )
    assert gone.status_code == 404


# --- The bound ticket's resources ------------------------------------------------------------


def test_the_conversation_shows_public_and_internal_messages_marked(mcp_url, demo):
    ticket = Ticket.objects.get(reference="TCK-1001")
    customer_message = ticket.messages.get(author_kind="customer")
    note = TicketMessage.objects.create(
        ticket=ticket,
        author_kind="agent",
        author=get_user_model().objects.get(username="agent"),
        body="Checked the photos: the box was crushed.",
        visibility="internal",
    )

    token = token_for("intern")

    async def read():
        async with http_host(mcp_url, token=token) as client:
            listed = (await client.list_resources()).resources
            conversation = await client.read_resource("desk://tickets/TCK-1001/conversation")
            order = await client.read_resource("desk://tickets/TCK-1001/order")
            return listed, conversation.contents[0].text, order.contents[0].text

    listed, conversation, order = run_host(read)

    assert [resource.uri for resource in listed] == [
        "desk://tickets/TCK-1001/conversation",
        "desk://tickets/TCK-1001/order",
    ]
    assert f"[#{customer_message.pk} · public · customer · " in conversation
    assert f"[#{note.pk} · internal · agent · agent · " in conversation
    assert customer_message.body in untrusted_blocks(conversation)
    assert note.body not in untrusted_blocks(conversation)
    assert conversation.index(customer_message.body) < conversation.index(note.body)
    (order_json,) = untrusted_blocks(order)
    assert json.loads(order_json)["order_id"] == "202610110087"
    assert not ToolCallLog.objects.exists()


def test_a_session_reads_no_other_tickets_resources(mcp_url, demo):
    token = token_for("agent")

    async def read_another():
        async with http_host(mcp_url, token=token) as client:
            await client.read_resource("desk://tickets/TCK-1002/conversation")

    try:
        run_host(read_another)
    except BaseException as raised:
        error = mcp_error(raised)
        assert error is not None, raised
    else:
        raise AssertionError("another ticket's conversation was served")
    assert error.code == -32002
