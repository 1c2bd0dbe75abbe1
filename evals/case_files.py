# Over 400 lines: the whole case format is checked in one place, so a file's every problem is
# reported in one pass with its line, and a key added to the format has one place to go.
"""Reading eval cases (DESIGN §11): one JSON object per line, in a .jsonl file or a folder of
them. Every problem is reported as `file:line: what is wrong` before anything runs, so a long
run against a slow model never dies on case 57."""

import json
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path

from agent.tools.registry import tool_names
from config.money import desk_can_hold, desk_places
from config.roles import Role
from desk.demo import CUSTOMERS, ORDERS, TICKETS, USERS
from policies.rules import CURRENCY_CODE, validate_rules
from refunds.models import RefundRequest

SUPPORT_ROLES = (Role.INTERN, Role.AGENT, Role.SUPERVISOR)
# The demo users who may run the assistant, and the demo tickets a case can be about.
ACTORS = sorted(name for name, (role, _) in USERS.items() if role in SUPPORT_ROLES)
DEMO_TICKETS = sorted(reference for reference, *_ in TICKETS)
DEMO_ORDERS = sorted(order_id for order_id, *_ in ORDERS)
DEMO_CUSTOMER_EMAILS = sorted(email for _, email in CUSTOMERS.values())
REFUND_REASONS = tuple(RefundRequest.Reason.values)
EXPECT_KEYS = {"tools", "args", "forbid_tools", "refund", "answer_must", "answer_must_not"}
# Optional: case-insensitive substrings of the run's customer draft (DESIGN §13).
DRAFT_KEYS = {"draft_must", "draft_must_not"}


class CaseError(ValueError):
    """A case file that cannot be run as written."""


class CaseProblem(Exception):
    """What is wrong with one case; CaseError adds where it is."""


@dataclass(frozen=True)
class Case:
    id: str
    ticket: str
    actor: str
    message: str
    expect: dict
    setup: list[dict] = field(default_factory=list)
    # The run's step limit instead of AGENT_MAX_STEPS; reaching it fails the case.
    max_steps: int | None = None
    # What the offline planner does not do yet that this case needs (empty: nothing); the CI
    # gate leaves such cases out (eval_agent --skip-offline-gaps), every other eval runs them.
    offline_gap: str = ""
    source: str = ""  # file:line, for messages

    @property
    def expected_first_tool(self) -> str:
        tools = self.expect.get("tools") or []
        return tools[0] if tools else "(none)"

    def as_dict(self) -> dict:
        """What a worker process needs to run the case."""
        return {
            "id": self.id,
            "ticket": self.ticket,
            "actor": self.actor,
            "message": self.message,
            "setup": self.setup,
            "max_steps": self.max_steps,
        }


def case_paths(path: Path) -> list[Path]:
    if path.is_dir():
        files = sorted(path.glob("*.jsonl"))
        if not files:
            raise CaseError(f"{path}: no *.jsonl case files in this folder")
        return files
    if path.is_file():
        return [path]
    raise CaseError(f"{path}: no such file or folder")


def load_cases(path: Path | str) -> list[Case]:
    """Every case under `path` (a .jsonl file or a folder of them), in file and line order."""
    cases: list[Case] = []
    seen: dict[str, str] = {}
    for file in case_paths(Path(path)):
        for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            where = f"{file}:{number}"
            case = parse_case(line, where=where)
            if case.id in seen:
                raise CaseError(f"{where}: case id {case.id!r} is already used at {seen[case.id]}")
            seen[case.id] = where
            cases.append(case)
    if not cases:
        raise CaseError(f"{path}: no cases")
    return cases


def parse_case(line: str, *, where: str) -> Case:
    try:
        data = json.loads(line)
    except ValueError as exc:
        raise CaseError(f"{where}: not JSON: {exc}") from exc
    try:
        return _case(data, where)
    except CaseProblem as problem:
        raise CaseError(f"{where}: {problem}") from None


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise CaseProblem(message)


def _text(data: dict, key: str) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value.strip():
        raise CaseProblem(f"{key!r} must be a non-empty string")
    return value


def _strings(value, name: str) -> list[str]:
    _require(
        isinstance(value, list) and all(isinstance(item, str) for item in value),
        f"{name} must be a list of strings",
    )
    return value


def _amount(value, name: str) -> None:
    _require(not isinstance(value, bool), f'{name} must be an amount such as "129.00"')
    try:
        amount = Decimal(str(value))
    except InvalidOperation:
        raise CaseProblem(f'{name} must be an amount such as "129.00", not {value!r}') from None
    _require(amount.is_finite() and amount > 0, f"{name} must be a positive amount")


def _tools(value, name: str) -> list[str]:
    known = tool_names()
    tools = _strings(value, name)
    unknown = [tool for tool in tools if tool not in known]
    _require(not unknown, f"{name} names unknown tools {unknown} (tools: {', '.join(known)})")
    return tools


def _case(data, where: str) -> Case:
    _require(isinstance(data, dict), "a case must be a JSON object")
    case_id = _text(data, "id")
    ticket = _text(data, "ticket")
    _require(
        ticket in DEMO_TICKETS,
        f"unknown ticket {ticket!r} (demo tickets: {', '.join(DEMO_TICKETS)})",
    )
    actor = _text(data, "actor")
    _require(
        actor in ACTORS,
        f"unknown actor {actor!r} (demo users who run the assistant: {', '.join(ACTORS)})",
    )
    message = _text(data, "message")
    expect = data.get("expect")
    _require(isinstance(expect, dict), "'expect' must be an object")
    _check_expect(expect)
    return Case(
        id=case_id,
        ticket=ticket,
        actor=actor,
        message=message,
        expect=expect,
        source=where,
        **_setup_cap_and_gap(data, case_id),
    )


def _check_expect(expect: dict) -> None:
    known = EXPECT_KEYS | DRAFT_KEYS
    unknown = sorted(set(expect) - known)
    _require(not unknown, f"unknown keys in 'expect': {unknown} (known: {sorted(known)})")
    _tools(expect.get("tools", []), "expect.tools")
    _tools(expect.get("forbid_tools", []), "expect.forbid_tools")
    args = expect.get("args", {})
    _require(isinstance(args, dict), "expect.args must be an object of {tool: {key: value}}")
    _tools(list(args), "expect.args")
    for tool, expected in args.items():
        _require(isinstance(expected, dict), f"expect.args.{tool} must be an object")
        if "amount" in expected:
            _amount(expected["amount"], f"expect.args.{tool}.amount")
    if expect.get("refund") is not None:
        _check_refund(expect["refund"])
    _strings(expect.get("answer_must", []), "expect.answer_must")
    _strings(expect.get("answer_must_not", []), "expect.answer_must_not")
    _strings(expect.get("draft_must", []), "expect.draft_must")
    _strings(expect.get("draft_must_not", []), "expect.draft_must_not")


def _check_refund(refund) -> None:
    _require(isinstance(refund, dict), "expect.refund must be null or an object")
    _require(isinstance(refund.get("status"), str), "expect.refund.status must be a status string")
    _require("amount" in refund, "expect.refund.amount is required")
    _amount(refund["amount"], "expect.refund.amount")
    unknown = sorted(set(refund) - {"status", "amount", "order_id", "reason"})
    _require(not unknown, f"unknown keys in expect.refund: {unknown}")


# --- Setup steps, the step cap, the offline gap ------------------------------------------------
# The states a case can start from (evals/case_setup.py makes them), how many steps its run
# gets, and what the offline planner lacks for it. Kept in one section: other keys are checked
# above.

# The statuses an earlier refund can be set up in. The first two are written as history; the
# others are made by the refund services themselves (evals/case_setup.py).
REFUND_STATUSES_IN_SETUP = (
    "succeeded",
    "pending_approval",
    "rejected",
    "withdrawn",
    "outcome_unknown",
    "provider_pending",
)
# kind -> (required keys, optional keys), besides "kind".
SETUP_KEYS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "customer_message": (frozenset({"body"}), frozenset()),
    "order_note": (frozenset({"order_id", "note"}), frozenset()),
    "customer_name": (frozenset({"customer_email", "name"}), frozenset()),
    "refund": (
        frozenset({"order_id", "amount", "status", "reason"}),
        frozenset({"requested_by", "explanation", "note"}),
    ),
    "order_currency": (frozenset({"order_id", "currency", "amount_paid"}), frozenset()),
    "role_limits": (frozenset({"currency", "limits"}), frozenset()),
    "tool_timeout": (frozenset({"tool"}), frozenset({"timeout_s"})),
}
# A tool_timeout case runs with this TOOL_TIMEOUT_S unless it says otherwise: long enough for
# every other call of the run, short enough that the case costs seconds, not the production 8.
TOOL_TIMEOUT_S_DEFAULT = 2.0
TOOL_TIMEOUT_S_MAX = 30.0
# A case's own step cap; the harness drives far more deliveries than this (evals/shop.py).
MAX_STEPS_CAP = 20
SUPPORT_ROLE_NAMES = tuple(role.value for role in SUPPORT_ROLES)


def _setup_cap_and_gap(data: dict, case_id: str) -> dict:
    """The case's setup steps, step cap and offline gap, checked; a problem names the case."""
    try:
        setup = data.get("setup", [])
        _require(isinstance(setup, list), "'setup' must be a list of steps")
        for index, step in enumerate(setup, start=1):
            _check_setup_step(step, f"setup step {index}")
        return {
            "setup": setup,
            "max_steps": _max_steps(data.get("max_steps")),
            "offline_gap": _offline_gap(data.get("offline_gap")),
        }
    except CaseProblem as problem:
        raise CaseProblem(f"case {case_id!r}: {problem}") from None


def _offline_gap(value) -> str:
    _require(
        value is None or (isinstance(value, str) and bool(value.strip())),
        "'offline_gap' must say in a non-empty string what the offline planner does not do yet",
    )
    return value or ""


def _max_steps(value) -> int | None:
    if value is None:
        return None
    _require(
        isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_STEPS_CAP,
        f"'max_steps' must be a whole number from 1 to {MAX_STEPS_CAP}, not {value!r}",
    )
    return value


def _check_setup_step(step, name: str) -> None:
    _require(isinstance(step, dict), f"{name} must be an object")
    kind = step.get("kind")
    _require(
        kind in SETUP_KEYS,
        f"{name}: unknown kind {kind!r} (kinds: {', '.join(sorted(SETUP_KEYS))})",
    )
    required, optional = SETUP_KEYS[kind]
    missing = sorted(key for key in required if key not in step)
    _require(not missing, f"{name} ({kind}) lacks {missing}")
    unknown = sorted(set(step) - required - optional - {"kind"})
    _require(
        not unknown,
        f"{name} ({kind}): unknown keys {unknown} (known: {sorted(required | optional)})",
    )
    if "order_id" in step:
        _require(
            step["order_id"] in DEMO_ORDERS,
            f"{name}: unknown order {step['order_id']!r} (demo orders: {', '.join(DEMO_ORDERS)})",
        )
    SETUP_CHECKS.get(kind, _no_more_checks)(step, name)


def _no_more_checks(step: dict, name: str) -> None:
    pass


def _check_refund_step(step: dict, name: str) -> None:
    _amount(step["amount"], f"{name}.amount")
    _require(
        step["status"] in REFUND_STATUSES_IN_SETUP,
        f"{name}.status must be one of {', '.join(REFUND_STATUSES_IN_SETUP)}, "
        f"not {step['status']!r}",
    )
    _require(
        step["reason"] in REFUND_REASONS,
        f"{name}.reason must be one of {', '.join(REFUND_REASONS)}",
    )
    _require(
        "requested_by" not in step or step["requested_by"] in ACTORS,
        f"{name}.requested_by must be one of {', '.join(ACTORS)}",
    )
    for key in ("explanation", "note"):
        _require(key not in step or isinstance(step[key], str), f"{name}.{key} must be a string")
    _require(
        "note" not in step or step["status"] in ("rejected", "withdrawn"),
        f"{name}.note is the reviewer's or the withdrawer's note: only for a rejected or "
        "withdrawn refund",
    )


def _check_customer_name_step(step: dict, name: str) -> None:
    _require(
        step["customer_email"] in DEMO_CUSTOMER_EMAILS,
        f"{name}: unknown customer e-mail {step['customer_email']!r} "
        f"(demo customers: {', '.join(DEMO_CUSTOMER_EMAILS)})",
    )


def _currency(value, name: str) -> str:
    _require(
        isinstance(value, str) and CURRENCY_CODE.fullmatch(value) is not None,
        f'{name} must be a currency code such as "JPY", not {value!r}',
    )
    return value


def _amount_in(value, currency: str, name: str, *, zero_ok: bool = False) -> None:
    """An amount string `currency` can express (12.50 JPY cannot: no minor unit)."""
    _require(
        isinstance(value, str),
        f'{name} must be an amount string such as "129.00", not {value!r}',
    )
    try:
        amount = Decimal(value)
    except InvalidOperation:
        raise CaseProblem(f'{name} must be an amount such as "129.00", not {value!r}') from None
    _require(
        amount.is_finite() and (amount >= 0 if zero_ok else amount > 0),
        f"{name} must be {'zero or more' if zero_ok else 'a positive amount'}",
    )
    _require(
        desk_can_hold(amount, currency),
        f"{name} {value} has more decimal places than {currency} amounts can have "
        f"({desk_places(currency)})",
    )


def _check_order_currency_step(step: dict, name: str) -> None:
    currency = _currency(step["currency"], f"{name}.currency")
    _amount_in(step["amount_paid"], currency, f"{name}.amount_paid")


def _check_role_limits_step(step: dict, name: str) -> None:
    currency = _currency(step["currency"], f"{name}.currency")
    limits = step["limits"]
    _require(
        isinstance(limits, dict) and bool(limits),
        f'{name}.limits must map roles to amounts, like {{"agent": "50000.00"}}',
    )
    unknown = sorted(set(limits) - set(SUPPORT_ROLE_NAMES))
    _require(
        not unknown,
        f"{name}.limits names unknown roles {unknown} (roles: {', '.join(SUPPORT_ROLE_NAMES)})",
    )
    for role, limit in limits.items():
        _amount_in(limit, currency, f"{name}.limits.{role}", zero_ok=True)
    # What publishing would refuse, refused here, before any case runs.
    problems = [
        problem
        for problem in validate_rules({"role_limits": {currency: limits}})
        if problem.startswith("role_limits")
    ]
    _require(not problems, f"{name}: {'; '.join(problems)}")


def _check_tool_timeout_step(step: dict, name: str) -> None:
    tool = step["tool"]
    known = tool_names()
    _require(tool in known, f"{name}.tool: unknown tool {tool!r} (tools: {', '.join(known)})")
    if "timeout_s" in step:
        value = step["timeout_s"]
        _require(
            isinstance(value, int | float)
            and not isinstance(value, bool)
            and 0 < value <= TOOL_TIMEOUT_S_MAX,
            f"{name}.timeout_s must be a number of seconds above 0 and at most "
            f"{TOOL_TIMEOUT_S_MAX:g}, not {value!r}",
        )


SETUP_CHECKS = {
    "refund": _check_refund_step,
    "customer_name": _check_customer_name_step,
    "order_currency": _check_order_currency_step,
    "role_limits": _check_role_limits_step,
    "tool_timeout": _check_tool_timeout_step,
}
