"""The tool registry: what each role is shown, and what the schemas promise (DESIGN §6)."""

import hashlib
import json
from decimal import Decimal

import pytest

from agent.tools import (
    FORBIDDEN_ARGUMENTS,
    READ,
    SUPPORT_ROLES,
    TOOLS_VERSION,
    WRITE,
    Tool,
    get_tool,
    registered_tool,
    tools_for_role,
    validate_arguments,
)

ALL_TOOLS = ["get_order", "list_customer_orders", "search_policies", "get_refund_status",
             "create_refund"]


def names(tools: list[dict]) -> list[str]:
    return [tool["function"]["name"] for tool in tools]


def test_it_shows_agents_and_supervisors_every_tool_in_a_stable_order():
    assert names(tools_for_role("agent")) == ALL_TOOLS
    assert names(tools_for_role("supervisor")) == ALL_TOOLS


def test_it_never_shows_an_intern_create_refund():
    assert names(tools_for_role("intern")) == ALL_TOOLS[:4]


@pytest.mark.parametrize("role", ["reviewer", "", "admin"])
def test_it_shows_no_tools_to_roles_that_do_not_run_the_assistant(role):
    assert tools_for_role(role) == []


def test_it_declares_one_write_and_four_reads():
    kinds = {name: get_tool(name).kind for name in ALL_TOOLS}

    assert kinds == {"get_order": READ, "list_customer_orders": READ, "search_policies": READ,
                     "get_refund_status": READ, "create_refund": WRITE}


@pytest.mark.parametrize("schema", tools_for_role("supervisor"),
                         ids=lambda schema: schema["function"]["name"])
def test_it_gives_every_tool_a_closed_chat_completions_schema(schema):
    function = schema["function"]
    parameters = function["parameters"]

    assert schema["type"] == "function"
    assert parameters["type"] == "object"
    assert parameters["additionalProperties"] is False
    assert set(parameters["required"]) <= set(parameters["properties"])
    assert FORBIDDEN_ARGUMENTS.isdisjoint(parameters["properties"])
    assert "Do not use it" in function["description"]
    if function.get("strict"):
        assert set(parameters["required"]) == set(parameters["properties"])


def test_it_constrains_create_refund_arguments():
    properties = get_tool("create_refund").parameters["properties"]

    assert properties["order_id"]["pattern"] == "^[0-9]{8,20}$"
    assert properties["amount"]["type"] == "number"
    assert properties["amount"]["exclusiveMinimum"] == 0
    assert properties["amount"]["multipleOf"] == 0.01
    assert properties["reason"]["enum"] == ["damaged", "not_received", "wrong_item", "other"]
    assert properties["explanation"]["maxLength"] == 1000
    assert get_tool("list_customer_orders").parameters["properties"]["limit"]["maximum"] == 20
    assert get_tool("search_policies").parameters["properties"]["limit"]["maximum"] == 5


def test_it_versions_the_tools_by_a_digest_of_their_schemas():
    canonical = json.dumps(tools_for_role("supervisor"), sort_keys=True, separators=(",", ":"),
                           ensure_ascii=False)

    assert hashlib.sha256(canonical.encode()).hexdigest()[:12] == TOOLS_VERSION


def test_it_registers_an_extra_tool_only_inside_the_block():
    tool = Tool(name="probe", description="test", kind=READ, roles=SUPPORT_ROLES,
                parameters={"type": "object", "properties": {}, "required": [],
                            "additionalProperties": False},
                handler=lambda ctx, args: {})

    with registered_tool(tool):
        assert get_tool("probe") is tool
        assert names(tools_for_role("intern"))[-1] == "probe"

    assert get_tool("probe") is None
    assert names(tools_for_role("intern")) == ALL_TOOLS[:4]


def test_it_refuses_to_shadow_a_registered_tool():
    with pytest.raises(ValueError, match="already registered"), registered_tool(
            get_tool("get_order")):
        pass

    assert get_tool("get_order").kind == READ


def test_it_fills_defaults_and_converts_numbers_when_validating():
    listed, listed_errors = validate_arguments(get_tool("list_customer_orders"),
                                               {"status": None})
    refund, refund_errors = validate_arguments(get_tool("create_refund"), {
        "order_id": "202610110087", "amount": Decimal("12.5"), "reason": "other",
        "explanation": "x"})

    assert (listed, listed_errors) == ({"status": None, "limit": 10, "cursor": None}, {})
    assert refund_errors == {}
    assert refund["amount"] == Decimal("12.50")
    assert str(refund["amount"]) == "12.50"


@pytest.mark.parametrize(("amount", "message"), [
    (True, "must be a number, not a boolean"),
    (False, "must be a number, not a boolean"),
    ("129", "must be a number, not a string"),
    (float("nan"), "must be a finite number"),
    (float("inf"), "must be a finite number"),
    (Decimal("129.001"), "must have at most 2 decimal places"),
    (None, "is required"),
])
def test_it_refuses_amounts_that_are_not_money_when_validating(amount, message):
    _, errors = validate_arguments(get_tool("create_refund"), {
        "order_id": "202610110087", "amount": amount, "reason": "other", "explanation": "x"})

    assert errors == {"amount": message}
