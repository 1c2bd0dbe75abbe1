import datetime
from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from policies.models import Clause, Policy, PolicyVersion
from policies.selectors import evaluate_refund_for_order, published_version
from refunds.models import RefundRequest
from tests.factories import OrderFactory, OrderLineFactory, UserFactory

pytestmark = pytest.mark.django_db


def test_it_publishes_refunds_v1_with_the_migrations():
    policy = Policy.objects.get(slug="refunds")
    version = PolicyVersion.objects.get(policy=policy, version=1)

    assert policy.title == "Refund policy"
    # Retired by 0003, which republished its rules with the limits keyed by currency.
    assert version.status == "retired"
    assert version.effective_from == datetime.date(2026, 1, 1)
    assert version.rules == {
        "refund_window_days": 30,
        "non_refundable_categories": ["digital", "gift_card"],
        "role_limits": {"intern": "0.00", "agent": "500.00", "supervisor": "5000.00"},
        "currency": "CNY",
    }
    clauses = list(Clause.objects.filter(policy_version=version).order_by("ref"))
    assert [clause.ref for clause in clauses] == ["R-1", "R-2", "R-3", "R-4", "R-5", "R-6"]
    assert all(clause.title and len(clause.text) > 80 for clause in clauses)
    assert "30 days after the order was delivered" in clauses[0].text
    assert "500.00 CNY" in clauses[4].text and "5000.00 CNY" in clauses[4].text


def test_it_returns_the_published_version():
    version = published_version()

    assert (version.policy.slug, version.version, version.status) == ("refunds", 2, "published")


def test_it_raises_when_a_policy_has_no_published_version():
    policy = Policy.objects.create(slug="returns", title="Returns")
    PolicyVersion.objects.create(policy=policy, version=1, effective_from=datetime.date.today())

    with pytest.raises(PolicyVersion.DoesNotExist):
        published_version("returns")


def test_it_evaluates_a_refund_from_the_order_and_the_published_rules():
    order = OrderFactory(
        amount_paid=Decimal("129.00"), delivered_at=timezone.now() - timedelta(days=5)
    )
    OrderLineFactory(order=order, category="home")

    evaluation = evaluate_refund_for_order(
        order=order, amount=Decimal("129.00"), reason="damaged", actor_role="agent"
    )

    assert evaluation.allowed is True
    assert evaluation.policy_version_id == published_version().pk
    assert len(evaluation.verdicts) == 6


def test_it_counts_committed_refunds_against_the_balance():
    requester = UserFactory()
    order = OrderFactory(amount_paid=Decimal("599.00"))
    OrderLineFactory(order=order, category="home", unit_price=Decimal("599.00"))
    for number, status in enumerate(["succeeded", "approved", "rejected", "pending_approval"]):
        RefundRequest.objects.create(
            request_id=f"rf_test{number}",
            order=order,
            amount=Decimal("100.00"),
            currency="CNY",
            reason="damaged",
            status=status,
            requested_by=requester,
        )

    at_balance = evaluate_refund_for_order(
        order=order, amount=Decimal("399.00"), reason="damaged", actor_role="supervisor"
    )
    over_balance = evaluate_refund_for_order(
        order=order, amount=Decimal("399.01"), reason="damaged", actor_role="supervisor"
    )

    assert at_balance.allowed is True
    assert over_balance.failing() == [
        {
            "clause": "R-2",
            "outcome": "fail",
            "detail": "requested 399.01 CNY exceeds the refundable balance of 399.00 CNY "
            "(paid 599.00 CNY, already refunded 200.00 CNY)",
        }
    ]


def test_it_reads_the_categories_of_every_line():
    order = OrderFactory(amount_paid=Decimal("168.00"))
    OrderLineFactory(order=order, category="home")
    OrderLineFactory(order=order, category="digital", unit_price=Decimal("39.00"))

    evaluation = evaluate_refund_for_order(
        order=order, amount=Decimal("10.00"), reason="damaged", actor_role="agent"
    )

    assert evaluation.failing_clauses() == ["R-3"]


def test_it_uses_the_given_time_and_reviewer():
    requester = UserFactory()
    delivered_at = timezone.now() - timedelta(days=2)
    order = OrderFactory(delivered_at=delivered_at)
    OrderLineFactory(order=order)

    evaluation = evaluate_refund_for_order(
        order=order,
        amount=Decimal("10.00"),
        reason="damaged",
        actor_role="agent",
        requester_id=requester.pk,
        reviewer_id=requester.pk,
        now=delivered_at + timedelta(days=31),
    )

    assert evaluation.failing_clauses() == ["R-1", "R-6"]


def test_it_applies_the_rules_of_the_version_that_is_published():
    v2 = published_version()
    v2.status = PolicyVersion.Status.RETIRED
    v2.save(update_fields=["status"])
    cny = v2.rules["role_limits"]["CNY"]
    v3 = PolicyVersion.objects.create(
        policy=v2.policy,
        version=3,
        effective_from=datetime.date(2027, 6, 1),
        status=PolicyVersion.Status.PUBLISHED,
        rules={**v2.rules, "role_limits": {"CNY": {**cny, "agent": "1000.00"}}},
    )
    order = OrderFactory(amount_paid=Decimal("899.00"))
    OrderLineFactory(order=order, category="electronics")

    evaluation = evaluate_refund_for_order(
        order=order, amount=Decimal("899.00"), reason="damaged", actor_role="agent"
    )

    assert evaluation.allowed is True
    assert evaluation.policy_version_id == v3.pk
