"""Every write to policies. Published versions are immutable: a change is a new draft version,
and publishing a draft retires the version it replaces, in one transaction."""

import copy
import datetime

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from policies.errors import PolicyPublishRefused, PolicyVersionImmutable
from policies.models import Clause, Policy, PolicyVersion
from policies.rules import validate_rules
from policies.seed import REFUNDS_SLUG

Status = PolicyVersion.Status


def _lock_policy(policy_id: int) -> Policy:
    """Serialises version numbering and publishing per policy."""
    return Policy.objects.select_for_update().get(pk=policy_id)


def _lock_editable(version: PolicyVersion) -> PolicyVersion:
    """The version's row, locked, if it is still a draft; the caller holds a transaction.

    Reads the status from the database, so an object loaded before someone published the
    version cannot be used to edit it.
    """
    locked = PolicyVersion.objects.select_for_update().get(pk=version.pk)
    if locked.status != Status.DRAFT:
        raise PolicyVersionImmutable(
            f"{version.policy.slug} v{locked.version} is {locked.status} and cannot be "
            "changed; draft a new version instead.",
            extra={"version": locked.version, "status": locked.status},
        )
    return locked


@transaction.atomic
def policy_version_draft_from(
    *,
    version: PolicyVersion,
    rules: dict | None = None,
    effective_from: datetime.date | None = None,
    clauses: list[dict] | None = None,
) -> PolicyVersion:
    """A new draft of `version`'s policy, numbered after the policy's highest version.

    It copies `version`'s rules and clauses unless `rules` / `clauses` (dicts with ref, title,
    text) are given. Its effective date defaults to today, never before `version`'s.
    """
    policy = _lock_policy(version.policy_id)
    highest = policy.versions.aggregate(highest=Max("version"))["highest"] or 0
    draft = PolicyVersion.objects.create(
        policy=policy,
        version=highest + 1,
        effective_from=effective_from or max(timezone.localdate(), version.effective_from),
        status=Status.DRAFT,
        rules=copy.deepcopy(version.rules if rules is None else rules),
    )
    if clauses is None:
        clauses = [{"ref": c.ref, "title": c.title, "text": c.text} for c in version.clauses.all()]
    Clause.objects.bulk_create(
        Clause(policy_version=draft, ref=clause["ref"], title=clause["title"], text=clause["text"])
        for clause in clauses
    )
    return draft


@transaction.atomic
def policy_version_publish(*, version: PolicyVersion) -> PolicyVersion:
    """Publish a draft; the policy's published version, if any, becomes retired."""
    policy = _lock_policy(version.policy_id)
    version = PolicyVersion.objects.select_for_update().get(pk=version.pk)
    if version.status != Status.DRAFT:
        raise PolicyPublishRefused(
            f"Only a draft can be published; {policy.slug} v{version.version} is {version.status}.",
            extra={"status": version.status},
        )
    if not version.clauses.exists():
        raise PolicyPublishRefused("A version without clauses cannot be published.")
    # The refund rules are code reading these parameters: a version they cannot read would
    # stop every refund evaluation the moment it is published.
    problems = validate_rules(version.rules) if policy.slug == REFUNDS_SLUG else []
    if problems:
        raise PolicyPublishRefused(
            "The rules are not valid: " + "; ".join(problems) + ".", extra={"problems": problems}
        )
    # Retire first: at most one published version per policy is a database constraint.
    PolicyVersion.objects.filter(policy_id=version.policy_id, status=Status.PUBLISHED).update(
        status=Status.RETIRED
    )
    version.status = Status.PUBLISHED
    version.save(update_fields=["status"])
    return version


@transaction.atomic
def policy_version_update(
    *,
    version: PolicyVersion,
    rules: dict | None = None,
    effective_from: datetime.date | None = None,
) -> PolicyVersion:
    """Change a draft's rules or effective date. Refuses published and retired versions."""
    locked = _lock_editable(version)
    if rules is not None:
        locked.rules = rules
    if effective_from is not None:
        locked.effective_from = effective_from
    locked.save(update_fields=["rules", "effective_from"])
    return locked


@transaction.atomic
def clause_save(*, version: PolicyVersion, ref: str, title: str, text: str) -> Clause:
    """Create or change clause `ref` of a draft. Refuses published and retired versions."""
    locked = _lock_editable(version)
    clause, _ = Clause.objects.update_or_create(
        policy_version=locked, ref=ref, defaults={"title": title, "text": text}
    )
    return clause


@transaction.atomic
def clause_delete(*, version: PolicyVersion, ref: str) -> None:
    """Remove clause `ref` from a draft. Refuses published and retired versions."""
    locked = _lock_editable(version)
    Clause.objects.filter(policy_version=locked, ref=ref).delete()
