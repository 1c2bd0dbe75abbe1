"""Nothing lost to truncation: a result over the 8,000-character cap is kept whole in its log
row, and read_tool_result pages through it under the same scope, audit and wrapping as any
tool (DESIGN §6)."""

import json

import pytest
from django.contrib.auth import get_user_model

from agent.context import McpContext
from agent.models import McpSession, ToolCallLog
from agent.tools.paging import MAX_RESULT_CHARS
from agent.tools.registry import SUPPORT_ROLES, Tool, ToolKind, registered_tool
from agent.untrusted import untrusted_blocks
from tests.agent.runs import call_tool, drive, run_context, start_run
from tests.fakes.openai_server import text_reply, tool_call, tool_reply
from tickets.models import Ticket

pytestmark = pytest.mark.django_db(transaction=True)

EMPTY_SCHEMA = {"type": "object", "properties": {}, "required": [], "additionalProperties": False}
# 30,000 characters with quotes, newlines and non-ASCII text, so escaping makes the JSON of a
# part longer than the part itself.
PAYLOAD = ('line "{n}" — ünïcode\n' * 1500)[:30_000]
WHOLE = json.dumps({"ok": True, "text": PAYLOAD}, ensure_ascii=False, separators=(",", ":"))


def compact(result: dict) -> str:
    return json.dumps(result, ensure_ascii=False, separators=(",", ":"))


@pytest.fixture
def big_probe():
    """A read tool that answers 30,000 characters of text."""
    tool = Tool(
        name="big_probe",
        description="Test probe big_probe.",
        parameters=EMPTY_SCHEMA,
        handler=lambda ctx, args: {"text": PAYLOAD},
        kind=ToolKind.READ,
        roles=SUPPORT_ROLES,
    )
    with registered_tool(tool):
        yield tool


def read_all(ctx, first: dict) -> tuple[str, list[dict]]:
    """Follow next_offset from a cut result to the end: the joined text and every part."""
    text, parts = first["content"], []
    offset = first["next_offset"]
    while offset is not None:
        part = call_tool(
            ctx, "read_tool_result", {"result_ref": first["result_ref"], "offset": offset}
        )
        assert part["ok"] is True, part
        assert part["offset"] == offset
        parts.append(part)
        text += part["content"]
        offset = part["next_offset"]
        assert len(parts) < 20, "paging does not end"
    return text, parts


def test_the_model_gets_the_first_part_with_a_ref_and_the_log_keeps_the_whole_result(
    demo, big_probe
):
    ctx = run_context("agent")

    first = call_tool(ctx, "big_probe", {})

    assert first["ok"] is True
    assert first["truncated"] is True
    assert first["total"] == len(WHOLE)
    assert first["result_ref"].startswith("tc_")
    assert first["offset"] == 0
    assert first["next_offset"] == len(first["content"])
    assert WHOLE.startswith(first["content"])
    assert MAX_RESULT_CHARS - 10 <= len(compact(first)) <= MAX_RESULT_CHARS
    assert "read_tool_result" in first["message"]
    row = ToolCallLog.objects.get(run=ctx.run)
    assert row.result == first
    assert row.full_result == WHOLE
    assert first["result_ref"] == f"tc_{row.pk}"


def test_read_tool_result_pages_to_the_end_and_the_parts_join_to_the_original(demo, big_probe):
    ctx = run_context("agent")
    first = call_tool(ctx, "big_probe", {})

    text, parts = read_all(ctx, first)

    assert text == WHOLE
    assert json.loads(text) == {"ok": True, "text": PAYLOAD}
    assert len(parts) >= 3
    assert all(len(compact(part)) <= MAX_RESULT_CHARS for part in parts)
    assert all(part["total"] == len(WHOLE) for part in parts)
    assert parts[-1]["next_offset"] is None
    assert all(part["result_ref"] == first["result_ref"] for part in parts)
    # Full pages, not timid ones: every page but the last fills the cap to within escaping.
    assert all(len(compact(part)) > MAX_RESULT_CHARS - 10 for part in parts[:-1])


def test_each_read_leaves_its_own_log_row(demo, big_probe):
    ctx = run_context("agent")
    first = call_tool(ctx, "big_probe", {})

    _, parts = read_all(ctx, first)

    reads = ToolCallLog.objects.filter(run=ctx.run, tool_name="read_tool_result")
    assert reads.count() == len(parts)
    assert [row.result for row in reads] == parts
    assert [row.arguments["offset"] for row in reads] == [part["offset"] for part in parts]
    assert all(row.ok and row.actor_role == "agent" and row.full_result == "" for row in reads)


def test_an_intern_may_read_a_cut_result(demo, big_probe):
    ctx = run_context("intern")
    first = call_tool(ctx, "big_probe", {})

    text, _ = read_all(ctx, first)

    assert text == WHOLE
    assert set(ToolCallLog.objects.filter(run=ctx.run).values_list("actor_role", flat=True)) == {
        "intern"
    }


def test_a_result_ref_from_anywhere_else_is_not_found_exactly_like_a_missing_one(demo, big_probe):
    # Given a cut result in one run on Li Wei's ticket
    owner = run_context("agent")
    ref = call_tool(owner, "big_probe", {})["result_ref"]
    small = call_tool(owner, "get_order", {"order_id": "202610110087"})
    assert "result_ref" not in small
    small_ref = f"tc_{ToolCallLog.objects.get(run=owner.run, tool_name='get_order').pk}"
    missing = call_tool(owner, "read_tool_result", {"result_ref": "tc_999999999", "offset": 0})
    assert missing["error"]["code"] == "NOT_FOUND"

    # When another run on the same ticket, a run on another customer's ticket, an MCP session
    # on the same ticket, and the owner itself for a result that was never cut ask for it
    same_ticket = run_context("agent")
    other_customer = run_context("agent", reference="TCK-1002")
    assert other_customer.customer != owner.customer
    user = get_user_model().objects.get(username="agent")
    session = McpSession.objects.create(
        user=user,
        role="agent",
        ticket=owner.ticket,
        customer=owner.customer,
        transport=McpSession.Transport.STDIO,
    )
    mcp = McpContext.for_session(session)
    answers = [
        call_tool(same_ticket, "read_tool_result", {"result_ref": ref, "offset": 0}),
        call_tool(other_customer, "read_tool_result", {"result_ref": ref, "offset": 0}),
        call_tool(mcp, "read_tool_result", {"result_ref": ref, "offset": 0}),
        call_tool(owner, "read_tool_result", {"result_ref": small_ref, "offset": 0}),
    ]

    # Then each answer is byte for byte the answer for a ref that never existed
    assert all(answer == missing for answer in answers)
    assert PAYLOAD[:20] not in str(answers)
    # and each refusal is logged like any call
    assert (
        ToolCallLog.objects.filter(tool_name="read_tool_result", error_code="NOT_FOUND").count()
        == 5
    )


def test_an_mcp_session_reads_its_own_cut_result(demo, big_probe):
    ticket = Ticket.objects.get(reference="TCK-1001")
    session = McpSession.objects.create(
        user=get_user_model().objects.get(username="agent"),
        role="agent",
        ticket=ticket,
        customer=ticket.customer,
        transport=McpSession.Transport.STDIO,
    )
    ctx = McpContext.for_session(session)
    first = call_tool(ctx, "big_probe", {})

    text, parts = read_all(ctx, first)

    assert text == WHOLE
    reads = ToolCallLog.objects.filter(mcp_session=session, tool_name="read_tool_result")
    assert reads.count() == len(parts)


@pytest.mark.parametrize(
    "arguments, field",
    [
        ({"offset": -1}, "offset"),
        ({"offset": True}, "offset"),
        ({"offset": "100"}, "offset"),
        ({"offset": 1.5}, "offset"),
        ({"offset": None}, "offset"),
        ({"result_ref": "tc_one"}, "result_ref"),
        ({"result_ref": 7}, "result_ref"),
        ({"run_id": "x"}, "run_id"),
    ],
    ids=["negative", "bool", "string", "fraction", "null", "bad-ref", "ref-not-string", "extra"],
)
def test_a_bad_argument_is_refused_as_invalid(demo, big_probe, arguments, field):
    ctx = run_context("agent")
    ref = call_tool(ctx, "big_probe", {})["result_ref"]

    answer = call_tool(ctx, "read_tool_result", {"result_ref": ref, "offset": 0, **arguments})

    assert answer["ok"] is False
    assert answer["error"]["code"] == "INVALID_ARGUMENTS"
    assert field in answer["error"]["field_errors"]
    assert answer["error"]["next_actions"] == ["read_tool_result"]


def test_an_offset_past_the_end_is_refused_and_the_end_itself_reads_empty(demo, big_probe):
    ctx = run_context("agent")
    ref = call_tool(ctx, "big_probe", {})["result_ref"]

    at_end = call_tool(ctx, "read_tool_result", {"result_ref": ref, "offset": len(WHOLE)})
    past = call_tool(ctx, "read_tool_result", {"result_ref": ref, "offset": len(WHOLE) + 1})

    assert at_end == {
        "ok": True,
        "result_ref": ref,
        "offset": len(WHOLE),
        "next_offset": None,
        "total": len(WHOLE),
        "content": "",
    }
    assert past["error"]["code"] == "INVALID_ARGUMENTS"
    assert past["error"]["field_errors"] == {"offset": f"must be at most {len(WHOLE)}"}


def test_a_result_over_the_store_limit_is_kept_cut_and_reading_stops_there(
    demo, big_probe, settings
):
    settings.TOOL_RESULT_STORE_MAX_CHARS = 12_000
    ctx = run_context("agent")

    first = call_tool(ctx, "big_probe", {})
    text, parts = read_all(ctx, first)

    row = ToolCallLog.objects.get(run=ctx.run, tool_name="big_probe")
    assert row.full_result == WHOLE[:12_000]
    assert (row.result["stored"], row.result["total"]) == (12_000, len(WHOLE))
    assert "Only the first 12000" in first["message"]
    assert text == WHOLE[:12_000]
    last = parts[-1]
    assert (last["next_offset"], last["stored"], last["total"]) == (None, 12_000, len(WHOLE))
    assert "cannot be read" in last["message"]
    assert "stored" not in parts[0] or len(parts) == 1


def test_a_run_pages_through_a_cut_result_with_the_real_model_client(
    demo, big_probe, fake_openai, settings
):
    # Given a model that calls big_probe, then follows next_offset until the end
    settings.AGENT_MAX_STEPS = 10
    fake_openai.enqueue(tool_reply(tool_call("big_probe", {}, call_id="call_probe")))
    seen: list[dict] = []

    def follow(request: dict) -> dict:
        last = request["messages"][-1]
        assert last["role"] == "tool"
        assert last["content"].startswith('<untrusted source="tool_result">')
        (body,) = untrusted_blocks(last["content"])
        result = json.loads(body)
        seen.append(result)
        if result.get("next_offset") is None:
            return text_reply("I have read the whole result.")
        arguments = {"result_ref": result["result_ref"], "offset": result["next_offset"]}
        return tool_reply(tool_call("read_tool_result", arguments))

    fake_openai.respond_with(follow)
    run = start_run("Read the whole probe result.")

    # When the run is driven to its end
    drive(run)

    # Then the parts the model was sent join to the whole result, each within the cap
    assert run.status == "completed", run.error
    assert "".join(result["content"] for result in seen) == WHOLE
    assert all(len(compact(result)) <= MAX_RESULT_CHARS for result in seen)
    assert seen[0]["truncated"] is True
    # and every read is in the run's log
    reads = ToolCallLog.objects.filter(run=run, tool_name="read_tool_result")
    assert reads.count() == len(seen) - 1
    assert all(row.ok for row in reads)
    assert "read_tool_result" in [
        tool["function"]["name"] for tool in fake_openai.requests[0]["tools"]
    ]
