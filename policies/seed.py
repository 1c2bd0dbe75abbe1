"""Version 1 of the refund policy, as first published (DESIGN §4), and the change of its
rules to role limits keyed by currency.

Frozen text: data migration 0002 publishes exactly v1, and 0003 republishes whatever is
published then with its limits keyed by its currency (v2 on a fresh database). Later versions
are drafted and published in admin (policies.services), never by editing this file.
"""

import datetime

REFUNDS_SLUG = "refunds"
REFUNDS_TITLE = "Refund policy"

REFUNDS_V1_EFFECTIVE_FROM = datetime.date(2026, 1, 1)

REFUNDS_V1_RULES = {
    "refund_window_days": 30,
    "non_refundable_categories": ["digital", "gift_card"],
    "role_limits": {"intern": "0.00", "agent": "500.00", "supervisor": "5000.00"},
    "currency": "CNY",
}

REFUNDS_V1_CLAUSES = [
    (
        "R-1",
        "Refund window after delivery",
        "A refund can be requested up to 30 days after the order was delivered. Day 30 still "
        "counts; from day 31 the window is closed and the desk cannot refund. An order that has "
        "not been delivered yet is not limited by the window, because the window starts at "
        "delivery.",
    ),
    (
        "R-2",
        "Refund amount limited to the balance",
        "The refund amount must be greater than zero and can be at most the amount the customer "
        "paid minus what has already been refunded for the same order, including refunds that "
        "are approved or still being paid out. Partial refunds are allowed within that balance.",
    ),
    (
        "R-3",
        "Non-refundable categories: digital goods and gift cards",
        "Digital goods (category digital, such as e-books and downloads) and gift cards "
        "(category gift_card) are not refundable. An order that contains any such item is not "
        "refunded through the desk.",
    ),
    (
        "R-4",
        "Reason must fit the order state",
        'The refund reason must match what happened to the order. "Not received" is only '
        'accepted while the order has not been delivered. "Damaged" and "wrong item" are only '
        'accepted once the order has been delivered. "Other" needs an explanation. Cancelled '
        "orders are not refunded through the desk; their payment is released by the shop.",
    ),
    (
        "R-5",
        "Authority limits per role",
        "Who may propose a refund, and up to what amount: support interns may not propose "
        "refunds; support agents may propose refunds up to 500.00 CNY; support supervisors up "
        "to 5000.00 CNY. An amount above your limit must be escalated to a supervisor, and an "
        "amount above the supervisor limit is escalated beyond the desk.",
    ),
    (
        "R-6",
        "Four-eyes review of every refund",
        "Every refund needs the approval of a refund reviewer who is not the person who "
        "requested it. Nobody approves their own refund, and no refund is paid out before it "
        "is approved.",
    ),
]


# Rules before 0003 named one `currency` and gave `role_limits` in it; since then `role_limits`
# maps each currency to its limits, and a currency it does not name is refused. The
# version 0003 publishes takes effect on the day that change was made.
LIMITS_PER_CURRENCY_FROM = datetime.date(2026, 12, 4)
LIMITS_PER_CURRENCY_TEXT = (
    " Limits are set per currency: a refund in a currency for which this policy sets no "
    "limits cannot be proposed or approved at the desk."
)


def with_limits_per_currency(rules: dict) -> dict:
    """Single-currency rules with the same limits keyed by their currency."""
    converted = {key: value for key, value in rules.items() if key != "currency"}
    converted["role_limits"] = {rules["currency"]: rules["role_limits"]}
    return converted


# The refund rules a fresh database has in force (v2).
REFUNDS_RULES = with_limits_per_currency(REFUNDS_V1_RULES)


def publish_refunds_v1(*, policy_model, version_model, clause_model) -> None:
    """Create and publish refunds v1 unless the policy already has a version 1.

    Takes the model classes so the data migration can pass its historical models.
    """
    policy, _ = policy_model.objects.get_or_create(
        slug=REFUNDS_SLUG, defaults={"title": REFUNDS_TITLE}
    )
    if version_model.objects.filter(policy=policy, version=1).exists():
        return
    version = version_model.objects.create(
        policy=policy,
        version=1,
        effective_from=REFUNDS_V1_EFFECTIVE_FROM,
        status="published",
        rules=REFUNDS_V1_RULES,
    )
    clause_model.objects.bulk_create(
        clause_model(policy_version=version, ref=ref, title=title, text=text)
        for ref, title, text in REFUNDS_V1_CLAUSES
    )


def publish_limits_per_currency(*, version_model, clause_model) -> None:
    """Publish the refund policy's published rules with their limits keyed by currency, as the
    next version, unless they already are; the published version is retired.

    Published versions never change, so the new shape is a new version. Its clauses are the
    published ones, R-5 adding that limits are per currency. Takes the model classes so the
    data migration can pass its historical models.
    """
    published = version_model.objects.filter(policy__slug=REFUNDS_SLUG, status="published").first()
    if published is None or "currency" not in published.rules:
        return
    highest = (
        version_model.objects.filter(policy_id=published.policy_id)
        .order_by("-version")
        .values_list("version", flat=True)
        .first()
    )
    # Retire first: at most one published version per policy is a database constraint.
    version_model.objects.filter(pk=published.pk).update(status="retired")
    version = version_model.objects.create(
        policy_id=published.policy_id,
        version=highest + 1,
        effective_from=max(LIMITS_PER_CURRENCY_FROM, published.effective_from),
        status="published",
        rules=with_limits_per_currency(published.rules),
    )
    clause_model.objects.bulk_create(
        clause_model(
            policy_version=version,
            ref=clause.ref,
            title=clause.title,
            text=clause.text + (LIMITS_PER_CURRENCY_TEXT if clause.ref == "R-5" else ""),
        )
        for clause in clause_model.objects.filter(policy_version=published)
    )
