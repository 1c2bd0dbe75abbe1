import datetime
import threading
import time

import pytest
from django.db import IntegrityError, close_old_connections, connection, transaction
from django.utils import timezone

from policies.errors import PolicyPublishRefused, PolicyVersionImmutable
from policies.models import Clause, PolicyVersion
from policies.selectors import published_version
from policies.services import (
    clause_delete,
    clause_save,
    policy_version_draft_from,
    policy_version_publish,
    policy_version_update,
)

pytestmark = pytest.mark.django_db


def clause_rows(version: PolicyVersion) -> list[tuple[str, str, str]]:
    return list(
        Clause.objects.filter(policy_version=version)
        .order_by("ref")
        .values_list("ref", "title", "text")
    )


def test_it_drafts_a_copy_of_the_published_version():
    current = published_version()

    draft = policy_version_draft_from(version=current)

    assert (draft.policy_id, draft.version, draft.status) == (current.policy_id, 3, "draft")
    assert draft.rules == current.rules
    assert draft.effective_from == max(timezone.localdate(), current.effective_from)
    assert clause_rows(draft) == clause_rows(current)
    assert len(clause_rows(draft)) == 6


def test_it_leaves_the_source_untouched_when_the_draft_changes():
    current = published_version()
    rules_before, clauses_before = dict(current.rules), clause_rows(current)
    draft = policy_version_draft_from(version=current)

    draft.rules["refund_window_days"] = 14
    policy_version_update(version=draft, rules=draft.rules)
    clause_save(version=draft, ref="R-1", title="Refund window", text="Fourteen days.")

    current.refresh_from_db()
    assert current.rules == rules_before
    assert current.rules["refund_window_days"] == 30
    assert clause_rows(current) == clauses_before


def test_it_numbers_a_draft_after_the_highest_version():
    current = published_version()
    policy_version_draft_from(version=current)

    another = policy_version_draft_from(version=current)

    assert another.version == 4


def test_it_drafts_with_the_rules_and_clauses_given():
    current = published_version()
    rules = {**current.rules, "refund_window_days": 45}

    draft = policy_version_draft_from(
        version=current,
        rules=rules,
        effective_from=datetime.date(2027, 1, 1),
        clauses=[{"ref": "R-1", "title": "Longer window", "text": "45 days after delivery."}],
    )

    assert draft.rules["refund_window_days"] == 45
    assert draft.effective_from == datetime.date(2027, 1, 1)
    assert clause_rows(draft) == [("R-1", "Longer window", "45 days after delivery.")]


def test_it_publishes_a_draft_and_retires_the_previous_version():
    current = published_version()
    draft = policy_version_draft_from(version=current)

    published = policy_version_publish(version=draft)

    current.refresh_from_db()
    assert published.status == "published"
    assert current.status == "retired"
    assert published_version().pk == draft.pk
    assert PolicyVersion.objects.filter(policy=current.policy, status="published").count() == 1


@pytest.mark.parametrize("status", ["published", "retired"])
def test_it_refuses_to_publish_a_version_that_is_not_a_draft(status):
    current = published_version()
    draft = policy_version_draft_from(version=current)
    policy_version_publish(version=draft)
    target = draft if status == "published" else PolicyVersion.objects.get(pk=current.pk)

    with pytest.raises(PolicyPublishRefused):
        policy_version_publish(version=target)

    assert published_version().pk == draft.pk
    assert PolicyVersion.objects.get(pk=current.pk).status == "retired"


def test_it_refuses_to_publish_rules_the_refund_code_cannot_read():
    current = published_version()
    rules = {k: v for k, v in current.rules.items() if k != "role_limits"}
    draft = policy_version_draft_from(version=current, rules=rules)

    with pytest.raises(PolicyPublishRefused) as refusal:
        policy_version_publish(version=draft)

    assert refusal.value.extra == {"problems": ["missing key 'role_limits'"]}
    assert PolicyVersion.objects.get(pk=draft.pk).status == "draft"
    assert published_version().pk == current.pk


def test_it_refuses_to_publish_a_version_without_clauses():
    current = published_version()
    draft = policy_version_draft_from(version=current, clauses=[])

    with pytest.raises(PolicyPublishRefused):
        policy_version_publish(version=draft)

    assert PolicyVersion.objects.get(pk=draft.pk).status == "draft"
    assert published_version().pk == current.pk


def test_it_enforces_one_published_version_per_policy_in_the_database():
    current = published_version()
    draft = policy_version_draft_from(version=current)

    with pytest.raises(IntegrityError), transaction.atomic():
        PolicyVersion.objects.filter(pk=draft.pk).update(status="published")

    assert PolicyVersion.objects.get(pk=draft.pk).status == "draft"


@pytest.mark.parametrize(
    "edit",
    [
        lambda v: policy_version_update(version=v, rules={**v.rules, "refund_window_days": 90}),
        lambda v: policy_version_update(version=v, effective_from=datetime.date(2020, 1, 1)),
        lambda v: clause_save(version=v, ref="R-1", title="Changed", text="Changed."),
        lambda v: clause_save(version=v, ref="R-9", title="New", text="New."),
        lambda v: clause_delete(version=v, ref="R-6"),
    ],
    ids=["rules", "effective_from", "change-clause", "add-clause", "delete-clause"],
)
@pytest.mark.parametrize("status", ["published", "retired"])
def test_it_refuses_to_edit_a_published_or_retired_version(edit, status):
    version = published_version()
    if status == "retired":
        policy_version_publish(version=policy_version_draft_from(version=version))
        version.refresh_from_db()
    rules_before, clauses_before = dict(version.rules), clause_rows(version)

    with pytest.raises(PolicyVersionImmutable):
        edit(version)

    version.refresh_from_db()
    assert version.status == status
    assert version.rules == rules_before
    assert version.effective_from == datetime.date(2026, 12, 4)
    assert clause_rows(version) == clauses_before


def test_it_refuses_an_edit_through_a_stale_draft_object():
    draft = policy_version_draft_from(version=published_version())
    stale = PolicyVersion.objects.get(pk=draft.pk)
    policy_version_publish(version=draft)

    with pytest.raises(PolicyVersionImmutable):
        clause_save(version=stale, ref="R-1", title="Sneaky", text="Sneaky.")

    assert Clause.objects.get(policy_version=draft, ref="R-1").title == (
        "Refund window after delivery"
    )


def test_it_edits_a_draft():
    draft = policy_version_draft_from(version=published_version())

    policy_version_update(version=draft, effective_from=datetime.date(2027, 2, 1))
    clause_save(version=draft, ref="R-7", title="Loyalty", text="Members get longer.")
    clause_delete(version=draft, ref="R-6")

    draft.refresh_from_db()
    assert draft.effective_from == datetime.date(2027, 2, 1)
    assert [ref for ref, _, _ in clause_rows(draft)] == ["R-1", "R-2", "R-3", "R-4", "R-5", "R-7"]


def blocked_backends() -> int:
    """Sessions of this test database waiting for a lock."""
    with connection.cursor() as cursor:
        # Activity is snapshotted once per transaction; the caller is inside one.
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock'"
        )
        return cursor.fetchone()[0]


@pytest.mark.django_db(transaction=True)
def test_it_keeps_one_published_version_when_two_drafts_publish_at_once(postgres):
    current = published_version()
    drafts = [policy_version_draft_from(version=current) for _ in range(2)]
    errors = []

    def publish(draft):
        try:
            policy_version_publish(version=draft)
        except Exception as error:  # collected and asserted on below
            errors.append(error)
        finally:
            close_old_connections()
            connection.close()

    threads = [threading.Thread(target=publish, args=(draft,)) for draft in drafts]
    # Hold the published row so both publishers are inside their transactions at once.
    with transaction.atomic():
        PolicyVersion.objects.select_for_update().get(pk=current.pk)
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 10
        while blocked_backends() < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert blocked_backends() == 2, errors
    for thread in threads:
        thread.join(timeout=30)

    assert errors == []
    statuses = dict(
        PolicyVersion.objects.filter(policy=current.policy).values_list("version", "status")
    )
    assert (statuses[1], statuses[2]) == ("retired", "retired")
    assert sorted([statuses[3], statuses[4]]) == ["published", "retired"]
