"""The refund rules, clause by clause, at and across every boundary. Pure: no database."""

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from policies.rules import Evaluation, RefundFacts, evaluate_refund, validate_rules
from policies.seed import REFUNDS_RULES

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
RULES = REFUNDS_RULES
CNY_LIMITS = RULES["role_limits"]["CNY"]
# Limits in Kuwaiti dinar as well: 1 KWD is about 23 CNY, so 500 KWD is no agent's amount.
CNY_AND_KWD = {
    **RULES,
    "role_limits": {"CNY": CNY_LIMITS, "KWD": {"agent": "20.00", "supervisor": "200.00"}},
}

# A refund every clause allows: an agent refunding a damaged mug delivered 5 days ago.
ALLOWED = RefundFacts(
    order_status="delivered",
    delivered_at=NOW - timedelta(days=5),
    categories=("home",),
    amount_paid=Decimal("129.00"),
    refunded_so_far=Decimal("0.00"),
    amount=Decimal("129.00"),
    currency="CNY",
    reason="damaged",
    actor_role="agent",
    now=NOW,
    requester_id=7,
)


def verdict_of(evaluation: Evaluation, clause: str) -> dict:
    return next(v for v in evaluation.verdicts if v["clause"] == clause)


def test_it_allows_a_refund_that_fits_every_clause():
    evaluation = evaluate_refund(ALLOWED, RULES, policy_version_id=3)

    assert evaluation.allowed is True
    assert [v["clause"] for v in evaluation.verdicts] == ["R-1", "R-2", "R-3", "R-4", "R-5", "R-6"]
    assert {v["outcome"] for v in evaluation.verdicts} == {"pass"}
    assert evaluation.failing() == []
    assert evaluation.failing_clauses() == []
    assert evaluation.policy_version_id == 3


def test_it_serialises_an_evaluation_for_json():
    evaluation = evaluate_refund(
        replace(ALLOWED, amount=Decimal("600.00"), amount_paid=Decimal("899.00")),
        RULES,
        policy_version_id=1,
    )

    data = evaluation.as_dict()

    assert data["allowed"] is False
    assert data["policy_version_id"] == 1
    assert data["verdicts"][4] == {
        "clause": "R-5",
        "outcome": "fail",
        "detail": "requested 600.00 CNY exceeds the agent limit of 500.00 CNY; "
        "escalate to a supervisor",
    }


@pytest.mark.parametrize(
    ("days", "outcome"),
    [
        (0, "pass"),
        (1, "pass"),
        (29, "pass"),
        (30, "pass"),
        (31, "fail"),
        (75, "fail"),
    ],
)
def test_it_applies_the_refund_window_by_whole_days_since_delivery(days, outcome):
    facts = replace(ALLOWED, delivered_at=NOW - timedelta(days=days))

    evaluation = evaluate_refund(facts, RULES)

    assert verdict_of(evaluation, "R-1")["outcome"] == outcome
    assert evaluation.allowed is (outcome == "pass")


def test_it_counts_day_30_until_the_last_second_of_it():
    facts = replace(ALLOWED, delivered_at=NOW - timedelta(days=31) + timedelta(seconds=1))

    assert verdict_of(evaluate_refund(facts, RULES), "R-1")["outcome"] == "pass"


def test_it_explains_a_closed_window_with_the_numbers():
    facts = replace(ALLOWED, delivered_at=NOW - timedelta(days=31))

    evaluation = evaluate_refund(facts, RULES)

    assert evaluation.failing() == [
        {
            "clause": "R-1",
            "outcome": "fail",
            "detail": "delivered 31 days ago; the refund window closed 30 days after delivery",
        }
    ]


@pytest.mark.parametrize("status", ["paid", "shipped"])
def test_it_does_not_start_the_window_before_delivery(status):
    facts = replace(ALLOWED, order_status=status, delivered_at=None, reason="not_received")

    verdict = verdict_of(evaluate_refund(facts, RULES), "R-1")

    assert verdict == {
        "clause": "R-1",
        "outcome": "pass",
        "detail": "not delivered yet; the 30-day refund window starts at delivery",
    }


def test_it_takes_the_window_length_from_the_rules():
    facts = replace(ALLOWED, delivered_at=NOW - timedelta(days=8))

    assert evaluate_refund(facts, {**RULES, "refund_window_days": 7}).failing_clauses() == ["R-1"]
    assert evaluate_refund(facts, {**RULES, "refund_window_days": 8}).allowed is True


@pytest.mark.parametrize(
    ("paid", "refunded", "amount", "outcome"),
    [
        ("129.00", "0.00", "129.00", "pass"),
        ("129.00", "0.00", "129.01", "fail"),
        ("599.00", "200.00", "399.00", "pass"),
        ("599.00", "200.00", "399.01", "fail"),
        ("129.00", "129.00", "0.01", "fail"),
        ("129.00", "0.00", "0.01", "pass"),
        ("129.00", "0.00", "0.00", "fail"),
        ("129.00", "0.00", "-1.00", "fail"),
    ],
)
def test_it_limits_the_amount_to_paid_minus_already_refunded(paid, refunded, amount, outcome):
    facts = replace(
        ALLOWED,
        amount_paid=Decimal(paid),
        refunded_so_far=Decimal(refunded),
        amount=Decimal(amount),
    )

    assert verdict_of(evaluate_refund(facts, RULES), "R-2")["outcome"] == outcome


def test_it_explains_an_amount_over_the_balance():
    facts = replace(
        ALLOWED,
        amount_paid=Decimal("599.00"),
        refunded_so_far=Decimal("200.00"),
        amount=Decimal("399.01"),
    )

    assert verdict_of(evaluate_refund(facts, RULES), "R-2")["detail"] == (
        "requested 399.01 CNY exceeds the refundable balance of 399.00 CNY "
        "(paid 599.00 CNY, already refunded 200.00 CNY)"
    )


@pytest.mark.parametrize(
    ("categories", "outcome"),
    [
        (("home",), "pass"),
        (("electronics", "apparel"), "pass"),
        ((), "pass"),
        (("digital",), "fail"),
        (("gift_card",), "fail"),
        (("home", "digital"), "fail"),
        (("gift_card", "home", "gift_card"), "fail"),
    ],
)
def test_it_refuses_orders_with_non_refundable_categories(categories, outcome):
    facts = replace(ALLOWED, categories=categories)

    assert verdict_of(evaluate_refund(facts, RULES), "R-3")["outcome"] == outcome


def test_it_names_the_non_refundable_items_found():
    facts = replace(ALLOWED, categories=("home", "gift_card", "gift_card"))

    assert verdict_of(evaluate_refund(facts, RULES), "R-3")["detail"] == (
        "the order contains non-refundable items (gift_card); digital and gift_card items "
        "are not refunded"
    )


@pytest.mark.parametrize(
    ("reason", "status", "outcome"),
    [
        ("not_received", "paid", "pass"),
        ("not_received", "shipped", "pass"),
        ("not_received", "delivered", "fail"),
        ("not_received", "cancelled", "fail"),
        ("damaged", "paid", "fail"),
        ("damaged", "shipped", "fail"),
        ("damaged", "delivered", "pass"),
        ("damaged", "cancelled", "fail"),
        ("wrong_item", "paid", "fail"),
        ("wrong_item", "shipped", "fail"),
        ("wrong_item", "delivered", "pass"),
        ("wrong_item", "cancelled", "fail"),
        ("other", "paid", "pass"),
        ("other", "shipped", "pass"),
        ("other", "delivered", "pass"),
        ("other", "cancelled", "fail"),
        ("changed_my_mind", "delivered", "fail"),
    ],
)
def test_it_requires_the_reason_to_fit_the_order_state(reason, status, outcome):
    delivered_at = NOW - timedelta(days=5) if status == "delivered" else None
    facts = replace(ALLOWED, reason=reason, order_status=status, delivered_at=delivered_at)

    assert verdict_of(evaluate_refund(facts, RULES), "R-4")["outcome"] == outcome


def test_it_refuses_cancelled_orders_whatever_the_reason():
    facts = replace(ALLOWED, order_status="cancelled", delivered_at=None, reason="other")

    assert verdict_of(evaluate_refund(facts, RULES), "R-4")["detail"] == (
        "cancelled orders are not refunded through the desk"
    )


@pytest.mark.parametrize(
    ("role", "amount", "outcome"),
    [
        ("agent", "500.00", "pass"),
        ("agent", "500.01", "fail"),
        ("agent", "0.01", "pass"),
        ("supervisor", "5000.00", "pass"),
        ("supervisor", "5000.01", "fail"),
        ("intern", "0.01", "fail"),
        ("intern", "0.00", "fail"),
        ("reviewer", "1.00", "fail"),
        ("", "1.00", "fail"),
    ],
)
def test_it_holds_each_role_to_its_authority_limit(role, amount, outcome):
    facts = replace(
        ALLOWED, actor_role=role, amount=Decimal(amount), amount_paid=Decimal("9999.00")
    )

    assert verdict_of(evaluate_refund(facts, RULES), "R-5")["outcome"] == outcome


@pytest.mark.parametrize(
    ("role", "amount", "detail"),
    [
        (
            "agent",
            "600.00",
            "requested 600.00 CNY exceeds the agent limit of 500.00 CNY; escalate to a supervisor",
        ),
        (
            "agent",
            "6000.00",
            "requested 6000.00 CNY exceeds the agent limit of 500.00 CNY; above every desk limit; "
            "escalate to a supervisor, who takes it beyond the desk",
        ),
        (
            "supervisor",
            "5000.01",
            "requested 5000.01 CNY exceeds the supervisor limit of 5000.00 CNY; above every desk "
            "limit; escalate beyond the desk",
        ),
        ("intern", "10.00", "interns may not propose refunds; ask an agent or a supervisor"),
        ("reviewer", "10.00", "the reviewer role may not propose refunds"),
        (
            "supervisor",
            "5000.00",
            "requested 5000.00 CNY is within the supervisor limit of 5000.00 CNY",
        ),
    ],
)
def test_it_explains_authority_with_the_limit_and_where_to_escalate(role, amount, detail):
    facts = replace(
        ALLOWED, actor_role=role, amount=Decimal(amount), amount_paid=Decimal("9999.00")
    )

    assert verdict_of(evaluate_refund(facts, RULES), "R-5")["detail"] == detail


def test_it_refuses_a_role_whose_limit_is_zero():
    rules = {**RULES, "role_limits": {"CNY": {**CNY_LIMITS, "agent": "0.00"}}}

    evaluation = evaluate_refund(ALLOWED, rules)

    assert evaluation.failing_clauses() == ["R-5"]


@pytest.mark.parametrize(
    ("requester_id", "reviewer_id", "outcome"),
    [
        (7, None, "pass"),
        (7, 8, "pass"),
        (7, 7, "fail"),
        (None, 8, "pass"),
    ],
)
def test_it_requires_a_reviewer_other_than_the_requester(requester_id, reviewer_id, outcome):
    facts = replace(ALLOWED, requester_id=requester_id, reviewer_id=reviewer_id)

    evaluation = evaluate_refund(facts, RULES)

    assert verdict_of(evaluation, "R-6")["outcome"] == outcome
    assert evaluation.allowed is (outcome == "pass")


def test_it_says_a_refund_still_needs_a_second_person():
    assert verdict_of(evaluate_refund(ALLOWED, RULES), "R-6")["detail"] == (
        "needs approval by a reviewer other than the requester"
    )


def test_it_reports_every_failing_clause_in_clause_order():
    facts = replace(
        ALLOWED,
        delivered_at=NOW - timedelta(days=40),
        categories=("digital",),
        amount=Decimal("700.00"),
        amount_paid=Decimal("600.00"),
        reason="not_received",
        reviewer_id=7,
    )

    evaluation = evaluate_refund(facts, RULES)

    assert evaluation.allowed is False
    assert evaluation.failing_clauses() == ["R-1", "R-2", "R-3", "R-4", "R-5", "R-6"]
    assert len(evaluation.verdicts) == 6


def test_it_refuses_a_currency_the_policy_sets_no_limits_for():
    # Given an agent's 499.00 KWD refund (about 11,500 CNY) and limits set in CNY only
    facts = replace(
        ALLOWED, currency="KWD", amount=Decimal("499.00"), amount_paid=Decimal("499.00")
    )

    evaluation = evaluate_refund(facts, RULES)

    # Then R-5 refuses it as a currency the policy does not name, never as 499 < 500
    assert evaluation.allowed is False
    assert evaluation.currency_supported is False
    assert evaluation.failing() == [
        {
            "clause": "R-5",
            "outcome": "fail",
            "detail": "the policy sets no refund limits for KWD (only for CNY); a refund in "
            "KWD cannot be proposed or approved at the desk",
        }
    ]
    assert verdict_of(evaluation, "R-2")["detail"] == (
        "requested 499.00 KWD is within the refundable balance of 499.00 KWD "
        "(paid 499.00 KWD, already refunded 0.00 KWD)"
    )


@pytest.mark.parametrize(
    ("role", "amount", "outcome", "detail"),
    [
        (
            "agent",
            "499.00",
            "fail",
            "requested 499.00 KWD exceeds the agent limit of 20.00 KWD; above every desk "
            "limit; escalate to a supervisor, who takes it beyond the desk",
        ),
        (
            "agent",
            "20.01",
            "fail",
            "requested 20.01 KWD exceeds the agent limit of 20.00 KWD; escalate to a supervisor",
        ),
        ("agent", "20.00", "pass", "requested 20.00 KWD is within the agent limit of 20.00 KWD"),
        (
            "supervisor",
            "200.00",
            "pass",
            "requested 200.00 KWD is within the supervisor limit of 200.00 KWD",
        ),
        ("intern", "1.00", "fail", "interns may not propose refunds; ask an agent or a supervisor"),
    ],
)
def test_it_holds_a_refund_to_the_limits_of_its_own_currency(role, amount, outcome, detail):
    facts = replace(
        ALLOWED,
        currency="KWD",
        actor_role=role,
        amount=Decimal(amount),
        amount_paid=Decimal("999.00"),
    )

    evaluation = evaluate_refund(facts, CNY_AND_KWD)

    assert evaluation.currency_supported is True
    assert verdict_of(evaluation, "R-5") == {"clause": "R-5", "outcome": outcome, "detail": detail}


def test_it_keeps_the_cny_limits_for_a_cny_refund_when_other_currencies_are_named():
    facts = replace(ALLOWED, amount=Decimal("499.00"), amount_paid=Decimal("499.00"))

    assert verdict_of(evaluate_refund(facts, CNY_AND_KWD), "R-5")["detail"] == (
        "requested 499.00 CNY is within the agent limit of 500.00 CNY"
    )


def test_it_accepts_the_published_rules():
    assert validate_rules(RULES) == []
    assert validate_rules(CNY_AND_KWD) == []


@pytest.mark.parametrize(
    ("rules", "problem"),
    [
        (
            {k: v for k, v in RULES.items() if k != "role_limits"},
            "missing key 'role_limits'",
        ),
        (
            {**RULES, "refund_window_days": "30"},
            "refund_window_days must be a whole number of days >= 0",
        ),
        (
            {**RULES, "refund_window_days": True},
            "refund_window_days must be a whole number of days >= 0",
        ),
        (
            {**RULES, "non_refundable_categories": "digital"},
            "non_refundable_categories must be a list of category names",
        ),
        (
            {**RULES, "role_limits": {"CNY": {"agent": 500.0}}},
            "role_limits.CNY.agent must be an amount string like '500.00'",
        ),
        (
            {**RULES, "role_limits": {"CNY": {"agent": "-1.00"}}},
            "role_limits.CNY.agent must be an amount string like '500.00'",
        ),
        (
            {**RULES, "role_limits": {"CNY": {"agent": "NaN"}}},
            "role_limits.CNY.agent must be an amount string like '500.00'",
        ),
        (
            {**RULES, "role_limits": {"JPY": {"agent": "500.50"}}},
            "role_limits.JPY.agent has more decimal places than JPY amounts can have (0)",
        ),
        (
            {**RULES, "role_limits": {"KWD": {"agent": "20.005"}}},
            "role_limits.KWD.agent has more decimal places than KWD amounts can have (2)",
        ),
        # The single-currency shape: limits not keyed by currency.
        (
            {**RULES, "role_limits": {"agent": "500.00"}},
            "role_limits.agent is not a currency code like 'CNY'",
        ),
        (
            {**RULES, "role_limits": {"cny": CNY_LIMITS}},
            "role_limits.cny is not a currency code like 'CNY'",
        ),
        ({**RULES, "role_limits": {"CNY": "500.00"}}, "role_limits.CNY must map roles to amounts"),
        (
            {**RULES, "role_limits": {}},
            "role_limits must map currency codes to each role's limit, "
            'like {"CNY": {"agent": "500.00"}}',
        ),
        (
            {**RULES, "role_limits": ["agent"]},
            "role_limits must map currency codes to each role's limit, "
            'like {"CNY": {"agent": "500.00"}}',
        ),
        (
            {**RULES, "currency": "CNY"},
            "'currency' is not a rule: role_limits names each currency it sets limits for",
        ),
        ([], "rules must be a JSON object"),
    ],
)
def test_it_finds_rules_the_code_cannot_work_with(rules, problem):
    assert validate_rules(rules) == [problem]
