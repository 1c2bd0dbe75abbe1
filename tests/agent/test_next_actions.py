"""next_actions speak one vocabulary (docs/tools.md): a registered tool's name or a named desk
action, never prose, and every error code has at least one.

Every error path of the executor and the handlers is triggered for real below; the list of
paths must cover every ErrorCode, so a new code cannot ship without its actions.
"""

import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from agent.errors import DEFAULT_NEXT_ACTIONS, ErrorCode, NextAction, ToolError
from agent.executor.arguments import MAX_ARGUMENTS_CHARS
from agent.mcp.sessions import mcp_context
from agent.models import AgentRun
from agent.tools.registry import SUPPORT_ROLES, TOOLS, Tool, ToolKind, registered_tool, tool_names
from orders.models import Order
from refunds.models import RefundRequest
from refunds.services import refund_approve
from tests.agent.runs import call_tool, looked_up, open_mcp_session, run_context

pytestmark = pytest.mark.django_db(transaction=True)

MUG = "202610110087"  # Li Wei, TCK-1001, 129.00, delivered
HEADPHONES = "202610150012"  # TCK-1004, 899.00: over an agent's limit
LAMP = "202610250777"  # another customer's order
MUG_REFUND = {"order_id": MUG, "amount": 129, "reason": "damaged", "explanation": "Broken."}
EMPTY_SCHEMA = {"type": "object", "properties": {}, "required": [], "additionalProperties": False}
DOCS = Path(django_settings.BASE_DIR) / "docs" / "tools.md"


def extra_tool(name: str, handler, kind: ToolKind) -> Tool:
    return Tool(
        name=name,
        description="A tool that exists only in this test.",
        parameters=EMPTY_SCHEMA,
        handler=handler,
        kind=kind,
        roles=SUPPORT_ROLES,
    )


# --- Every error path, triggered -------------------------------------------------------------


def cancelled_run(settings) -> dict:
    ctx = run_context("agent")
    AgentRun.objects.filter(pk=ctx.run.pk).update(cancel_requested=True)
    return call_tool(ctx, "get_order", {"order_id": MUG})


def session_role_lost(settings) -> dict:
    agent = get_user_model().objects.get(username="agent")
    session = open_mcp_session("agent")
    agent.groups.set([Group.objects.get(name="support_intern")])
    return call_tool(mcp_context(session.pk), "get_order", {"order_id": MUG})


def session_past_its_calls_per_minute(tool: str) -> Callable:
    def trigger(settings) -> dict:
        settings.MCP_CALLS_PER_MINUTE = 1
        ctx = mcp_context(open_mcp_session("agent").pk)
        call_tool(ctx, "get_order", {"order_id": MUG})
        return call_tool(ctx, tool, {"order_id": MUG})

    return trigger


def past_the_call_limit(name: str) -> Callable:
    def trigger(settings) -> dict:
        settings.AGENT_MAX_TOOL_CALLS_PER_STEP = 1
        return call_tool(run_context("agent"), name, {"order_id": MUG}, position_in_reply=1)

    return trigger


def unknown_tool(name: str, username: str = "agent") -> Callable:
    return lambda settings: call_tool(run_context(username), name, {})


def intern_proposes(settings) -> dict:
    return call_tool(run_context("intern"), "create_refund", MUG_REFUND)


def arguments_too_large(settings) -> dict:
    return call_tool(run_context("agent"), "search_policies", "x" * (MAX_ARGUMENTS_CHARS + 1))


def not_json(settings) -> dict:
    return call_tool(run_context("agent"), "get_order", "{oops")


def outside_the_schema(settings) -> dict:
    return call_tool(run_context("agent"), "create_refund", {**MUG_REFUND, "approved": True})


def foreign_cursor(settings) -> dict:
    return call_tool(run_context("agent"), "list_customer_orders", {"cursor": "not-ours"})


def the_same_call_a_third_time(settings) -> dict:
    ctx = run_context("agent")
    for _ in range(2):
        call_tool(ctx, "get_order", {"order_id": MUG})
    return call_tool(ctx, "get_order", {"order_id": MUG})


def another_customers_order(settings) -> dict:
    return call_tool(run_context("agent"), "get_order", {"order_id": LAMP})


def a_reason_the_policy_denies(settings) -> dict:
    ctx = looked_up(run_context("agent"), MUG)
    return call_tool(ctx, "create_refund", {**MUG_REFUND, "reason": "not_received"})


def over_the_agents_limit(settings) -> dict:
    arguments = {**MUG_REFUND, "order_id": HEADPHONES, "amount": 899}
    ctx = looked_up(run_context("agent", "TCK-1004"), HEADPHONES)
    return call_tool(ctx, "create_refund", arguments)


def a_currency_the_policy_does_not_name(settings) -> dict:
    Order.objects.filter(order_id=MUG).update(currency="KWD")
    return call_tool(looked_up(run_context("agent"), MUG), "create_refund", MUG_REFUND)


def changing_an_approved_refund(settings) -> dict:
    ctx = looked_up(run_context("agent"), MUG)
    call_tool(ctx, "create_refund", MUG_REFUND)
    refund = RefundRequest.objects.get(order__order_id=MUG, ticket=ctx.ticket)
    pending = refund.confirmations.get()
    refund_approve(
        refund=refund,
        reviewer=get_user_model().objects.get(username="reviewer"),
        version=pending.version,
        fingerprint=pending.fingerprint,
    )
    return call_tool(ctx, "create_refund", {**MUG_REFUND, "amount": 100})


def proposing_without_a_lookup(settings) -> dict:
    return call_tool(run_context("agent"), "create_refund", MUG_REFUND)


def small_model_guards(settings) -> None:
    """Small-model mode's "guards" piece: the only place the agent's words refuse a proposal."""
    settings.AGENT_SMALL_MODEL = True
    settings.AGENT_SMALL_MODEL_PIECES = ["guards"]


def proposing_what_the_agent_did_not_ask_for(settings) -> dict:
    small_model_guards(settings)
    ctx = looked_up(run_context("agent"), MUG, asked="What does the customer want?")
    return call_tool(ctx, "create_refund", MUG_REFUND)


def proposing_an_amount_the_agent_did_not_name(settings) -> dict:
    small_model_guards(settings)
    ctx = looked_up(run_context("agent"), MUG, asked="Propose a partial refund for the mug.")
    return call_tool(ctx, "create_refund", MUG_REFUND)


def proposing_another_reason_than_the_agents(settings) -> dict:
    small_model_guards(settings)
    ctx = looked_up(run_context("agent"), MUG, asked="Propose a full refund as wrong item.")
    return call_tool(ctx, "create_refund", MUG_REFUND)


def too_slow(kind: ToolKind) -> Callable:
    def trigger(settings) -> dict:
        settings.TOOL_TIMEOUT_S = 0.2
        release = threading.Event()
        slow = extra_tool("slow", lambda ctx, args: release.wait(10) and {}, kind)
        try:
            with registered_tool(slow):
                return call_tool(run_context("agent"), "slow", {})
        finally:
            release.set()

    return trigger


def broken(kind: ToolKind) -> Callable:
    def fail(ctx, args):
        raise RuntimeError("boom")

    def trigger(settings) -> dict:
        with registered_tool(extra_tool("broken", fail, kind)):
            return call_tool(run_context("agent"), "broken", {})

    return trigger


def refusal_naming_no_action(settings) -> dict:
    def refuse(ctx, args):
        raise ToolError(ErrorCode.POLICY_DENIED, "Outside the refund window.")

    with registered_tool(extra_tool("refuse", refuse, ToolKind.WRITE)):
        return call_tool(run_context("agent"), "refuse", {})


@dataclass(frozen=True)
class ErrorPath:
    name: str
    trigger: Callable[..., dict]
    code: ErrorCode
    next_actions: list[str]


INTERN_TOOLS = [
    "get_order",
    "list_customer_orders",
    "search_policies",
    "get_refund_status",
    "read_tool_result",
]

PATHS = [
    ErrorPath("cancelled run", cancelled_run, ErrorCode.CANCELLED, ["stop"]),
    ErrorPath("MCP role lost", session_role_lost, ErrorCode.PERMISSION_DENIED, ["stop"]),
    ErrorPath(
        "MCP session past its calls per minute",
        session_past_its_calls_per_minute("get_refund_status"),
        ErrorCode.RATE_LIMITED,
        ["get_refund_status"],
    ),
    ErrorPath(
        "MCP session past its calls per minute, no such tool",
        session_past_its_calls_per_minute("teleport"),
        ErrorCode.RATE_LIMITED,
        ["stop"],
    ),
    ErrorPath(
        "past the call limit",
        past_the_call_limit("get_order"),
        ErrorCode.TOO_MANY_CALLS,
        ["get_order"],
    ),
    ErrorPath(
        "past the call limit, no such tool",
        past_the_call_limit("teleport"),
        ErrorCode.TOO_MANY_CALLS,
        ["stop"],
    ),
    ErrorPath("misspelt tool", unknown_tool("get_ordr"), ErrorCode.UNKNOWN_TOOL, ["get_order"]),
    ErrorPath(
        "invented tool",
        unknown_tool("approve_refund_now", "intern"),
        ErrorCode.UNKNOWN_TOOL,
        INTERN_TOOLS,
    ),
    ErrorPath(
        "role may not use the tool",
        intern_proposes,
        ErrorCode.PERMISSION_DENIED,
        ["escalate_to_supervisor"],
    ),
    ErrorPath(
        "arguments too large",
        arguments_too_large,
        ErrorCode.ARGUMENTS_TOO_LARGE,
        ["search_policies"],
    ),
    ErrorPath("not JSON", not_json, ErrorCode.BAD_JSON, ["get_order"]),
    ErrorPath(
        "outside the schema",
        outside_the_schema,
        ErrorCode.INVALID_ARGUMENTS,
        ["create_refund"],
    ),
    ErrorPath(
        "foreign cursor",
        foreign_cursor,
        ErrorCode.INVALID_ARGUMENTS,
        ["list_customer_orders"],
    ),
    ErrorPath(
        "repeated call",
        the_same_call_a_third_time,
        ErrorCode.REPEATED_CALL,
        ["use_earlier_result"],
    ),
    ErrorPath(
        "another customer's order",
        another_customers_order,
        ErrorCode.NOT_FOUND,
        ["list_customer_orders", "ask_customer"],
    ),
    ErrorPath(
        "policy denies",
        a_reason_the_policy_denies,
        ErrorCode.POLICY_DENIED,
        ["explain_policy", "search_policies"],
    ),
    ErrorPath(
        "over the role's limit",
        over_the_agents_limit,
        ErrorCode.AMOUNT_OVER_ROLE_LIMIT,
        ["escalate_to_supervisor", "propose_smaller_amount"],
    ),
    ErrorPath(
        "currency the policy does not name",
        a_currency_the_policy_does_not_name,
        ErrorCode.CURRENCY_NOT_SUPPORTED,
        ["explain_policy", "ask_agent"],
    ),
    ErrorPath(
        "refund already decided",
        changing_an_approved_refund,
        ErrorCode.REFUND_ALREADY_DECIDED,
        ["get_refund_status"],
    ),
    ErrorPath(
        "proposal without a lookup",
        proposing_without_a_lookup,
        ErrorCode.LOOKUP_REQUIRED,
        ["get_order"],
    ),
    ErrorPath(
        "proposal the agent did not ask for",
        proposing_what_the_agent_did_not_ask_for,
        ErrorCode.AGENT_REQUEST_REQUIRED,
        ["ask_agent"],
    ),
    ErrorPath(
        "amount the agent did not name",
        proposing_an_amount_the_agent_did_not_name,
        ErrorCode.AMOUNT_UNCLEAR,
        ["ask_agent"],
    ),
    ErrorPath(
        "reason other than the agent's",
        proposing_another_reason_than_the_agents,
        ErrorCode.REASON_UNCLEAR,
        ["create_refund", "ask_agent"],
    ),
    ErrorPath("slow read", too_slow(ToolKind.READ), ErrorCode.TOOL_TIMEOUT, ["slow"]),
    ErrorPath(
        "slow write", too_slow(ToolKind.WRITE), ErrorCode.TOOL_TIMEOUT, ["get_refund_status"]
    ),
    ErrorPath("broken read", broken(ToolKind.READ), ErrorCode.INTERNAL_ERROR, ["ask_agent"]),
    ErrorPath(
        "broken write",
        broken(ToolKind.WRITE),
        ErrorCode.INTERNAL_ERROR,
        ["get_refund_status"],
    ),
    ErrorPath(
        "refusal naming no action",
        refusal_naming_no_action,
        ErrorCode.POLICY_DENIED,
        ["explain_policy"],
    ),
]


def in_vocabulary(action: str) -> bool:
    """Judged without the code under test: the desk actions, or a tool registered now."""
    return action in {member.value for member in NextAction} or action in tool_names()


@pytest.mark.parametrize("path", PATHS, ids=[path.name for path in PATHS])
def test_every_error_path_names_its_next_actions_from_the_vocabulary(demo, settings, path):
    result = path.trigger(settings)

    assert result["ok"] is False
    assert result["error"]["code"] == path.code
    assert result["error"]["next_actions"] == path.next_actions
    # The slow test tool is gone by now; every other action must be in today's vocabulary.
    assert all(in_vocabulary(action) for action in path.next_actions if action != "slow")


def test_the_triggered_paths_cover_every_error_code():
    assert {path.code for path in PATHS} == set(ErrorCode)


# --- The vocabulary itself --------------------------------------------------------------------


def test_every_error_code_has_at_least_one_default_action():
    assert set(DEFAULT_NEXT_ACTIONS) == set(ErrorCode)
    assert all(DEFAULT_NEXT_ACTIONS[code] for code in ErrorCode)


def test_desk_actions_are_short_identifiers_that_no_tool_shares():
    for action in NextAction:
        assert re.fullmatch(r"[a-z]+(_[a-z]+)*", action.value)
    assert not {action.value for action in NextAction} & {tool.name for tool in TOOLS}


@pytest.mark.parametrize(
    "prose",
    ["escalate to a supervisor", "explain the policy to the agent", "Escalate_To_Supervisor", ""],
)
def test_a_tool_error_refuses_next_actions_outside_the_vocabulary(prose):
    with pytest.raises(ValueError, match="outside the vocabulary"):
        ToolError(ErrorCode.AMOUNT_OVER_ROLE_LIMIT, "Over the limit.", next_actions=[prose])


def test_a_tool_error_refuses_a_code_that_does_not_exist():
    with pytest.raises(ValueError):
        ToolError("SOMETHING_NEW", "Unknown.", next_actions=["get_order"])


def test_a_tool_error_sends_plain_strings_in_the_order_given():
    error = ToolError(
        ErrorCode.NOT_FOUND, "No.", next_actions=[NextAction.ASK_CUSTOMER, "get_order"]
    )

    assert json.dumps(error.as_result()["error"]["next_actions"]) == (
        '["ask_customer", "get_order"]'
    )


def test_a_tool_registered_for_a_while_is_in_the_vocabulary_only_meanwhile():
    extra = extra_tool("temporary", lambda ctx, args: {}, ToolKind.READ)

    with registered_tool(extra):
        assert ToolError(ErrorCode.BAD_JSON, "x", next_actions=["temporary"]).next_actions == [
            "temporary"
        ]
    with pytest.raises(ValueError):
        ToolError(ErrorCode.BAD_JSON, "x", next_actions=["temporary"])


def test_the_docs_name_every_desk_action_and_every_error_code_in_the_vocabulary_section():
    text = DOCS.read_text()
    section = text.split("## next_actions", 1)[1].split("\n## ", 1)[0]

    for action in NextAction:
        assert f"`{action.value}`" in section, action
    for code in ErrorCode:
        assert f"`{code.value}`" in section, code
    for tool in TOOLS:
        assert f"`{tool.name}`" in section, tool.name


def test_the_model_is_told_about_the_vocabulary_in_create_refunds_description():
    description = next(tool.description for tool in TOOLS if tool.name == "create_refund")

    assert "next_actions" in description
    assert "escalate_to_supervisor" in description
