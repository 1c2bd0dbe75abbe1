import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.auth.models import Group
from django.test import Client

from refunds.models import RefundConfirmation, RefundEvent, RefundRequest
from tests.factories import (
    AgentRunFactory,
    RefundProposalFactory,
    UserFactory,
    propose_new_version,
)

pytestmark = pytest.mark.django_db

CHANGELIST = "/admin/refunds/refundrequest/"


def state(refund: RefundRequest) -> tuple:
    return (
        RefundRequest.objects.values().get(pk=refund.pk),
        list(RefundConfirmation.objects.filter(refund_request=refund).values()),
        RefundEvent.objects.filter(refund_request=refund).count(),
    )


def logged_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def refund(agent_user):
    return RefundProposalFactory(requested_by=agent_user)


def test_the_approve_action_first_shows_the_version_and_fingerprint(
    refund, reviewer, django_capture_on_commit_callbacks
):
    confirmation = refund.confirmations.get()
    before = state(refund)

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = logged_in(reviewer).post(
            CHANGELIST, {"action": "approve_refunds", ACTION_CHECKBOX_NAME: [refund.pk]}
        )

    assert response.status_code == 200
    page = response.content.decode()
    assert f'name="version_{refund.pk}" value="1"' in page
    assert f'name="fingerprint_{refund.pk}" value="{confirmation.fingerprint}"' in page
    assert 'name="confirm" value="yes"' in page
    assert state(refund) == before
    assert callbacks == []


def test_confirming_the_approve_action_goes_through_the_service(
    refund, reviewer, django_capture_on_commit_callbacks
):
    confirmation = refund.confirmations.get()

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = logged_in(reviewer).post(
            CHANGELIST,
            {
                "action": "approve_refunds",
                ACTION_CHECKBOX_NAME: [refund.pk],
                "confirm": "yes",
                f"version_{refund.pk}": "1",
                f"fingerprint_{refund.pk}": confirmation.fingerprint,
                "note": "Checked in admin.",
            },
            follow=True,
        )

    assert f"Refund {refund.request_id} v1 approved." in response.content.decode()
    refund.refresh_from_db()
    confirmation.refresh_from_db()
    assert refund.status == "approved"
    assert (confirmation.status, confirmation.decided_by, confirmation.decision_note) == (
        "approved",
        reviewer,
        "Checked in admin.",
    )
    assert refund.events.last().actor == reviewer
    assert len(callbacks) == 1


def test_a_confirmation_page_gone_stale_approves_nothing(
    refund, reviewer, agent_user, django_capture_on_commit_callbacks
):
    shown = refund.confirmations.get()
    propose_new_version(refund, requested_by=agent_user)
    before = state(refund)

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = logged_in(reviewer).post(
            CHANGELIST,
            {
                "action": "approve_refunds",
                ACTION_CHECKBOX_NAME: [refund.pk],
                "confirm": "yes",
                f"version_{refund.pk}": "1",
                f"fingerprint_{refund.pk}": shown.fingerprint,
            },
            follow=True,
        )

    assert f"Refund {refund.request_id} not approved: Version 1 is not the current version" in (
        response.content.decode()
    )
    assert state(refund) == before
    assert callbacks == []


def test_the_requester_cannot_approve_through_admin(reviewer, django_capture_on_commit_callbacks):
    reviewer.groups.add(Group.objects.get(name="support_agent"))
    own = RefundProposalFactory(requested_by=reviewer)
    before = state(own)

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = logged_in(reviewer).post(
            CHANGELIST,
            {
                "action": "approve_refunds",
                ACTION_CHECKBOX_NAME: [own.pk],
                "confirm": "yes",
                f"version_{own.pk}": "1",
                f"fingerprint_{own.pk}": own.confirmations.get().fingerprint,
            },
            follow=True,
        )

    assert "another reviewer must decide it" in response.content.decode()
    assert state(own) == before
    assert callbacks == []


def test_the_reject_action_goes_through_the_service(refund, reviewer):
    response = logged_in(reviewer).post(
        CHANGELIST,
        {
            "action": "reject_refunds",
            ACTION_CHECKBOX_NAME: [refund.pk],
            "confirm": "yes",
            f"version_{refund.pk}": "1",
            "note": "Duplicate.",
        },
        follow=True,
    )

    assert f"Refund {refund.request_id} v1 rejected." in response.content.decode()
    refund.refresh_from_db()
    assert refund.status == "rejected"
    assert refund.confirmations.get().decision_note == "Duplicate."


def test_decided_data_is_read_only_in_admin(refund, reviewer):
    client = logged_in(reviewer)
    confirmation = refund.confirmations.get()
    event = refund.events.get()

    detail = client.get(f"{CHANGELIST}{refund.pk}/change/")
    assert detail.status_code == 200
    assert confirmation.fingerprint in detail.content.decode()
    assert b'name="_save"' not in detail.content
    assert client.post(f"{CHANGELIST}{refund.pk}/delete/", {"post": "yes"}).status_code == 403
    assert client.get(f"{CHANGELIST}add/").status_code == 403
    assert (
        client.post(
            f"/admin/refunds/refundconfirmation/{confirmation.pk}/change/", {"status": "approved"}
        ).status_code
        == 403
    )
    assert (
        client.post(f"/admin/refunds/refundevent/{event.pk}/delete/", {"post": "yes"}).status_code
        == 403
    )
    assert state(refund)[1][0]["status"] == "pending"


def test_a_superuser_without_the_reviewer_role_gets_no_review_actions(refund):
    admin_user = UserFactory(username="t_admin", is_staff=True, is_superuser=True)

    response = logged_in(admin_user).get(CHANGELIST)

    assert response.status_code == 200
    assert b"approve_refunds" not in response.content
    assert b"reject_refunds" not in response.content


def confirm_post(
    refund, *, action: str, version: str, note: str = "", fingerprint: str | None = None
) -> dict:
    """What the confirmation page posts back, with `version` and `note` as given."""
    data = {
        "action": action,
        ACTION_CHECKBOX_NAME: [refund.pk],
        "confirm": "yes",
        f"version_{refund.pk}": version,
        "note": note,
    }
    if action == "approve_refunds":
        data[f"fingerprint_{refund.pk}"] = (
            refund.confirmations.get().fingerprint if fingerprint is None else fingerprint
        )
    return data


# "²" passes str.isdigit() but not int(); "٣" and the fullwidth three pass both and read as 3.
@pytest.mark.parametrize("version", ["²", "٣", "\uff13", "1.0", "-1", "1\x00", "1" * 10])
@pytest.mark.parametrize("action", ["approve_refunds", "reject_refunds"])
def test_it_refuses_a_version_that_is_not_ascii_digits(
    refund, reviewer, django_capture_on_commit_callbacks, action, version
):
    client = logged_in(reviewer)
    client.raise_request_exception = False
    before = state(refund)

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = client.post(
            CHANGELIST, confirm_post(refund, action=action, version=version), follow=True
        )

    assert response.status_code == 200
    done = "approved" if action == "approve_refunds" else "rejected"
    assert response.content.decode().count("Nothing was") == 1
    assert (
        f"Nothing was {done}: the version of refund {refund.request_id} was not the one "
        f"shown. Reload and try again."
    ) in response.content.decode()
    assert state(refund) == before
    assert callbacks == []


@pytest.mark.parametrize("action", ["approve_refunds", "reject_refunds"])
def test_it_refuses_a_note_with_a_nul_byte(
    refund, reviewer, django_capture_on_commit_callbacks, action
):
    client = logged_in(reviewer)
    client.raise_request_exception = False
    before = state(refund)

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = client.post(
            CHANGELIST,
            confirm_post(refund, action=action, version="1", note="fine\x00print"),
            follow=True,
        )

    assert response.status_code == 200
    done = "approved" if action == "approve_refunds" else "rejected"
    assert response.content.decode().count("Nothing was") == 1
    assert (
        f"Nothing was {done}: the note may not contain NUL characters." in response.content.decode()
    )
    assert state(refund) == before
    assert callbacks == []


@pytest.mark.parametrize("fingerprint", ["a" * 63 + "\x00", "A" * 64, "a" * 65])
def test_it_refuses_a_fingerprint_that_is_not_one_it_could_have_shown(
    refund, reviewer, django_capture_on_commit_callbacks, fingerprint
):
    client = logged_in(reviewer)
    client.raise_request_exception = False
    before = state(refund)

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = client.post(
            CHANGELIST,
            confirm_post(refund, action="approve_refunds", version="1", fingerprint=fingerprint),
            follow=True,
        )

    assert response.status_code == 200
    assert response.content.decode().count("Nothing was") == 1
    assert (
        f"Nothing was approved: the fingerprint of refund {refund.request_id} was not the "
        f"one shown. Reload and try again."
    ) in response.content.decode()
    assert state(refund) == before
    assert callbacks == []


def test_the_reject_action_first_asks_for_confirmation_and_rejects_nothing(refund, reviewer):
    before = state(refund)

    response = logged_in(reviewer).post(
        CHANGELIST, {"action": "reject_refunds", ACTION_CHECKBOX_NAME: [refund.pk]}
    )

    assert response.status_code == 200
    page = response.content.decode()
    assert "Yes, reject these versions" in page
    assert f'name="version_{refund.pk}" value="1"' in page
    assert state(refund) == before


# --- How admin shows a request: words, JSON, short fingerprints ---------------------------------


def test_the_change_form_shows_fingerprints_short_with_the_full_value_to_copy(refund, reviewer):
    fingerprint = refund.confirmations.get().fingerprint

    page = logged_in(reviewer).get(f"{CHANGELIST}{refund.pk}/change/").content.decode()

    assert (
        f'<span class="desk-id" title="{fingerprint}">{fingerprint[:12]}…</span> '
        f'<button type="button" class="desk-copy" data-copy="{fingerprint}"'
    ) in page
    # Whole, the fingerprint is only in the attributes, never as text that widens the table.
    assert f">{fingerprint}<" not in page
    assert "/static/js/desk.js" in page and "/static/css/admin.css" in page


def test_the_change_form_shows_json_formatted_and_events_in_words(refund, reviewer):
    client = logged_in(reviewer)
    client.post(
        CHANGELIST,
        {
            "action": "reject_refunds",
            ACTION_CHECKBOX_NAME: [refund.pk],
            "confirm": "yes",
            f"version_{refund.pk}": "1",
            "note": "Duplicate.",
        },
    )

    page = client.get(f"{CHANGELIST}{refund.pk}/change/").content.decode()

    assert "<pre>[\n  {\n    &quot;clause&quot;: &quot;R-1&quot;," in page
    assert (
        "<pre>{\n  &quot;note&quot;: &quot;Duplicate.&quot;,\n  &quot;version&quot;: 1\n}</pre>"
        in page
    )
    assert "New request → Waiting for a reviewer" in page
    assert "Waiting for a reviewer → Rejected" in page
    assert "{&#x27;" not in page


def test_admin_shows_a_requests_ticket_by_its_reference(refund, reviewer):
    client = logged_in(reviewer)
    link = f'<a class="desk-nowrap" href="/tickets/{refund.ticket.reference}/">'

    listing = client.get(CHANGELIST).content.decode()
    detail = client.get(f"{CHANGELIST}{refund.pk}/change/").content.decode()

    assert f"{link}{refund.ticket.reference}</a>" in listing
    assert f"{link}{refund.ticket.reference}</a>" in detail
    assert '<span class="desk-nowrap">129.00 CNY</span>' in listing


def test_refund_events_and_confirmations_read_as_words_and_json_in_their_own_admin(
    refund, reviewer
):
    client = logged_in(reviewer)
    event = refund.events.get()
    confirmation = refund.confirmations.get()

    events = client.get("/admin/refunds/refundevent/").content.decode()
    by_status = client.get("/admin/refunds/refundevent/?to_status=pending_approval")
    params = client.get(
        f"/admin/refunds/refundconfirmation/{confirmation.pk}/change/"
    ).content.decode()

    assert "New request → Waiting for a reviewer" in events
    assert list(by_status.context["cl"].result_list) == [event]
    assert "<pre>{\n  &quot;amount&quot;: &quot;129.00&quot;," in params


def test_the_change_form_names_the_proposing_run_by_the_start_of_its_id(agent_user, reviewer):
    run = AgentRunFactory(started_by=agent_user)
    refund = RefundProposalFactory(requested_by=agent_user, ticket=run.ticket, run=run)

    page = logged_in(reviewer).get(f"{CHANGELIST}{refund.pk}/change/").content.decode()

    assert (
        f'<a href="/admin/agent/agentrun/{run.pk}/change/" title="{run.pk}">{str(run.pk)[:8]}…</a>'
    ) in page
    assert f"run {run.pk} on" not in page
