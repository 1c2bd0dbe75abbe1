"""The refund policy's data migrations: v1 as first published, then its rules with role limits
keyed by currency as the next version (published versions are immutable)."""

import datetime
import importlib

import pytest
from django.apps import apps as django_apps

from policies.models import Clause, PolicyVersion
from policies.seed import REFUNDS_V1_CLAUSES, REFUNDS_V1_RULES

pytestmark = pytest.mark.django_db

per_currency = importlib.import_module("policies.migrations.0003_refunds_limits_per_currency")

PER_CURRENCY_SENTENCE = (
    " Limits are set per currency: a refund in a currency for which this policy sets no "
    "limits cannot be proposed or approved at the desk."
)


def versions() -> list[tuple[int, str]]:
    return list(
        PolicyVersion.objects.filter(policy__slug="refunds")
        .order_by("version")
        .values_list("version", "status")
    )


def clause_texts(version: PolicyVersion) -> dict[str, str]:
    return dict(Clause.objects.filter(policy_version=version).values_list("ref", "text"))


def test_it_publishes_v1_as_frozen_and_v2_with_the_same_limits_keyed_by_cny():
    v1 = PolicyVersion.objects.get(policy__slug="refunds", version=1)
    v2 = PolicyVersion.objects.get(policy__slug="refunds", version=2)

    assert versions() == [(1, "retired"), (2, "published")]
    assert v1.rules == REFUNDS_V1_RULES
    assert v2.rules == {
        "refund_window_days": 30,
        "non_refundable_categories": ["digital", "gift_card"],
        "role_limits": {"CNY": {"intern": "0.00", "agent": "500.00", "supervisor": "5000.00"}},
    }
    assert v2.effective_from == datetime.date(2026, 12, 4)
    v1_texts = {ref: text for ref, _title, text in REFUNDS_V1_CLAUSES}
    assert clause_texts(v2) == {**v1_texts, "R-5": v1_texts["R-5"] + PER_CURRENCY_SENTENCE}


def test_it_carries_a_later_single_currency_version_over_with_its_own_limits():
    # Given a database whose published version is a later single-currency one, edited in
    # admin before this change (the agent limit raised to 1000.00)
    v2 = PolicyVersion.objects.get(policy__slug="refunds", version=2)
    v2.status = "retired"
    v2.save(update_fields=["status"])
    v3 = PolicyVersion.objects.create(
        policy=v2.policy,
        version=3,
        effective_from=datetime.date(2027, 2, 1),
        status="published",
        rules={
            **REFUNDS_V1_RULES,
            "role_limits": {"intern": "0.00", "agent": "1000.00", "supervisor": "5000.00"},
        },
    )
    Clause.objects.create(policy_version=v3, ref="R-5", title="Limits", text="Agents 1000.00.")

    # When the migration runs, twice
    per_currency.publish(django_apps, None)
    per_currency.publish(django_apps, None)

    # Then that version's limits are published once more, keyed by its currency, as v4
    v4 = PolicyVersion.objects.get(policy__slug="refunds", version=4)
    assert versions() == [(1, "retired"), (2, "retired"), (3, "retired"), (4, "published")]
    assert v4.rules["role_limits"] == {
        "CNY": {"intern": "0.00", "agent": "1000.00", "supervisor": "5000.00"}
    }
    assert "currency" not in v4.rules
    assert v4.effective_from == datetime.date(2027, 2, 1)
    assert clause_texts(v4) == {"R-5": "Agents 1000.00." + PER_CURRENCY_SENTENCE}


def test_it_leaves_rules_that_already_key_their_limits_by_currency_alone():
    per_currency.publish(django_apps, None)

    assert versions() == [(1, "retired"), (2, "published")]


def test_reversing_it_puts_the_single_currency_version_back_in_force():
    per_currency.unpublish(django_apps, None)

    assert versions() == [(1, "published"), (2, "retired")]
