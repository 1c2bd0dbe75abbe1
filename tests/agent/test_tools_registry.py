"""The tool registry: what each role is shown, and what the schemas promise (DESIGN §6)."""

from dataclasses import replace
from decimal import Decimal
from pathlib import Path

import pytest

import agent
from agent.tools.registry import (
    SUPPORT_ROLES,
    TOOLS,
    TOOLS_VERSION,
    Tool,
    ToolKind,
    get_tool,
    registered_tool,
    replaced_handler,
    tools_for_role,
    tools_version,
)
from agent.tools.validation import FORBIDDEN_ARGUMENTS, validate_arguments

ALL_TOOLS = [
    "get_order",
    "list_customer_orders",
    "search_policies",
    "get_refund_status",
    "read_tool_result",
    "create_refund",
]
# Every tool but create_refund.
READ_TOOLS = ALL_TOOLS[:5]


def names(tools: list[dict]) -> list[str]:
    return [tool["function"]["name"] for tool in tools]


def test_it_shows_agents_and_supervisors_every_tool_in_a_stable_order():
    assert names(tools_for_role("agent")) == ALL_TOOLS
    assert names(tools_for_role("supervisor")) == ALL_TOOLS


def test_it_never_shows_an_intern_create_refund():
    assert names(tools_for_role("intern")) == READ_TOOLS


@pytest.mark.parametrize("role", ["reviewer", "", "admin"])
def test_it_shows_no_tools_to_roles_that_do_not_run_the_assistant(role):
    assert tools_for_role(role) == []


def test_it_declares_one_write_and_the_rest_reads():
    kinds = {name: get_tool(name).kind for name in ALL_TOOLS}

    assert kinds == {
        "get_order": "read",
        "list_customer_orders": "read",
        "search_policies": "read",
        "get_refund_status": "read",
        "read_tool_result": "read",
        "create_refund": "write",
    }


@pytest.mark.parametrize(
    "schema", tools_for_role("supervisor"), ids=lambda schema: schema["function"]["name"]
)
def test_it_gives_every_tool_a_closed_chat_completions_schema(schema):
    function = schema["function"]
    parameters = function["parameters"]

    assert schema["type"] == "function"
    assert parameters["type"] == "object"
    assert parameters["additionalProperties"] is False
    assert set(parameters["required"]) <= set(parameters["properties"])
    assert FORBIDDEN_ARGUMENTS.isdisjoint(parameters["properties"])
    assert "Do not use it" in function["description"]
    assert function["strict"] is True


# What OpenAI's strict mode (Structured Outputs) accepts in a schema, per type.
STRICT_KEYWORDS = {
    "string": {"type", "description", "enum", "pattern", "format"},
    "number": {
        "type",
        "description",
        "enum",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
    },
}
STRICT_KEYWORDS["integer"] = STRICT_KEYWORDS["number"]


@pytest.mark.parametrize(
    "schema", tools_for_role("supervisor"), ids=lambda schema: schema["function"]["name"]
)
def test_every_tool_schema_fits_openais_strict_mode(schema):
    """DESIGN §16: every property required (optional ones nullable), no other property, and
    only the keywords strict mode knows."""
    parameters = schema["function"]["parameters"]

    assert parameters["additionalProperties"] is False
    assert parameters["required"] == list(parameters["properties"])
    for spec in parameters["properties"].values():
        types = spec["type"] if isinstance(spec["type"], list) else [spec["type"]]
        allowed = set().union(*(STRICT_KEYWORDS.get(t, {"type"}) for t in types))
        assert set(spec) <= allowed, set(spec) - allowed
        if "enum" in spec and "null" in types:
            assert None in spec["enum"]


def test_optional_arguments_are_nullable_and_may_still_be_left_out():
    functions = [entry["function"] for entry in tools_for_role("agent")]
    (listing,) = [f for f in functions if f["name"] == "list_customer_orders"]
    assert listing["parameters"]["properties"]["limit"]["type"] == ["integer", "null"]
    tool = get_tool("list_customer_orders")
    assert tool is not None
    for arguments in ({}, {"status": None, "limit": None, "cursor": None}):
        clean, errors = validate_arguments(tool, arguments)
        assert (errors, clean["limit"]) == ({}, 10)


MUG = {
    "order_id": "202610110087",
    "amount": Decimal("129.00"),
    "reason": "damaged",
    "explanation": "Arrived broken.",
}
NOT_ALLOWED = "not allowed: identity, scope and approval come from the run, never from arguments"


@pytest.mark.parametrize(
    ("name", "arguments", "errors"),
    [
        ("create_refund", {**MUG, "order_id": "1234567"}, {"order_id": "must match ^[0-9]{8,20}$"}),
        ("create_refund", {**MUG, "order_id": "1" * 21}, {"order_id": "must match ^[0-9]{8,20}$"}),
        (
            "create_refund",
            {**MUG, "order_id": "20261011008a"},
            {"order_id": "must match ^[0-9]{8,20}$"},
        ),
        (
            "create_refund",
            {**MUG, "order_id": 202610110087},
            {"order_id": "must be a string, not a number"},
        ),
        ("create_refund", {**MUG, "amount": Decimal("0.00")}, {"amount": "must be greater than 0"}),
        (
            "create_refund",
            {**MUG, "amount": Decimal("-5.00")},
            {"amount": "must be greater than 0"},
        ),
        (
            "create_refund",
            {**MUG, "amount": Decimal("0.001")},
            {"amount": "must have at most 2 decimal places"},
        ),
        (
            "create_refund",
            {**MUG, "amount": Decimal("10000000000.00")},
            {"amount": "must be at most 9999999999.99"},
        ),
        (
            "create_refund",
            {**MUG, "reason": "broken"},
            {"reason": "must be one of: damaged, not_received, wrong_item, other"},
        ),
        ("create_refund", {**MUG, "explanation": ""}, {"explanation": "must not be empty"}),
        (
            "create_refund",
            {**MUG, "explanation": "x" * 1001},
            {"explanation": "must be at most 1000 characters"},
        ),
        ("list_customer_orders", {"limit": 21}, {"limit": "must be between 1 and 20"}),
        ("list_customer_orders", {"limit": 0}, {"limit": "must be between 1 and 20"}),
        (
            "list_customer_orders",
            {"status": "lost"},
            {"status": "must be one of: paid, shipped, delivered, cancelled"},
        ),
        (
            "list_customer_orders",
            {"cursor": "x" * 201},
            {"cursor": "must be at most 200 characters"},
        ),
        ("search_policies", {"query": "window", "limit": 6}, {"limit": "must be between 1 and 5"}),
        ("search_policies", {"query": "x" * 201}, {"query": "must be at most 200 characters"}),
        ("search_policies", {}, {"query": "is required"}),
        ("get_order", {"order_id": "1234567"}, {"order_id": "must match ^[0-9]{8,20}$"}),
        ("get_refund_status", {"order_id": "1234567"}, {"order_id": "must match ^[0-9]{8,20}$"}),
    ],
)
def test_it_refuses_what_each_schema_says_it_refuses(name, arguments, errors):
    _, found = validate_arguments(get_tool(name), arguments)

    assert found == errors


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        (
            "create_refund",
            {**MUG, "order_id": "12345678", "amount": Decimal("0.01"), "explanation": "x" * 1000},
        ),
        ("create_refund", {**MUG, "order_id": "1" * 20, "amount": Decimal("9999999999.99")}),
        ("list_customer_orders", {"status": "delivered", "limit": 20, "cursor": "x" * 200}),
        ("list_customer_orders", {"limit": 1}),
        ("search_policies", {"query": "x" * 200, "limit": 5}),
    ],
)
def test_it_accepts_arguments_at_the_edge_of_each_schema(name, arguments):
    _, found = validate_arguments(get_tool(name), arguments)

    assert found == {}


@pytest.mark.parametrize("name", ALL_TOOLS)
def test_it_refuses_undeclared_and_identity_arguments_on_every_tool(name):
    _, found = validate_arguments(get_tool(name), {"note": "x", "customer_id": 7, "approved": True})

    assert {key: found[key] for key in ("note", "customer_id", "approved")} == {
        "note": "unknown argument",
        "customer_id": NOT_ALLOWED,
        "approved": NOT_ALLOWED,
    }


def test_it_keeps_the_tools_version_while_what_the_model_sees_is_unchanged():
    # Given the same tools with other handlers, roles and kinds, and their schemas' keys in
    # another order
    rebuilt = tuple(
        replace(
            tool,
            handler=lambda ctx, args: {},
            roles=frozenset({"supervisor"}),
            kind=ToolKind.WRITE,
            parameters=dict(reversed(tool.parameters.items())),
        )
        for tool in TOOLS
    )

    # Then they have the same version
    assert tools_version(rebuilt) == tools_version(TOOLS) == TOOLS_VERSION


def _edit_description(tools):
    return (replace(tools[0], description=tools[0].description + " Be brief."), *tools[1:])


def _edit_schema(tools):
    *rest, create = tools
    properties = {
        **create.parameters["properties"],
        "explanation": {"type": "string", "minLength": 1, "maxLength": 2000},
    }
    return (*rest, replace(create, parameters={**create.parameters, "properties": properties}))


def _add_tool(tools):
    return (*tools, replace(tools[0], name="get_order_again"))


@pytest.mark.parametrize(
    "change",
    [
        _edit_description,
        _edit_schema,
        _add_tool,
        lambda tools: tools[:-1],
        lambda tools: tuple(reversed(tools)),
    ],
    ids=["description", "schema", "added", "removed", "reordered"],
)
def test_it_changes_the_tools_version_when_what_the_model_sees_changes(change):
    assert tools_version(change(TOOLS)) != TOOLS_VERSION


def test_it_registers_an_extra_tool_only_inside_the_block():
    tool = Tool(
        name="probe",
        description="test",
        kind=ToolKind.READ,
        roles=SUPPORT_ROLES,
        parameters={
            "type": "object",
            "properties": {},
            "required": [],
            "additionalProperties": False,
        },
        handler=lambda ctx, args: {},
    )

    with registered_tool(tool):
        assert get_tool("probe") is tool
        assert names(tools_for_role("intern"))[-1] == "probe"

    assert get_tool("probe") is None
    assert names(tools_for_role("intern")) == READ_TOOLS


def test_it_refuses_to_shadow_a_registered_tool():
    with (
        pytest.raises(ValueError, match="already registered"),
        registered_tool(get_tool("get_order")),
    ):
        pass

    assert get_tool("get_order").kind == ToolKind.READ


def test_a_replaced_handler_serves_the_same_tool_only_for_the_block():
    real = get_tool("get_order")
    offered = tools_for_role("agent")

    with pytest.raises(RuntimeError), replaced_handler("get_order", handler=lambda ctx, a: {}):
        stand_in = get_tool("get_order")
        assert stand_in.handler is not real.handler
        # The model is offered exactly the same tool.
        assert tools_for_role("agent") == offered
        raise RuntimeError("the block fails")

    assert get_tool("get_order") is real


def test_it_fills_defaults_and_converts_numbers_when_validating():
    listed, listed_errors = validate_arguments(get_tool("list_customer_orders"), {"status": None})
    refund, refund_errors = validate_arguments(
        get_tool("create_refund"),
        {
            "order_id": "202610110087",
            "amount": Decimal("12.5"),
            "reason": "other",
            "explanation": "x",
        },
    )

    assert (listed, listed_errors) == ({"status": None, "limit": 10, "cursor": None}, {})
    assert refund_errors == {}
    assert refund["amount"] == Decimal("12.50")
    assert str(refund["amount"]) == "12.50"


@pytest.mark.parametrize(
    ("amount", "message"),
    [
        (True, "must be a number, not a boolean"),
        (False, "must be a number, not a boolean"),
        ("129 CNY", 'must be a decimal amount such as "129.00" or a number'),
        (float("nan"), "must be a finite number"),
        (float("inf"), "must be a finite number"),
        (Decimal("129.001"), "must have at most 2 decimal places"),
        (None, "is required"),
    ],
)
def test_it_refuses_amounts_that_are_not_money_when_validating(amount, message):
    _, errors = validate_arguments(
        get_tool("create_refund"),
        {"order_id": "202610110087", "amount": amount, "reason": "other", "explanation": "x"},
    )

    assert errors == {"amount": message}


@pytest.mark.parametrize(
    ("limit", "errors", "clean"),
    [
        (Decimal("5.0"), {}, 5),
        (5.0, {}, 5),
        (Decimal("NaN"), {"limit": "must be a finite number"}, None),
        (Decimal("Infinity"), {"limit": "must be a finite number"}, None),
        (float("inf"), {"limit": "must be a finite number"}, None),
    ],
)
def test_it_takes_a_whole_number_in_any_spelling_and_refuses_one_that_is_not_finite(
    limit, errors, clean
):
    found, found_errors = validate_arguments(get_tool("list_customer_orders"), {"limit": limit})

    assert (found_errors, found["limit"]) == (errors, clean)
    assert type(found["limit"]) is type(clean)


@pytest.mark.parametrize(
    ("name", "arguments", "errors"),
    [
        ("list_customer_orders", {"status": 5}, {"status": "must be a string, not a number"}),
        ("list_customer_orders", {"limit": Decimal("25.5")}, {"limit": "must be a whole number"}),
        ("search_policies", {"query": 7}, {"query": "must be a string, not a number"}),
        ("create_refund", {**MUG, "amount": [0]}, {"amount": "must be a number, not an array"}),
    ],
)
def test_it_names_the_first_rule_a_field_breaks(name, arguments, errors):
    _, found = validate_arguments(get_tool(name), arguments)

    assert found == errors


def test_it_lists_undeclared_arguments_first_then_the_schema_order_and_at_most_twenty():
    tool = get_tool("search_policies")

    _, few = validate_arguments(tool, {"limit": 9, "q": "x", "customer_id": 1})
    _, many = validate_arguments(tool, {f"extra_{n}": n for n in range(25)})

    assert list(few) == ["q", "customer_id", "query", "limit"]
    assert list(many) == [f"extra_{n}" for n in range(20)]


def test_no_tool_withdraws_a_refund():
    # Withdrawal is for people (DESIGN §17): the assistant and MCP hosts share these tools,
    # and none of them names withdrawal or reaches refunds.services.refund_withdraw.
    agent_source = "\n".join(path.read_text() for path in Path(agent.__file__).parent.rglob("*.py"))

    assert [tool.name for tool in TOOLS if "withdraw" in tool.name] == []
    assert "refund_withdraw" not in agent_source
    # get_refund_status reads the status; it offers no way to set it.
    assert (
        "withdrawn means the desk took the proposal back"
        in get_tool("get_refund_status").description
    )
