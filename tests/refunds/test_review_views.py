from datetime import timedelta
from decimal import Decimal

import pytest
from django.contrib.auth.models import Group
from django.test import Client
from django.utils import timezone

from agent.models import ToolCallLog
from refunds.models import RefundConfirmation, RefundEvent, RefundRequest
from refunds.services import refund_withdraw
from tests.factories import (
    AgentRunFactory,
    RefundProposalFactory,
    TicketFactory,
    propose_new_version,
    publish_role_limits,
)

pytestmark = pytest.mark.django_db


def state(refund: RefundRequest) -> tuple:
    return (
        RefundRequest.objects.values().get(pk=refund.pk),
        list(RefundConfirmation.objects.filter(refund_request=refund).values()),
        RefundEvent.objects.filter(refund_request=refund).count(),
    )


def logged_in(user, **kwargs) -> Client:
    client = Client(**kwargs)
    client.force_login(user)
    return client


@pytest.fixture
def refund(agent_user):
    ticket = TicketFactory(
        reference="TCK-7200", order__order_id="202610110087", customer__name="Li Wei"
    )
    run = AgentRunFactory(ticket=ticket, started_by=agent_user, untrusted_instructions=True)
    ToolCallLog.objects.create(
        run=run,
        ticket=ticket,
        tool_call_id="call_1",
        tool_name="get_order",
        arguments={"order_id": "202610110087"},
        ok=True,
        result={"ok": True},
        actor=agent_user,
        actor_role="agent",
    )
    ToolCallLog.objects.create(
        run=run,
        ticket=ticket,
        tool_call_id="call_2",
        tool_name="create_refund",
        arguments={"order_id": "202610110087"},
        ok=False,
        result={"ok": False},
        error_code="INVALID_ARGUMENTS",
        actor=agent_user,
        actor_role="agent",
    )
    return RefundProposalFactory(ticket=ticket, requested_by=agent_user, run=run)


def test_the_queue_requires_login(client):
    response = client.get("/review/")

    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


def test_an_agent_cannot_open_the_queue_or_a_refund(refund, agent_user):
    client = logged_in(agent_user)

    assert client.get("/review/").status_code == 403
    assert client.get(f"/review/{refund.request_id}/").status_code == 403
    assert b"Review queue" not in client.get("/tickets/").content


def test_the_queue_lists_pending_requests_oldest_first_with_counts(agent_user, reviewer):
    older = RefundProposalFactory(requested_by=agent_user, ticket__reference="TCK-7301")
    newer = RefundProposalFactory(requested_by=agent_user, ticket__reference="TCK-7302")
    RefundRequest.objects.filter(pk=older.pk).update(created_at=timezone.now() - timedelta(hours=2))
    decided = RefundProposalFactory(requested_by=agent_user, ticket__reference="TCK-7303")
    logged_in(reviewer).post(
        f"/review/{decided.request_id}/reject/", {"version": 1, "confirm_reject": "yes"}
    )

    response = logged_in(reviewer).get("/review/")

    assert response.status_code == 200
    assert [refund for refund, _ in response.context["rows"]] == [older, newer]
    counts = {value: count for value, _, count in response.context["counts"]}
    assert (counts["pending_approval"], counts["rejected"], counts["approved"]) == (2, 1, 0)
    assert b"Review queue" in response.content


def test_the_queue_filters_by_status_reason_and_search(agent_user, reviewer):
    damaged = RefundProposalFactory(
        requested_by=agent_user, ticket__reference="TCK-7401", amount=Decimal("50.00")
    )
    wrong = RefundProposalFactory(
        requested_by=agent_user,
        ticket__reference="TCK-7403",
        reason="wrong_item",
        amount=Decimal("50.00"),
    )
    other = RefundProposalFactory(requested_by=agent_user, ticket__reference="TCK-7402")
    client = logged_in(reviewer)

    def listed(**params) -> list:
        return [refund for refund, _ in client.get("/review/", params).context["rows"]]

    assert listed(reason="wrong_item") == [wrong]
    assert listed(q="TCK-7401") == [damaged]
    assert listed(q="TCK-7403") == [wrong]
    assert listed(q=other.order.order_id) == [other]
    assert listed(q=other.order.customer.name) == [other]
    assert listed(status="rejected") == []
    assert listed(status="all") == [damaged, wrong, other]


def test_the_detail_page_shows_what_a_reviewer_needs(refund, reviewer):
    confirmation = refund.confirmations.get()

    response = logged_in(reviewer).get(f"/review/{refund.request_id}/")

    assert response.status_code == 200
    page = response.content.decode()
    for text in (
        "202610110087",
        "Li Wei",
        "129.00 CNY",
        "Already refunded",
        "Refundable",
        "The mug arrived in pieces.",
        "t_agent",
        "v1",
        confirmation.fingerprint,
        "get_order",
        "create_refund",
        "INVALID_ARGUMENTS",
        "untrusted instructions",
        'id="approve-form"',
        'id="reject-form"',
        "csrfmiddlewaretoken",
    ):
        assert text in page, text
    verdicts = {v.clause: v for v in response.context["review"].verdicts}
    assert sorted(verdicts) == ["R-1", "R-2", "R-3", "R-4", "R-5", "R-6"]
    assert all(v.text for v in verdicts.values())
    assert verdicts["R-1"].text in page
    assert f'name="fingerprint" value="{confirmation.fingerprint}"' in page
    assert 'name="version" value="1"' in page


def test_the_detail_page_names_the_orders_currency_in_every_figure(agent_user, reviewer):
    # Given a 19.00 KWD refund proposed under limits set in CNY and KWD
    publish_role_limits(
        {
            "CNY": {"intern": "0.00", "agent": "500.00", "supervisor": "5000.00"},
            "KWD": {"agent": "20.00", "supervisor": "200.00"},
        }
    )
    ticket = TicketFactory(order__currency="KWD", order__amount_paid=Decimal("499.00"))
    refund = RefundProposalFactory(ticket=ticket, requested_by=agent_user, amount=Decimal("19.00"))

    response = logged_in(reviewer).get(f"/review/{refund.request_id}/")

    page = response.content.decode()
    for text in (
        "requested 19.00 KWD is within the agent limit of 20.00 KWD",
        "requested 19.00 KWD is within the refundable balance of 499.00 KWD",
        "Approve 19.00 KWD (v1)",
        "499.00 KWD",
    ):
        assert text in page, text
    # The clause texts quote the CNY limits; no verdict on this refund does.
    assert not [v for v in response.context["review"].verdicts if "CNY" in v.detail]


def test_the_requester_sees_no_approve_button(reviewer):
    reviewer.groups.add(Group.objects.get(name="support_agent"))
    own = RefundProposalFactory(requested_by=reviewer)

    page = logged_in(reviewer).get(f"/review/{own.request_id}/").content.decode()

    assert 'id="approve-form"' not in page
    assert "another reviewer must decide it" in page


def test_the_queue_drops_a_withdrawn_proposal(agent_user, reviewer):
    kept = RefundProposalFactory(requested_by=agent_user, ticket__reference="TCK-7304")
    withdrawn = RefundProposalFactory(requested_by=agent_user, ticket__reference="TCK-7305")

    refund_withdraw(refund=withdrawn, by=agent_user)

    response = logged_in(reviewer).get("/review/")
    assert [refund for refund, _ in response.context["rows"]] == [kept]
    counts = {value: count for value, _, count in response.context["counts"]}
    assert (counts["pending_approval"], counts["withdrawn"]) == (1, 1)


def test_approving_a_withdrawn_proposal_from_the_page_says_so_and_changes_nothing(
    refund, reviewer, agent_user, django_capture_on_commit_callbacks
):
    confirmation = refund.confirmations.get()
    refund_withdraw(refund=refund, by=agent_user)
    before = state(refund)

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = logged_in(reviewer).post(
            f"/review/{refund.request_id}/approve/",
            {"version": 1, "fingerprint": confirmation.fingerprint},
            follow=True,
        )

    assert f"Not approved: Refund {refund.request_id} is withdrawn" in response.content.decode()
    assert state(refund) == before
    assert callbacks == []


def test_a_reviewer_approves_from_the_page(refund, reviewer, django_capture_on_commit_callbacks):
    confirmation = refund.confirmations.get()

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = logged_in(reviewer).post(
            f"/review/{refund.request_id}/approve/",
            {"version": 1, "fingerprint": confirmation.fingerprint, "note": "Looks right."},
            follow=True,
        )

    assert response.redirect_chain == [(f"/review/{refund.request_id}/", 302)]
    assert f"Refund {refund.request_id} approved." in response.content.decode()
    refund.refresh_from_db()
    confirmation.refresh_from_db()
    assert (refund.status, confirmation.status, confirmation.decision_note) == (
        "approved",
        "approved",
        "Looks right.",
    )
    assert len(callbacks) == 1


def test_a_stale_approval_shows_a_message_and_changes_nothing(
    refund, reviewer, agent_user, django_capture_on_commit_callbacks
):
    old = refund.confirmations.get()
    propose_new_version(refund, requested_by=agent_user)
    before = state(refund)

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = logged_in(reviewer).post(
            f"/review/{refund.request_id}/approve/",
            {"version": 1, "fingerprint": old.fingerprint},
            follow=True,
        )

    assert response.status_code == 200
    assert "Not approved: Version 1 is not the current version" in response.content.decode()
    assert "Traceback" not in response.content.decode()
    assert state(refund) == before
    assert callbacks == []


def test_the_server_refuses_the_requester_even_without_the_button(
    reviewer, django_capture_on_commit_callbacks
):
    reviewer.groups.add(Group.objects.get(name="support_agent"))
    own = RefundProposalFactory(requested_by=reviewer)
    before = state(own)

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = logged_in(reviewer).post(
            f"/review/{own.request_id}/approve/",
            {"version": 1, "fingerprint": own.confirmations.get().fingerprint},
            follow=True,
        )

    assert "another reviewer must decide it" in response.content.decode()
    assert state(own) == before
    assert callbacks == []


def test_an_agent_cannot_post_an_approval(refund, agent2_user):
    before = state(refund)

    response = logged_in(agent2_user).post(
        f"/review/{refund.request_id}/approve/",
        {"version": 1, "fingerprint": refund.confirmations.get().fingerprint},
    )

    assert response.status_code == 403
    assert state(refund) == before


def test_an_approval_without_a_csrf_token_is_refused(refund, reviewer):
    before = state(refund)

    response = logged_in(reviewer, enforce_csrf_checks=True).post(
        f"/review/{refund.request_id}/approve/",
        {"version": 1, "fingerprint": refund.confirmations.get().fingerprint},
    )

    assert response.status_code == 403
    assert state(refund) == before


def test_an_incomplete_form_is_refused_with_a_message(refund, reviewer):
    before = state(refund)

    response = logged_in(reviewer).post(
        f"/review/{refund.request_id}/approve/", {"version": 1}, follow=True
    )

    assert "the form was incomplete" in response.content.decode()
    assert state(refund) == before


def test_a_reviewer_rejects_from_the_page(refund, reviewer):
    response = logged_in(reviewer).post(
        f"/review/{refund.request_id}/reject/",
        {"version": 1, "note": "No photo.", "confirm_reject": "yes"},
        follow=True,
    )

    assert f"Refund {refund.request_id} rejected." in response.content.decode()
    refund.refresh_from_db()
    assert refund.status == "rejected"
    assert refund.confirmations.get().decision_note == "No photo."


def test_the_reject_form_asks_for_an_explicit_confirmation(refund, reviewer):
    page = logged_in(reviewer).get(f"/review/{refund.request_id}/").content.decode()

    form = page[
        page.index('id="reject-form"') : page.index("</form>", page.index('id="reject-form"'))
    ]
    assert 'type="checkbox" name="confirm_reject" value="yes" required' in form
    assert "I want to reject this request" in form
    assert 'data-confirm="Reject refund' in page


@pytest.mark.parametrize("confirmation", [None, "", "no", "on"])
def test_a_reject_without_the_confirmation_rejects_nothing_and_says_why(
    refund, reviewer, confirmation
):
    before = state(refund)
    data = {"version": 1, "note": "No photo."}
    if confirmation is not None:
        data["confirm_reject"] = confirmation

    response = logged_in(reviewer).post(f"/review/{refund.request_id}/reject/", data, follow=True)

    assert response.redirect_chain == [(f"/review/{refund.request_id}/", 302)]
    page = response.content.decode()
    assert "Not rejected: tick “I want to reject this request” to confirm." in page
    assert state(refund) == before
    assert refund.ticket.messages.filter(body__contains="rejected").exists() is False


def test_an_agent_gets_a_403_for_a_reject_even_with_the_confirmation(refund, agent2_user):
    before = state(refund)

    response = logged_in(agent2_user).post(
        f"/review/{refund.request_id}/reject/", {"version": 1, "confirm_reject": "yes"}
    )

    assert response.status_code == 403
    assert state(refund) == before


def test_the_tool_call_trail_shows_arguments_and_results_as_json(refund, reviewer):
    response = logged_in(reviewer).get(f"/review/{refund.request_id}/")

    page = response.content.decode()
    trail = page[page.index('id="tool-calls"') : page.index('id="history"')]
    assert '<pre class="json">{\n  &quot;order_id&quot;: &quot;202610110087&quot;\n}</pre>' in trail
    assert '<pre class="json">{\n  &quot;ok&quot;: false\n}</pre>' in trail
    # Never a Python dict repr
    assert "{&#x27;order_id&#x27;" not in trail
    assert "&#x27;ok&#x27;: True" not in trail


def test_the_tool_call_trail_shows_arguments_that_were_not_json_as_sent(refund, reviewer):
    refund.run.tool_calls.filter(tool_call_id="call_2").update(
        arguments=None, arguments_raw='{"order_id": "2026'
    )

    page = logged_in(reviewer).get(f"/review/{refund.request_id}/").content.decode()

    assert '<pre class="json">{&quot;order_id&quot;: &quot;2026</pre>' in page


def test_the_events_read_as_words(refund, reviewer):
    logged_in(reviewer).post(
        f"/review/{refund.request_id}/reject/", {"version": 1, "confirm_reject": "yes"}
    )

    page = logged_in(reviewer).get(f"/review/{refund.request_id}/").content.decode()

    history = page[page.index("<h2>Events</h2>") :]
    assert "New request → Waiting for a reviewer" in history
    assert "Waiting for a reviewer → Rejected" in history
    assert "pending_approval" not in history.replace('badge-pending_approval"', "")
    versions = page[page.index("<h2>Versions</h2>") : page.index("<h2>Events</h2>")]
    assert "<td>Damaged</td>" in versions


def test_an_unknown_refund_page_is_404(reviewer):
    assert logged_in(reviewer).get("/review/rf_000000000000000000000000/").status_code == 404
