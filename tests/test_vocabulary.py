"""The status vocabularies have one source each (their TextChoices; the refund statuses and their
groups in config/refund_statuses.py). These tests tie to it the copies that must stay copies:
literals in model Meta (a nested Meta cannot see its model's Status), in templates, in the
browser's script, in the pure policy rules, and in the LangGraph peer, which runs in its own
venv without Django."""

import ast
import re
from pathlib import Path

from django.apps import apps
from django.db.models import Q

from config import refund_statuses
from config.refund_statuses import RefundStatus
from orders.models import Order
from policies import rules
from policies.models import PolicyVersion
from refunds.models import RefundRequest
from refunds.transitions import ALLOWED

ROOT = Path(__file__).resolve().parent.parent


def _project_models():
    """The models of the project's own apps (not Django's or a library's)."""
    return [
        model
        for config in apps.get_app_configs()
        if Path(config.path).parent == ROOT
        for model in config.get_models()
    ]


def _choices_by_field_name() -> dict[str, set[str]]:
    """Field name -> every value the project's models allow in a field of that name."""
    found: dict[str, set[str]] = {}
    for model in _project_models():
        for field in model._meta.get_fields():
            if getattr(field, "choices", None):
                found.setdefault(field.name, set()).update(str(value) for value, _ in field.choices)
    return found


def _lookups(condition: Q):
    for child in condition.children:
        if isinstance(child, Q):
            yield from _lookups(child)
        else:
            yield child


def test_it_knows_every_refund_status_from_one_place():
    assert RefundRequest.Status is RefundStatus
    assert RefundRequest.SETTLED_STATUSES == refund_statuses.SETTLED


def test_the_refund_status_groups_follow_the_state_machine():
    # Settled: nothing moves it again. In flight: reachable from approval, not settled yet.
    reachable = {RefundStatus.APPROVED}
    while True:
        more = reachable | {target for status in reachable for target in ALLOWED.get(status, ())}
        if more == reachable:
            break
        reachable = more

    assert {status for status in RefundStatus if not ALLOWED.get(status)} == set(
        refund_statuses.SETTLED
    )
    assert reachable - set(refund_statuses.SETTLED) == set(refund_statuses.IN_FLIGHT)
    assert set(refund_statuses.COMMITTED) == {*refund_statuses.IN_FLIGHT, RefundStatus.SUCCEEDED}


def test_every_status_in_a_constraint_or_index_condition_is_a_choice():
    choices = _choices_by_field_name()
    checked = []
    for model in _project_models():
        fields = {field.name: field for field in model._meta.get_fields()}
        for rule in [*model._meta.constraints, *model._meta.indexes]:
            condition = getattr(rule, "condition", None)
            if condition is None:
                continue
            for lookup, value in _lookups(condition):
                name = lookup.split("__")[0]
                if not getattr(fields.get(name), "choices", None):
                    continue
                values = value if lookup.endswith("__in") else [value]
                checked.append(f"{model.__name__}.{rule.name}")
                assert set(map(str, values)) <= choices[name], (model, rule.name, values)

    # The conditions of refunds, confirmations, runs, messages and policy versions at least.
    assert "RefundRequest.refund_in_flight_idx" in checked
    assert any(name.startswith("RefundConfirmation.") for name in checked)
    assert any(name.startswith("AgentRun.") for name in checked)
    assert any(name.startswith("TicketMessage.") for name in checked)
    assert any(name.startswith("PolicyVersion.") for name in checked)


# `m.delivery == "sent"` and the like; `filters`, `draft` and the rest are the page's own words.
TEMPLATE_COMPARISON = re.compile(r"\b(\w+)\.(\w+)\s*[!=]=\s*[\"']([^\"']*)[\"']")
NOT_MODEL_OBJECTS = {"filters", "resolver_match"}


def test_a_template_compares_a_field_only_with_one_of_its_choices():
    choices = _choices_by_field_name()
    compared = []
    for template in sorted((ROOT / "templates").rglob("*.html")):
        for owner, field, literal in TEMPLATE_COMPARISON.findall(template.read_text()):
            if owner in NOT_MODEL_OBJECTS or field not in choices:
                continue
            compared.append((field, literal))
            assert literal in choices[field], f"{template.relative_to(ROOT)}: {field} == {literal}"

    assert ("delivery", "queued") in compared
    assert ("author_kind", "customer") in compared
    assert not any(field == "status" for field, _ in compared), "pass statuses from the view"


def test_the_browser_script_knows_the_refund_statuses():
    script = (ROOT / "static/js/assistant.js").read_text()
    words = re.search(r"const REFUND_STATUS = \{(.*?)\n  \};", script, re.S)
    terminal = re.search(r"const REFUND_TERMINAL = new Set\(\[(.*?)\]\)", script)
    assert words is not None and terminal is not None

    assert set(re.findall(r"^\s*(\w+):", words.group(1), re.M)) == set(RefundStatus.values)
    assert set(re.findall(r'"(\w+)"', terminal.group(1))) == {
        *refund_statuses.SETTLED,
        RefundStatus.EXPIRED,
    }


def test_the_pure_policy_rules_name_the_order_statuses_and_refund_reasons():
    # policies/rules.py reads no database and imports no model: its words are copies.
    assert {rules.DELIVERED, rules.CANCELLED, *rules.NOT_DELIVERED_STATUSES} == set(
        Order.Status.values
    )
    reasons = {
        *rules.REASONS_BEFORE_DELIVERY,
        *rules.REASONS_AFTER_DELIVERY,
        *rules.REASONS_ANY_TIME,
    }
    assert reasons == set(RefundRequest.Reason.values)


def test_the_langgraph_peer_counts_the_same_refunds_as_committed():
    # bench/peers/langgraph_step.py runs in its own venv, without Django: it keeps a copy.
    tree = ast.parse((ROOT / "bench/peers/langgraph_step.py").read_text())
    copies = [
        ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign)
        and any(getattr(t, "id", None) == "REFUND_COMMITTED_STATUSES" for t in node.targets)
    ]

    assert len(copies) == 1
    assert sorted(copies[0]) == sorted(refund_statuses.COMMITTED)
    assert len(copies[0]) == len(set(copies[0]))


def test_the_policy_seed_publishes_and_retires_with_policy_version_statuses():
    # policies/seed.py serves data migrations, which see historical models without choices.
    seed = (ROOT / "policies/seed.py").read_text()
    used = set(re.findall(r'status="(\w+)"', seed))

    assert used == {PolicyVersion.Status.PUBLISHED, PolicyVersion.Status.RETIRED}
