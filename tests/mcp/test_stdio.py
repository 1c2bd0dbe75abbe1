"""The desk's tools over stdio: a host starts `manage.py mcp_server --stdio` with DESK_TOKEN
and DESK_TICKET in its environment; the process is the session (DESIGN §12)."""

import pytest
from django.contrib.auth import get_user_model

from agent.models import McpSession, ToolCallLog
from agent.tools.registry import tools_for_role
from refunds.models import RefundRequest
from tests.mcp.hosts import mcp_error, result_json, run_host, stdio_host, token_for
from tests.services import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

MUG = "202610110087"


async def refusal(**host) -> str:
    try:
        async with stdio_host(**host) as client:
            await client.list_tools()
    except BaseException as raised:  # the client raises inside its task groups
        error = mcp_error(raised)
        if error is None:
            raise
        return error.message
    raise AssertionError("the session was not refused")


def test_a_local_host_gets_the_roles_tools_and_proposes_a_refund(demo):
    token = token_for("agent")

    async def session():
        async with stdio_host(token=token) as client:
            tools = (await client.list_tools()).tools
            await client.call_tool("get_order", {"order_id": MUG})  # look before you act
            proposal = await client.call_tool(
                "create_refund",
                {"order_id": MUG, "amount": 129, "reason": "damaged", "explanation": "Broken."},
            )
            return tools, proposal

    tools, proposal = run_host(session)

    declared = [entry["function"] for entry in tools_for_role("agent")]
    assert [(tool.name, tool.input_schema) for tool in tools] == [
        (function["name"], function["parameters"]) for function in declared
    ]
    data = result_json(proposal)
    assert (proposal.is_error, data["status"]) == (False, "pending_approval")
    refund = RefundRequest.objects.get(request_id=data["request_id"])
    session = McpSession.objects.get()
    assert (session.transport, session.transport_session_id, session.role) == ("stdio", "", "agent")
    assert (refund.run, refund.tool_call.mcp_session) == (None, session)
    assert ToolCallLog.objects.get(tool_name="create_refund").mcp_session == session
    # The host closed stdin: the process, and with it the session, ended.
    wait_for(
        lambda: McpSession.objects.filter(ended_at__isnull=False).exists(),
        timeout=15,
        what="the stdio session to end",
    )


def test_an_intern_over_stdio_cannot_propose(demo):
    token = token_for("intern")

    async def session():
        async with stdio_host(token=token, mode="legacy") as client:
            names = [tool.name for tool in (await client.list_tools()).tools]
            refused = await client.call_tool(
                "create_refund",
                {"order_id": MUG, "amount": 129, "reason": "damaged", "explanation": "Broken."},
            )
            return names, refused

    names, refused = run_host(session)

    assert "create_refund" not in names
    assert result_json(refused)["error"]["code"] == "PERMISSION_DENIED"
    assert ToolCallLog.objects.get().error_code == "PERMISSION_DENIED"


def test_a_bad_desk_token_is_refused_with_a_clear_error(demo):
    assert run_host(lambda: refusal(token="not-a-token")) == "The MCP token is not valid."
    assert run_host(lambda: refusal(token=None)).startswith("No MCP token: set DESK_TOKEN")
    assert not McpSession.objects.exists()


def test_a_host_with_a_handshake_is_refused_at_the_handshake(demo):
    async def handshake():
        try:
            async with stdio_host(token="not-a-token", mode="legacy"):
                pass
        except BaseException as raised:
            return mcp_error(raised)
        return None

    error = run_host(handshake)

    assert error is not None
    assert error.message == "The MCP token is not valid."


def test_a_missing_or_unknown_ticket_is_refused(demo):
    token = token_for("agent")

    missing = run_host(lambda: refusal(token=token, ticket=None))
    unknown = run_host(lambda: refusal(token=token, ticket="TCK-4040"))

    assert "DESK_TICKET" in missing
    assert unknown == "There is no ticket 'TCK-4040' on the desk."


def test_an_inactive_user_is_refused(demo):
    token = token_for("supervisor")
    get_user_model().objects.filter(username="supervisor").update(is_active=False)

    message = run_host(lambda: refusal(token=token))

    assert message == "The desk user this token belongs to is inactive."
    assert not McpSession.objects.exists()
