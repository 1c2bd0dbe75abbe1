"""The eval case set (evals/cases/*.jsonl) against its documented format, the demo shop and the
refund policy: a case whose facts are wrong measures nothing, so its mistakes fail here, before
any model runs it. The format and conventions are in evals/cases/README.md."""

import copy
import json
import re
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import NamedTuple

import pytest

from agent.tools.registry import get_tool, tool_names
from config.roles import Role
from desk.demo import (
    BLENDER_REFUND,
    CUSTOMERS,
    ORDER_NOTE_INJECTION,
    ORDERS,
    TICKET_INJECTION,
    TICKETS,
    USERS,
)
from evals import coverage
from evals.case_files import load_cases as harness_load_cases
from evals.case_setup import SETUP_REQUESTER
from policies.rules import RefundFacts, evaluate_refund
from policies.seed import REFUNDS_RULES, REFUNDS_V1_CLAUSES
from refunds.models import RefundRequest
from refunds.services import NOT_COUNTED_FOR_LIMIT

CASES_DIR = Path(__file__).resolve().parents[2] / "evals" / "cases"
CASE_FILES = sorted(CASES_DIR.glob("*.jsonl"))
MINIMUM_CASES = 80

TOP_KEYS = {
    "id",
    "description",
    "ticket",
    "actor",
    "message",
    "setup",
    "max_steps",
    "offline_gap",
    "expect",
    "tags",
}
REQUIRED_TOP_KEYS = TOP_KEYS - {"setup", "max_steps", "offline_gap"}
EXPECT_KEYS = {"tools", "args", "forbid_tools", "refund", "answer_must", "answer_must_not"}
DRAFT_KEYS = {"draft_must", "draft_must_not"}
TAG_KEYS = {"tool", "clause", "role", "injection", "kind"}
REFUND_KEYS = {"status", "amount", "order_id", "reason"}
SETUP_KEYS = {
    "customer_message": ({"body"}, set()),
    "order_note": ({"order_id", "note"}, set()),
    "customer_name": ({"customer_email", "name"}, set()),
    "refund": (
        {"order_id", "amount", "status", "reason"},
        {"requested_by", "explanation", "note"},
    ),
    "order_currency": ({"order_id", "currency", "amount_paid"}, set()),
    "role_limits": ({"currency", "limits"}, set()),
    "tool_timeout": ({"tool"}, {"timeout_s"}),
}
SETUP_REFUND_STATUSES = {
    "succeeded",
    "pending_approval",
    "rejected",
    "withdrawn",
    "outcome_unknown",
    "provider_pending",
}
# Statuses in which an earlier refund counts against what is left to refund.
COMMITTED_IN_SETUP = {"succeeded", "outcome_unknown", "provider_pending"}
TWO_DECIMALS = re.compile(r"^[0-9]+\.[0-9]{2}$")
CASE_ID = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")

# The demo shop as plain facts (desk/demo.py), keyed the way cases name things.
ROLE_OF = {name: role.value for name, (role, _) in USERS.items() if role is not None}
SUPPORT_ROLES = {Role.INTERN.value, Role.AGENT.value, Role.SUPERVISOR.value}
ACTORS = {name for name, role in ROLE_OF.items() if role in SUPPORT_ROLES}
EMAIL_OF = {key: email for key, (_, email) in CUSTOMERS.items()}


class DemoOrder(NamedTuple):
    customer: str  # e-mail
    category: str
    paid: Decimal
    status: str
    days_ago: int
    note: str


class DemoTicket(NamedTuple):
    customer: str  # e-mail
    order: str
    messages: list[tuple[str, str]]  # (author kind, body)


ORDER_FACTS = {
    order_id: DemoOrder(EMAIL_OF[who], category, Decimal(price), status, days_ago, note)
    for order_id, who, (_, _, category, price), status, days_ago, note in ORDERS
}
TICKET_FACTS = {
    reference: DemoTicket(EMAIL_OF[who], order_id, messages)
    for reference, who, _, order_id, _, messages in TICKETS
}


def read_lines() -> list[tuple[str, int, str]]:
    return [
        (file.name, number, line)
        for file in CASE_FILES
        for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), start=1)
        if line.strip()
    ]


def all_cases() -> list[dict]:
    return [json.loads(line) for _, _, line in read_lines()]


CASES = all_cases()


def case_params():
    return pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])


def setup_steps(case: dict, kind: str) -> list[dict]:
    return [step for step in case.get("setup", []) if step["kind"] == kind]


# --- The files ------------------------------------------------------------------------------


def test_the_case_folder_has_several_files_of_at_least_80_cases_in_all():
    assert len(CASE_FILES) >= 3
    assert len(CASES) >= MINIMUM_CASES


def test_every_line_of_every_case_file_is_one_json_object():
    for name, number, line in read_lines():
        value = json.loads(line)
        assert isinstance(value, dict), f"{name}:{number} is not a JSON object"


def test_case_ids_are_unique_across_files():
    seen: dict[str, str] = {}
    for name, number, line in read_lines():
        case_id = json.loads(line)["id"]
        assert case_id not in seen, f"{name}:{number}: {case_id!r} already used at {seen[case_id]}"
        seen[case_id] = f"{name}:{number}"


def test_the_harness_loads_every_case_file():
    loaded = harness_load_cases(CASES_DIR)

    assert [case.id for case in loaded] == [case["id"] for case in CASES]


# --- One case -------------------------------------------------------------------------------


@case_params()
def test_a_case_has_the_documented_keys_with_their_types(case):
    assert REQUIRED_TOP_KEYS <= set(case) <= TOP_KEYS
    assert CASE_ID.match(case["id"])
    for key in ("description", "ticket", "actor", "message"):
        assert isinstance(case[key], str) and case[key].strip(), key
    expect = case["expect"]
    assert EXPECT_KEYS <= set(expect) <= EXPECT_KEYS | DRAFT_KEYS
    for key in ("tools", "forbid_tools", "answer_must", "answer_must_not"):
        assert isinstance(expect[key], list), key
    for key in DRAFT_KEYS & set(expect):
        assert all(isinstance(item, str) and item for item in expect[key]), key
        assert all(isinstance(item, str) and item for item in expect[key]), key
    assert isinstance(expect["args"], dict)
    assert all(isinstance(values, dict) and values for values in expect["args"].values())
    assert expect["refund"] is None or isinstance(expect["refund"], dict)
    assert isinstance(case.get("setup", []), list)
    assert set(case["tags"]) == TAG_KEYS


@case_params()
def test_a_case_names_a_demo_ticket_and_a_demo_user_who_runs_the_assistant(case):
    assert case["ticket"] in TICKET_FACTS
    assert case["actor"] in ACTORS


@case_params()
def test_a_case_names_only_tools_that_exist_with_arguments_from_their_schema(case):
    expect = case["expect"]
    known = set(tool_names())
    assert set(expect["tools"]) <= known
    assert set(expect["forbid_tools"]) <= known
    assert set(expect["args"]) <= known
    for tool, values in expect["args"].items():
        declared = get_tool(tool)
        assert declared is not None
        schema = declared.parameters["properties"]
        assert set(values) <= set(schema), f"{tool}: {sorted(set(values) - set(schema))}"


@case_params()
def test_amounts_are_strings_with_two_decimals(case):
    expect = case["expect"]
    amounts = [values["amount"] for values in expect["args"].values() if "amount" in values]
    if expect["refund"] is not None:
        amounts.append(expect["refund"]["amount"])
    amounts += [step["amount"] for step in setup_steps(case, "refund")]
    for amount in amounts:
        assert isinstance(amount, str) and TWO_DECIMALS.match(amount), amount


@case_params()
def test_setup_steps_are_supported_and_touch_the_tickets_own_customer(case):
    customer = TICKET_FACTS[case["ticket"]].customer
    for step in case.get("setup", []):
        assert step.get("kind") in SETUP_KEYS
        required, optional = SETUP_KEYS[step["kind"]]
        assert required <= set(step) - {"kind"} <= required | optional
        if "order_id" in step:
            assert ORDER_FACTS[step["order_id"]].customer == customer
        if step["kind"] == "customer_name":
            assert step["customer_email"] == customer
        if step["kind"] == "refund":
            assert step["status"] in SETUP_REFUND_STATUSES
            assert step["reason"] in RefundRequest.Reason.values
            assert step.get("requested_by", SETUP_REQUESTER) in ROLE_OF


@case_params()
def test_expectations_agree_with_each_other(case):
    expect = case["expect"]
    assert not set(expect["tools"]) & set(expect["forbid_tools"])
    assert set(expect["args"]) <= set(expect["tools"])
    assert not set(expect["answer_must"]) & set(expect["answer_must_not"])
    proposes = "create_refund" in expect["tools"]
    assert proposes == (expect["refund"] is not None)
    if proposes:
        # Convention: a careful agent reads the order before proposing a refund on it.
        assert "get_order" in expect["tools"]
        assert (
            expect["args"]["get_order"]["order_id"] == expect["args"]["create_refund"]["order_id"]
        )


@case_params()
def test_an_expected_refund_is_the_proposal_the_arguments_describe(case):
    refund = case["expect"]["refund"]
    if refund is None:
        return
    proposal = case["expect"]["args"]["create_refund"]
    assert set(refund) <= REFUND_KEYS
    assert refund["status"] == "pending_approval"
    assert refund["order_id"] == proposal["order_id"]
    assert refund["amount"] == proposal["amount"]
    assert refund.get("reason") == proposal.get("reason")
    if "reason" in refund:
        assert refund["reason"] in RefundRequest.Reason.values
    assert ORDER_FACTS[refund["order_id"]].customer == TICKET_FACTS[case["ticket"]].customer
    pending_before = [
        step
        for step in setup_steps(case, "refund")
        if step["order_id"] == refund["order_id"] and step["status"] == "pending_approval"
    ]
    # A proposal there would be a new version of the pending request, not a new request.
    assert not pending_before


def refund_facts(case: dict, *, now: datetime) -> RefundFacts:
    """The policy's view of the expected refund on the case's fresh shop."""
    refund = case["expect"]["refund"]
    order = ORDER_FACTS[refund["order_id"]]
    requester = case["actor"]
    earlier = [
        (amount, "succeeded", "supervisor")
        for order_id, amount, *_ in [BLENDER_REFUND]
        if order_id == refund["order_id"]
    ] + [
        (step["amount"], step["status"], step.get("requested_by", SETUP_REQUESTER))
        for step in setup_steps(case, "refund")
        if step["order_id"] == refund["order_id"]
    ]
    # An order_currency step makes the order paid in another currency.
    currency, paid = "CNY", order.paid
    for step in setup_steps(case, "order_currency"):
        if step["order_id"] == refund["order_id"]:
            currency, paid = step["currency"], Decimal(step["amount_paid"])
    delivered = order.status == "delivered"
    return RefundFacts(
        order_status=order.status,
        delivered_at=now - timedelta(days=order.days_ago) if delivered else None,
        categories=(order.category,),
        amount_paid=paid,
        refunded_so_far=sum(
            (Decimal(amount) for amount, status, _ in earlier if status in COMMITTED_IN_SETUP),
            Decimal("0.00"),
        ),
        amount=Decimal(refund["amount"]),
        currency=currency,
        # Without an expected reason any fitting one will do; "other" fits every open order.
        reason=refund.get("reason", "other"),
        actor_role=ROLE_OF[requester],
        now=now,
        requester_other_amount=sum(
            (
                Decimal(amount)
                for amount, status, by in earlier
                if by == requester and status not in NOT_COUNTED_FOR_LIMIT
            ),
            Decimal("0.00"),
        ),
    )


def rules_of(case: dict) -> dict:
    """The published refund rules on the case's fresh shop: its role_limits steps publish a
    version with limits in another currency."""
    rules = copy.deepcopy(REFUNDS_RULES)
    for step in setup_steps(case, "role_limits"):
        rules["role_limits"][step["currency"]] = step["limits"]
    return rules


@pytest.mark.parametrize(
    "case",
    [case for case in CASES if case["expect"]["refund"] is not None],
    ids=lambda case: case["id"],
)
def test_an_expected_refund_passes_every_clause_of_the_published_policy(case):
    now = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)

    evaluation = evaluate_refund(refund_facts(case, now=now), rules_of(case))

    assert evaluation.failing() == []


def test_the_policy_check_of_expected_refunds_can_fail():
    """The facts behind the policy check are the demo's: 399.01 on the blender is refused."""
    over = {
        "actor": "agent",
        "ticket": "TCK-1002",
        "expect": {"refund": {"order_id": "202610180099", "amount": "399.01", "reason": "damaged"}},
    }
    now = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)

    evaluation = evaluate_refund(refund_facts(over, now=now), REFUNDS_RULES)

    assert evaluation.failing_clauses() == ["R-2"]


# --- Tags -----------------------------------------------------------------------------------


def test_the_tags_vocabulary_is_the_shops_tools_clauses_and_roles():
    # read_tool_result only pages through another tool's cut result: no case is about it.
    assert list(coverage.TOOLS) == [name for name in tool_names() if name != "read_tool_result"]
    assert list(coverage.CLAUSES) == [ref for ref, *_ in REFUNDS_V1_CLAUSES]
    assert set(coverage.ROLES) == SUPPORT_ROLES


@case_params()
def test_tags_use_the_documented_vocabulary(case):
    tags = case["tags"]
    assert isinstance(tags["tool"], list) and set(tags["tool"]) <= set(coverage.TOOLS)
    assert isinstance(tags["clause"], list) and set(tags["clause"]) <= set(coverage.CLAUSES)
    assert tags["role"] in coverage.ROLES
    assert tags["injection"] is None or tags["injection"] in coverage.INJECTIONS
    assert tags["kind"] in coverage.KINDS


@case_params()
def test_tags_agree_with_the_case(case):
    tags, expect = case["tags"], case["expect"]
    assert tags["role"] == ROLE_OF[case["actor"]]
    assert set(expect["tools"]) | set(expect["args"]) <= set(tags["tool"])
    ticket = TICKET_FACTS[case["ticket"]]
    if tags["injection"] == "ticket_message":
        demo_injection = any(body == TICKET_INJECTION for _, body in ticket.messages)
        assert demo_injection or setup_steps(case, "customer_message")
    if tags["injection"] == "order_note":
        demo_injection = ORDER_FACTS[ticket.order].note == ORDER_NOTE_INJECTION
        assert demo_injection or setup_steps(case, "order_note")
    if tags["injection"] == "customer_name":
        assert setup_steps(case, "customer_name")


def test_the_case_set_covers_every_tool_clause_role_and_injection_kind():
    counts = coverage.coverage(CASES)

    assert coverage.gaps(counts) == []
    assert set(coverage.KINDS) <= set(counts["kind"])


# --- The coverage table ---------------------------------------------------------------------


def test_the_coverage_table_counts_cases_per_value(tmp_path):
    cases = [
        {
            "id": "a",
            "tags": {
                "tool": ["get_order", "create_refund"],
                "clause": ["R-2"],
                "role": "agent",
                "injection": None,
                "kind": "boundary",
            },
        },
        {
            "id": "b",
            "tags": {
                "tool": ["get_order"],
                "clause": [],
                "role": "intern",
                "injection": "order_note",
                "kind": "injection",
            },
        },
        {"id": "c"},
    ]
    file = tmp_path / "some.jsonl"
    file.write_text("\n".join(json.dumps(case) for case in cases) + "\n\n", encoding="utf-8")

    loaded = coverage.load_cases(file)
    counts = coverage.coverage(loaded)
    table = coverage.format_table(loaded, source="some.jsonl")

    assert len(loaded) == 3
    assert counts["tool"] == {"get_order": 2, "create_refund": 1}
    assert counts["clause"] == {"R-2": 1}
    assert counts["role"] == {"agent": 1, "intern": 1}
    assert counts["injection"] == {"none": 2, "order_note": 1}
    assert "  get_order                2\n" in table
    assert "  search_policies          0\n" in table
    assert coverage.gaps(counts) == [
        "tool list_customer_orders",
        "tool search_policies",
        "tool get_refund_status",
        "clause R-1",
        "clause R-3",
        "clause R-4",
        "clause R-5",
        "clause R-6",
        "role supervisor",
        "injection ticket_message",
        "injection customer_name",
        "kind happy",
        "kind role",
        "kind partial",
        "kind ambiguity",
        "kind out_of_scope",
        "kind cross_customer",
        "kind multi_step",
        "kind honesty",
        "kind error_handling",
    ]
    assert table.startswith("3 cases in some.jsonl\n")


def test_the_coverage_command_prints_the_table_of_the_case_folder(capsys):
    status = coverage.main([str(CASES_DIR)])

    out = capsys.readouterr().out
    assert status == 0
    assert out.startswith(f"{len(CASES)} cases in {CASES_DIR} ({len(CASE_FILES)} files)\n")
    assert "not covered: nothing\n" in out
