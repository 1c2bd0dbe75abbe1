"""The refund rules: deterministic code, parameterised by a published policy version's `rules`.

Pure functions over plain facts; no database. Every verdict names the clause it enforces, so a
refusal can always be explained by pointing at the policy text (DESIGN §4).

Role limits are set per currency: `role_limits` maps a currency code to each role's limit in
that currency, and a refund is only ever compared with the limits of its own currency. A
currency the rules set no limits for is refused under R-5, never compared as a bare number
(DESIGN §1, invariant 4).
"""

import re
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal, InvalidOperation

from config.money import desk_can_hold, desk_places, money_str

PASS = "pass"
FAIL = "fail"

CLAUSE_ORDER = ("R-1", "R-2", "R-3", "R-4", "R-5", "R-6")

DELIVERED = "delivered"
CANCELLED = "cancelled"
NOT_DELIVERED_STATUSES = ("paid", "shipped")
REASONS_BEFORE_DELIVERY = ("not_received",)
REASONS_AFTER_DELIVERY = ("damaged", "wrong_item")
REASONS_ANY_TIME = ("other",)

REQUIRED_RULE_KEYS = ("refund_window_days", "non_refundable_categories", "role_limits")
CURRENCY_CODE = re.compile(r"[A-Z]{3}")


@dataclass(frozen=True)
class RefundFacts:
    order_status: str  # paid / shipped / delivered / cancelled
    delivered_at: datetime | None
    categories: tuple[str, ...]  # categories of the order's lines
    amount_paid: Decimal
    refunded_so_far: Decimal  # committed refunds (orders.selectors.refunded_total)
    amount: Decimal  # requested
    currency: str  # the order's: amount, amount_paid and refunded_so_far are all in it
    reason: str  # damaged / not_received / wrong_item / other
    actor_role: str  # config.roles.Role values: intern / agent / supervisor
    now: datetime
    requester_id: int | None = None
    reviewer_id: int | None = None  # given at approval time; R-6 fails when == requester_id
    # What the requester has already proposed or had refunded on this order, apart from this
    # request: R-5 limits their total, so splitting a refund never gets past a role limit.
    requester_other_amount: Decimal = Decimal("0.00")


@dataclass(frozen=True)
class Evaluation:
    allowed: bool
    # [{"clause": "R-1", "outcome": "pass" | "fail", "detail": "..."}], in clause order.
    verdicts: list[dict] = field(default_factory=list)
    policy_version_id: int | None = None
    # False when the rules set no limits for the refund's currency (R-5 fails for that).
    currency_supported: bool = True

    def failing(self) -> list[dict]:
        return [verdict for verdict in self.verdicts if verdict["outcome"] == FAIL]

    def failing_clauses(self) -> list[str]:
        return [verdict["clause"] for verdict in self.failing()]

    def as_dict(self) -> dict:
        """JSON-ready, for storing on a refund request or returning to a client."""
        return {
            "allowed": self.allowed,
            "policy_version_id": self.policy_version_id,
            "verdicts": [dict(verdict) for verdict in self.verdicts],
        }


def _verdict(clause: str, passed: bool, detail: str) -> dict:
    return {"clause": clause, "outcome": PASS if passed else FAIL, "detail": detail}


def _check_window(facts: RefundFacts, rules: dict) -> dict:
    window = int(rules["refund_window_days"])
    if facts.delivered_at is None:
        return _verdict(
            "R-1", True, f"not delivered yet; the {window}-day refund window starts at delivery"
        )
    # A delivery stamped slightly in the future (clock skew) counts as delivered today.
    days = max((facts.now - facts.delivered_at).days, 0)
    ago = "today" if days == 0 else f"{days} day{'s' if days != 1 else ''} ago"
    if days <= window:
        return _verdict("R-1", True, f"delivered {ago}, within the {window}-day refund window")
    return _verdict(
        "R-1", False, f"delivered {ago}; the refund window closed {window} days after delivery"
    )


def _check_balance(facts: RefundFacts) -> dict:
    currency = facts.currency
    balance = facts.amount_paid - facts.refunded_so_far
    amount = money_str(facts.amount)
    figures = (
        f"paid {money_str(facts.amount_paid)} {currency}, already refunded "
        f"{money_str(facts.refunded_so_far)} {currency}"
    )
    if facts.amount <= 0:
        return _verdict(
            "R-2",
            False,
            f"the amount must be greater than 0.00 {currency}; requested {amount} {currency}",
        )
    if facts.amount > balance:
        return _verdict(
            "R-2",
            False,
            f"requested {amount} {currency} exceeds the refundable "
            f"balance of {money_str(balance)} {currency} ({figures})",
        )
    return _verdict(
        "R-2",
        True,
        f"requested {amount} {currency} is within the refundable "
        f"balance of {money_str(balance)} {currency} ({figures})",
    )


def _check_categories(facts: RefundFacts, rules: dict) -> dict:
    excluded = list(rules["non_refundable_categories"])
    found = [category for category in dict.fromkeys(facts.categories) if category in excluded]
    if found:
        return _verdict(
            "R-3",
            False,
            f"the order contains non-refundable items "
            f"({', '.join(found)}); {' and '.join(excluded)} items "
            "are not refunded",
        )
    return _verdict("R-3", True, f"no non-refundable items ({', '.join(excluded)})")


def _check_reason(facts: RefundFacts) -> dict:
    reason, status = facts.reason, facts.order_status
    if status == CANCELLED:
        return _verdict("R-4", False, "cancelled orders are not refunded through the desk")
    if reason in REASONS_BEFORE_DELIVERY:
        if status == DELIVERED:
            return _verdict(
                "R-4", False, f"reason '{reason}' does not fit an order that was delivered"
            )
        return _verdict(
            "R-4", True, f"reason '{reason}' fits an order that is {status} and not delivered yet"
        )
    if reason in REASONS_AFTER_DELIVERY:
        if status != DELIVERED:
            return _verdict(
                "R-4", False, f"reason '{reason}' needs a delivered order; this order is {status}"
            )
        return _verdict("R-4", True, f"reason '{reason}' fits a delivered order")
    if reason in REASONS_ANY_TIME:
        return _verdict("R-4", True, f"reason '{reason}' fits an order that is {status}")
    return _verdict("R-4", False, f"unknown reason '{reason}'")


def _limit_of(role_limits: dict, role: str) -> Decimal | None:
    try:
        return Decimal(str(role_limits[role]))
    except (KeyError, InvalidOperation):
        return None


def _check_authority(facts: RefundFacts, rules: dict) -> dict:
    currency = facts.currency
    if currency not in rules["role_limits"]:
        return _verdict(
            "R-5",
            False,
            f"the policy sets no refund limits for {currency} (only for "
            f"{', '.join(sorted(rules['role_limits']))}); a refund in {currency} cannot be "
            "proposed or approved at the desk",
        )
    role_limits = rules["role_limits"][currency]
    role = facts.actor_role
    limit = _limit_of(role_limits, role)
    total = facts.amount + facts.requester_other_amount
    if facts.requester_other_amount:
        requested = (
            f"requested {money_str(facts.amount)} {currency} plus "
            f"{money_str(facts.requester_other_amount)} {currency} already proposed "
            f"or refunded by the same requester on this order makes "
            f"{money_str(total)} {currency}, which"
        )
    else:
        requested = f"requested {money_str(facts.amount)} {currency}"
    if limit is None or limit <= 0:
        if role == "intern":
            detail = "interns may not propose refunds; ask an agent or a supervisor"
        else:
            detail = f"the {role or 'current'} role may not propose refunds"
        return _verdict("R-5", False, detail)
    if total <= limit:
        return _verdict(
            "R-5", True, f"{requested} is within the {role} limit of {money_str(limit)} {currency}"
        )
    stronger = sorted(
        (other_limit, other)
        for other in role_limits
        if (other_limit := _limit_of(role_limits, other)) is not None and other_limit >= total
    )
    # Above every limit, the requester still hands it to the role above theirs, if any: the
    # desk's escalation goes to supervisors, who take it further.
    higher = sorted(
        (other_limit, other)
        for other in role_limits
        if (other_limit := _limit_of(role_limits, other)) is not None and other_limit > limit
    )
    if stronger:
        escalation = f"escalate to a {stronger[0][1]}"
    elif higher:
        escalation = (
            f"above every desk limit; escalate to a {higher[-1][1]}, who takes it beyond the desk"
        )
    else:
        escalation = "above every desk limit; escalate beyond the desk"
    return _verdict(
        "R-5",
        False,
        f"{requested} exceeds the {role} limit of {money_str(limit)} {currency}; {escalation}",
    )


def _check_four_eyes(facts: RefundFacts) -> dict:
    if facts.reviewer_id is not None and facts.reviewer_id == facts.requester_id:
        return _verdict(
            "R-6", False, "the reviewer is the requester; a different reviewer must approve"
        )
    return _verdict("R-6", True, "needs approval by a reviewer other than the requester")


def validate_rules(rules: dict) -> list[str]:
    """Problems that would stop `evaluate_refund` from working with these rules; [] if none."""
    if not isinstance(rules, dict):
        return ["rules must be a JSON object"]
    problems = [f"missing key '{key}'" for key in REQUIRED_RULE_KEYS if key not in rules]
    window = rules.get("refund_window_days")
    if "refund_window_days" in rules and (
        isinstance(window, bool) or not isinstance(window, int) or window < 0
    ):
        problems.append("refund_window_days must be a whole number of days >= 0")
    categories = rules.get("non_refundable_categories")
    if "non_refundable_categories" in rules and (
        not isinstance(categories, list) or not all(isinstance(c, str) for c in categories)
    ):
        problems.append("non_refundable_categories must be a list of category names")
    if "role_limits" in rules:
        problems.extend(_role_limit_problems(rules["role_limits"]))
    if "currency" in rules:
        problems.append(
            "'currency' is not a rule: role_limits names each currency it sets limits for"
        )
    return problems


def _role_limit_problems(limits) -> list[str]:
    if not isinstance(limits, dict) or not limits:
        return [
            "role_limits must map currency codes to each role's limit, "
            'like {"CNY": {"agent": "500.00"}}'
        ]
    problems = []
    for currency, by_role in limits.items():
        if not isinstance(currency, str) or not CURRENCY_CODE.fullmatch(currency):
            problems.append(f"role_limits.{currency} is not a currency code like 'CNY'")
        elif not isinstance(by_role, dict):
            problems.append(f"role_limits.{currency} must map roles to amounts")
        else:
            for role, limit in by_role.items():
                problem = _limit_problem(currency, role, limit)
                if problem:
                    problems.append(problem)
    return problems


def _limit_problem(currency: str, role: str, limit) -> str | None:
    # Amounts are strings like "500.00" so they never pass through a float.
    try:
        amount = Decimal(limit) if isinstance(limit, str) else None
    except InvalidOperation:
        amount = None
    if amount is None or not amount.is_finite() or amount < 0:
        return f"role_limits.{currency}.{role} must be an amount string like '500.00'"
    if not desk_can_hold(amount, currency):
        return (
            f"role_limits.{currency}.{role} has more decimal places than {currency} amounts "
            f"can have ({desk_places(currency)})"
        )
    return None


def evaluate_refund(
    facts: RefundFacts, rules: dict, *, policy_version_id: int | None = None
) -> Evaluation:
    """One verdict per clause, R-1 to R-6; the refund is allowed only if every clause passes."""
    verdicts = [
        _check_window(facts, rules),
        _check_balance(facts),
        _check_categories(facts, rules),
        _check_reason(facts),
        _check_authority(facts, rules),
        _check_four_eyes(facts),
    ]
    allowed = all(verdict["outcome"] == PASS for verdict in verdicts)
    return Evaluation(
        allowed=allowed,
        verdicts=verdicts,
        policy_version_id=policy_version_id,
        currency_supported=facts.currency in rules["role_limits"],
    )
