"""Policy admin: a published version never changes; editing it makes a new draft."""

import json

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.messages import get_messages
from django.urls import reverse

from policies.models import Clause, PolicyVersion
from policies.selectors import published_version
from policies.services import policy_version_draft_from, policy_version_publish
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def superuser_client(client):
    client.force_login(UserFactory(username="t_admin", is_staff=True, is_superuser=True))
    return client


def change_url(version: PolicyVersion) -> str:
    return reverse("admin:policies_policyversion_change", args=[version.pk])


def form_data(version: PolicyVersion) -> dict:
    """The change form as the admin page would post it, unchanged."""
    clauses = list(version.clauses.order_by("ref"))
    data = {
        "effective_from": version.effective_from.isoformat(),
        "rules": json.dumps(version.rules),
        # The page carries the rules it showed, to tell what changed (callable default).
        "initial-rules": json.dumps(version.rules),
        "clauses-TOTAL_FORMS": str(len(clauses)),
        "clauses-INITIAL_FORMS": str(len(clauses)),
        "clauses-MIN_NUM_FORMS": "0",
        "clauses-MAX_NUM_FORMS": "1000",
        "_save": "Save",
    }
    for index, clause in enumerate(clauses):
        data.update(
            {
                f"clauses-{index}-id": str(clause.pk),
                f"clauses-{index}-policy_version": str(version.pk),
                f"clauses-{index}-ref": clause.ref,
                f"clauses-{index}-title": clause.title,
                f"clauses-{index}-text": clause.text,
            }
        )
    return data


def snapshot(version: PolicyVersion) -> tuple:
    version.refresh_from_db()
    clauses = tuple(version.clauses.order_by("ref").values_list("ref", "title", "text"))
    return version.status, version.effective_from, version.rules, clauses


def messages_of(response) -> list[str]:
    return [str(message) for message in get_messages(response.wsgi_request)]


def test_it_saves_edits_of_a_published_version_as_a_new_draft(superuser_client):
    current = published_version()
    before = snapshot(current)
    data = form_data(current)
    data["rules"] = json.dumps({**current.rules, "refund_window_days": 45})
    data["clauses-0-text"] = "A refund can be requested up to 45 days after delivery."

    response = superuser_client.post(change_url(current), data)

    draft = PolicyVersion.objects.get(policy=current.policy, version=3)
    assert response.status_code == 302
    assert response["Location"] == change_url(draft)
    assert snapshot(current) == before
    assert draft.status == "draft"
    assert draft.rules["refund_window_days"] == 45
    assert draft.clauses.get(ref="R-1").text == (
        "A refund can be requested up to 45 days after delivery."
    )
    assert draft.clauses.count() == 6
    assert messages_of(response) == [
        "refunds v2 is published and was left unchanged. Your edits were saved as a new "
        "draft, v3; publish it to put them into effect."
    ]
    assert LogEntry.objects.get().object_id == str(draft.pk)


def test_it_carries_added_and_deleted_clauses_into_the_draft(superuser_client):
    current = published_version()
    before = snapshot(current)
    data = form_data(current)
    data["clauses-5-DELETE"] = "on"
    data.update(
        {
            "clauses-TOTAL_FORMS": "7",
            "clauses-6-policy_version": str(current.pk),
            "clauses-6-ref": "R-7",
            "clauses-6-title": "Loyalty members",
            "clauses-6-text": "Members get 60 days.",
        }
    )

    superuser_client.post(change_url(current), data)

    draft = PolicyVersion.objects.get(policy=current.policy, version=3)
    assert list(draft.clauses.order_by("ref").values_list("ref", flat=True)) == [
        "R-1",
        "R-2",
        "R-3",
        "R-4",
        "R-5",
        "R-7",
    ]
    assert snapshot(current) == before


def test_it_makes_no_draft_when_a_published_version_is_saved_unchanged(superuser_client):
    current = published_version()
    before = snapshot(current)

    response = superuser_client.post(change_url(current), form_data(current))

    assert response.status_code == 302
    assert PolicyVersion.objects.filter(policy=current.policy).count() == 2
    assert snapshot(current) == before
    assert messages_of(response) == [f"Nothing was changed; {current} is unchanged."]


def test_it_refuses_rules_the_refund_code_cannot_read(superuser_client):
    current = published_version()
    data = form_data(current)
    data["rules"] = json.dumps({**current.rules, "role_limits": {"CNY": {"agent": 500}}})

    response = superuser_client.post(change_url(current), data)

    assert response.status_code == 200
    assert "role_limits.CNY.agent must be an amount string like" in response.content.decode()
    assert PolicyVersion.objects.filter(policy=current.policy).count() == 2


def test_it_edits_a_draft_in_place(superuser_client):
    draft = policy_version_draft_from(version=published_version())
    data = form_data(draft)
    data["clauses-1-title"] = "Amount limited to what is left"

    response = superuser_client.post(change_url(draft), data)

    assert response.status_code == 302
    assert draft.clauses.get(ref="R-2").title == "Amount limited to what is left"
    assert PolicyVersion.objects.filter(policy=draft.policy).count() == 3
    assert published_version().clauses.get(ref="R-2").title == (
        "Refund amount limited to the balance"
    )


def test_it_shows_a_retired_version_read_only(superuser_client):
    current = published_version()
    policy_version_publish(version=policy_version_draft_from(version=current))
    before = snapshot(current)
    data = form_data(current)
    data["rules"] = json.dumps({**current.rules, "refund_window_days": 90})

    page = superuser_client.get(change_url(current))
    response = superuser_client.post(change_url(current), data)

    assert page.status_code == 200
    assert 'name="rules"' not in page.content.decode()
    assert response.status_code == 403
    assert snapshot(current) == before
    assert PolicyVersion.objects.filter(policy=current.policy).count() == 3


def test_it_warns_on_the_published_version_page(superuser_client):
    page = superuser_client.get(change_url(published_version()))

    assert "Saving your edits creates a new draft version" in page.content.decode()
    assert 'name="initial-rules"' in page.content.decode()


def test_it_publishes_the_selected_draft(superuser_client):
    current = published_version()
    draft = policy_version_draft_from(version=current)

    response = superuser_client.post(
        reverse("admin:policies_policyversion_changelist"),
        {"action": "publish_selected_draft", "_selected_action": [str(draft.pk)]},
    )

    assert response.status_code == 302
    assert published_version().pk == draft.pk
    assert PolicyVersion.objects.get(pk=current.pk).status == "retired"
    assert messages_of(response) == [
        "refunds v3 is now published; the version it replaces is retired."
    ]


def test_it_refuses_to_publish_a_version_that_is_not_a_draft(superuser_client):
    current = published_version()

    response = superuser_client.post(
        reverse("admin:policies_policyversion_changelist"),
        {"action": "publish_selected_draft", "_selected_action": [str(current.pk)]},
    )

    assert messages_of(response) == ["Only a draft can be published; refunds v2 is published."]
    assert PolicyVersion.objects.get(pk=current.pk).status == "published"


def test_it_publishes_only_one_draft_at_a_time(superuser_client):
    current = published_version()
    drafts = [policy_version_draft_from(version=current) for _ in range(2)]

    response = superuser_client.post(
        reverse("admin:policies_policyversion_changelist"),
        {
            "action": "publish_selected_draft",
            "_selected_action": [str(draft.pk) for draft in drafts],
        },
    )

    assert messages_of(response) == ["Select exactly one draft to publish."]
    assert published_version().pk == current.pk
    assert set(
        PolicyVersion.objects.filter(pk__in=[d.pk for d in drafts]).values_list("status", flat=True)
    ) == {"draft"}


def test_it_lists_and_searches_versions(superuser_client):
    changelist = reverse("admin:policies_policyversion_changelist")

    listing = superuser_client.get(changelist)
    found = superuser_client.get(changelist, {"q": "authority"})
    missing = superuser_client.get(changelist, {"q": "xylophone"})

    assert listing.status_code == 200
    assert found.context["cl"].result_count == 2  # v1 (retired) and v2
    assert missing.context["cl"].result_count == 0
    assert superuser_client.get(reverse("admin:policies_policy_changelist")).status_code == 200


def test_it_lets_a_reviewer_view_but_not_edit_policies(client, reviewer):
    current = published_version()
    before = snapshot(current)
    client.force_login(reviewer)
    data = form_data(current)
    data["rules"] = json.dumps({**current.rules, "refund_window_days": 90})

    page = client.get(change_url(current))
    response = client.post(change_url(current), data)

    assert page.status_code == 200
    assert response.status_code == 403
    assert snapshot(current) == before
    assert Clause.objects.filter(policy_version=current).count() == 6
