"""The desk's tools over MCP's streamable HTTP, driven by the official `mcp` client: the role's
tools with the model's own schemas, the same executor, log rows and review queue (DESIGN
§12)."""

import json
import re

import anyio
import httpx2
import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import connections
from mcp_types import Request
from pydantic import TypeAdapter

from agent.models import McpSession, ToolCallLog
from agent.tools.registry import tools_for_role
from agent.tools.validation import FORBIDDEN_ARGUMENTS
from agent.untrusted import untrusted_blocks
from refunds.models import RefundRequest
from tests.mcp.hosts import http_host, result_json, run_host, token_for

pytestmark = pytest.mark.django_db(transaction=True)

MUG = "202610110087"  # Li Wei's, the order of TCK-1001
MARIAS_EBOOK = "202610200456"  # another customer's
THE_TOOLS = {
    "get_order",
    "list_customer_orders",
    "search_policies",
    "get_refund_status",
    "read_tool_result",
    "create_refund",
}
MUG_REFUND = {
    "order_id": MUG,
    "amount": 129.00,
    "reason": "damaged",
    "explanation": "The mug arrived in pieces.",
}


async def listed_tools(url: str, token: str):
    async with http_host(url, token=token) as client:
        return (await client.list_tools()).tools


async def one_call(url: str, token: str, name: str, arguments) -> object:
    async with http_host(url, token=token) as client:
        return await client.call_tool(name, arguments)


async def looked_up_then(url: str, token: str, name: str, arguments) -> object:
    """`name` called after the session looked the mug order up (DESIGN §16: a proposal needs
    a lookup of its order in the same session)."""
    async with http_host(url, token=token) as client:
        await client.call_tool("get_order", {"order_id": MUG})
        return await client.call_tool(name, arguments)


def test_an_intern_is_offered_only_the_read_tools(mcp_url, demo):
    tools = run_host(listed_tools, mcp_url, token_for("intern"))

    assert [tool.name for tool in tools] == [
        "get_order",
        "list_customer_orders",
        "search_policies",
        "get_refund_status",
        "read_tool_result",
    ]
    assert all(tool.annotations.read_only_hint for tool in tools)


@pytest.mark.parametrize("username, role", [("agent", "agent"), ("supervisor", "supervisor")])
def test_agents_and_supervisors_get_the_models_declarations_with_create_refund(
    mcp_url, demo, username, role
):
    tools = run_host(listed_tools, mcp_url, token_for(username))

    declared = [entry["function"] for entry in tools_for_role(role)]
    assert [tool.name for tool in tools] == [function["name"] for function in declared]
    assert "create_refund" in [tool.name for tool in tools]
    for tool, function in zip(tools, declared, strict=True):
        assert tool.description == function["description"]
        assert tool.input_schema == function["parameters"]
    (proposal,) = [tool for tool in tools if tool.name == "create_refund"]
    assert (proposal.annotations.read_only_hint, proposal.annotations.destructive_hint) == (
        False,
        False,
    )


@pytest.mark.parametrize("username", ["intern", "agent", "supervisor"])
def test_no_role_is_offered_a_tool_that_approves_executes_or_changes_scope(mcp_url, demo, username):
    tools = run_host(listed_tools, mcp_url, token_for(username))

    names = {tool.name for tool in tools}
    assert names <= THE_TOOLS
    for tool in tools:
        assert not re.search(r"approv|reject|execut|decid|assign|scope|role|ticket", tool.name)
        assert not set(tool.input_schema["properties"]) & FORBIDDEN_ARGUMENTS
        assert tool.input_schema["additionalProperties"] is False


def test_a_read_answers_with_the_bound_customers_order_and_is_logged(mcp_url, demo):
    result = run_host(one_call, mcp_url, token_for("agent"), "get_order", {"order_id": MUG})

    assert result.is_error is False
    # The same untrusted block a run's model reads its tool results in.
    assert result.content[0].text.startswith('<untrusted source="tool_result">')
    data = result_json(result)
    assert (data["ok"], data["order_id"], data["amount_paid"]) == (True, MUG, "129.00")
    session = McpSession.objects.get()
    assert (session.user.username, session.role, session.ticket.reference) == (
        "agent",
        "agent",
        "TCK-1001",
    )
    assert session.customer == session.ticket.customer
    assert (session.transport, session.client_name) == ("http", "mcp")
    assert session.transport_session_id
    log = ToolCallLog.objects.get()
    assert (log.run, log.mcp_session, log.tool_name, log.ok) == (None, session, "get_order", True)
    assert (log.actor.username, log.actor_role, log.ticket.reference) == (
        "agent",
        "agent",
        "TCK-1001",
    )
    assert log.arguments == {"order_id": MUG}
    assert log.result == data
    # The JSON-RPC id of the request, scoped to its session.
    assert json.loads(log.tool_call_id) == int(log.tool_call_id)


def test_another_customers_order_is_not_found_exactly_like_a_missing_one(mcp_url, demo):
    token = token_for("agent")

    async def both():
        async with http_host(mcp_url, token=token) as client:
            foreign = await client.call_tool("get_order", {"order_id": MARIAS_EBOOK})
            missing = await client.call_tool("get_order", {"order_id": "99999999"})
            return foreign, missing

    foreign, missing = run_host(both)

    assert foreign.is_error and missing.is_error
    assert result_json(foreign) == result_json(missing)
    assert result_json(foreign)["error"]["code"] == "NOT_FOUND"
    assert MARIAS_EBOOK not in foreign.content[0].text
    assert list(ToolCallLog.objects.values_list("error_code", flat=True)) == [
        "NOT_FOUND",
        "NOT_FOUND",
    ]


def test_invalid_arguments_are_an_error_result_and_a_log_row(mcp_url, demo):
    token = token_for("agent")

    async def calls():
        async with http_host(mcp_url, token=token) as client:
            short = await client.call_tool("get_order", {"order_id": "12"})
            widened = await client.call_tool("get_order", {"order_id": MUG, "customer_id": 3})
            return short, widened

    short, widened = run_host(calls)

    assert short.is_error and widened.is_error
    error = result_json(short)["error"]
    assert error["code"] == "INVALID_ARGUMENTS"
    assert set(error["field_errors"]) == {"order_id"}
    assert (
        "identity, scope and approval"
        in result_json(widened)["error"]["field_errors"]["customer_id"]
    )
    logs = list(ToolCallLog.objects.all())
    assert [(log.error_code, log.ok) for log in logs] == [
        ("INVALID_ARGUMENTS", False),
        ("INVALID_ARGUMENTS", False),
    ]
    assert logs[1].arguments == {"order_id": MUG, "customer_id": 3}


def test_an_unknown_tool_is_an_error_result_and_a_log_row(mcp_url, demo):
    result = run_host(
        one_call, mcp_url, token_for("supervisor"), "approve_refund", {"request_id": "rf_x"}
    )

    assert result.is_error
    error = result_json(result)["error"]
    assert error["code"] == "UNKNOWN_TOOL"
    assert "approve_refund" not in error["available"]
    log = ToolCallLog.objects.get()
    assert (log.tool_name, log.error_code, log.mcp_session_id) == (
        "approve_refund",
        "UNKNOWN_TOOL",
        McpSession.objects.get().pk,
    )


def test_an_intern_calling_create_refund_is_denied_and_logged(mcp_url, demo):
    result = run_host(one_call, mcp_url, token_for("intern"), "create_refund", MUG_REFUND)

    assert result.is_error
    assert result_json(result)["error"]["code"] == "PERMISSION_DENIED"
    assert ToolCallLog.objects.get().error_code == "PERMISSION_DENIED"
    assert not RefundRequest.objects.filter(order__order_id=MUG).exists()


def test_arguments_that_are_not_an_object_are_bad_json_and_logged(mcp_url, demo):
    """A host sending arguments the SDK would refuse before any tool runs: still one log
    row, with the executor's BAD_JSON."""

    token = token_for("agent")

    async def call_with_a_list():
        async with http_host(mcp_url, token=token) as client:
            # What `call_tool` would refuse to send: params built by hand.
            request = Request[dict, str](
                method="tools/call", params={"name": "get_order", "arguments": [MUG]}
            )
            return await client.session.send_request(request, TypeAdapter(dict))

    raw = run_host(call_with_a_list)

    assert raw["isError"] is True
    log = ToolCallLog.objects.get()
    assert (log.error_code, log.arguments) == ("BAD_JSON", [MUG])


def test_a_proposal_waits_in_the_review_queue_like_any_other(mcp_url, demo, client, enqueued):
    result = run_host(looked_up_then, mcp_url, token_for("agent"), "create_refund", MUG_REFUND)

    data = result_json(result)
    assert (result.is_error, data["status"], data["amount"]) == (
        False,
        "pending_approval",
        "129.00",
    )
    assert "Not refunded yet" in data["message"]
    refund = RefundRequest.objects.get(request_id=data["request_id"])
    session = McpSession.objects.get()
    assert (refund.status, refund.run, refund.requested_by.username) == (
        "pending_approval",
        None,
        "agent",
    )
    assert refund.tool_call.mcp_session == session

    client.login(username="reviewer", password="demo-pass-123")
    queue = client.get("/review/").content.decode()
    detail = client.get(f"/review/{refund.request_id}/").content.decode()
    api = client.get("/api/refunds/", {"status": "pending_approval"}).json()

    assert refund.request_id in queue
    assert f'From MCP session <span class="mono" title="{session.pk}">' in detail
    assert "create_refund" in detail
    listed = {row["request_id"]: row for row in api["results"]}
    assert listed[refund.request_id]["status"] == "pending_approval"
    assert listed[refund.request_id]["run"] is None

    # Reviewed like any other: approved by someone else, then executed by the workers.
    confirmation = refund.confirmations.get()
    client.post(
        f"/review/{refund.request_id}/approve/",
        {"version": confirmation.version, "fingerprint": confirmation.fingerprint},
    )
    refund.refresh_from_db()
    assert refund.status == "approved"
    assert enqueued == [refund.pk]


class Redelivering(httpx2.AsyncBaseTransport):
    """Sends every tools/call request twice, as a proxy retrying a request whose answer it lost
    would; the host only sees the second answer."""

    def __init__(self):
        self.inner = httpx2.AsyncHTTPTransport()
        self.first_answers: list[bytes] = []

    async def handle_async_request(self, request):
        body = await request.aread()
        if b'"tools/call"' in body:
            lost = await self.inner.handle_async_request(request)
            self.first_answers.append(await lost.aread())
            await lost.aclose()
        return await self.inner.handle_async_request(request)

    async def aclose(self):
        await self.inner.aclose()


def test_a_redelivered_call_runs_once_and_answers_the_logged_result(mcp_url, demo):
    network, token = Redelivering(), token_for("agent")

    async def propose():
        async with http_host(mcp_url, token=token, transport=network) as client:
            await client.call_tool("get_order", {"order_id": MUG})
            return await client.call_tool("create_refund", MUG_REFUND)

    result = run_host(propose)

    assert len(network.first_answers) == 2  # the lookup, then the proposal
    (first,) = [
        json.loads(line[len("data: ") :])
        for line in network.first_answers[1].decode().splitlines()
        if line.startswith("data: ") and line != "data: "
    ]
    (first_text,) = untrusted_blocks(first["result"]["content"][0]["text"])
    # The second answer is the logged one (PostgreSQL's jsonb may order its keys differently).
    assert json.loads(first_text) == result_json(result)
    log = ToolCallLog.objects.get(tool_name="create_refund")
    assert ToolCallLog.objects.filter(tool_name="get_order").count() == 1
    refund = RefundRequest.objects.get(order__order_id=MUG, ticket__reference="TCK-1001")
    assert refund.confirmations.count() == 1
    assert refund.events.count() == 1
    assert refund.tool_call == log


def test_the_same_call_id_in_two_sessions_is_two_calls(mcp_url, demo):
    token = token_for("agent")

    async def twice():
        for _ in range(2):
            async with http_host(mcp_url, token=token) as client:
                await client.call_tool("get_order", {"order_id": MUG})

    run_host(twice)

    logs = list(ToolCallLog.objects.all())
    assert len(logs) == 2
    assert logs[0].tool_call_id == logs[1].tool_call_id
    assert logs[0].mcp_session_id != logs[1].mcp_session_id


def test_a_session_goes_on_after_a_repeated_lookup(mcp_url, demo):
    """A host's session is not a model loop: the third identical lookup is answered too."""

    token = token_for("agent")

    async def poll():
        async with http_host(mcp_url, token=token) as client:
            return [
                await client.call_tool("get_refund_status", {"order_id": MUG}) for _ in range(3)
            ]

    results = run_host(poll)

    assert [result.is_error for result in results] == [False, False, False]


def test_a_user_whose_role_changed_mid_session_is_refused_and_logged(mcp_url, demo):
    agent, token = get_user_model().objects.get(username="agent"), token_for("agent")
    intern = Group.objects.get(name="support_intern")

    def demote():
        try:
            agent.groups.set([intern])
        finally:
            connections.close_all()  # this worker thread's own connection

    async def scenario():
        async with http_host(mcp_url, token=token) as client:
            before = await client.call_tool("get_order", {"order_id": MUG})
            await anyio.to_thread.run_sync(demote)
            after = await client.call_tool("create_refund", MUG_REFUND)
            read = await client.call_tool("get_order", {"order_id": MUG})
            return before, after, read

    before, after, read = run_host(scenario)

    assert before.is_error is False
    assert after.is_error and read.is_error
    assert result_json(after)["error"]["code"] == "PERMISSION_DENIED"
    assert "no longer holds" in result_json(read)["error"]["message"]
    assert list(ToolCallLog.objects.values_list("ok", "error_code")) == [
        (True, ""),
        (False, "PERMISSION_DENIED"),
        (False, "PERMISSION_DENIED"),
    ]
    assert not RefundRequest.objects.filter(order__order_id=MUG).exists()
