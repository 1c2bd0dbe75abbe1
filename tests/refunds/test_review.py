from datetime import timedelta
from decimal import Decimal

import pytest
from django.contrib.auth.models import Group
from django.utils import timezone

from config.roles import Role
from refunds.errors import AmountNotExpressible, RefundRefused, ReviewForbidden, StaleConfirmation
from refunds.identity import fingerprint, fingerprint_params
from refunds.models import RefundConfirmation, RefundRequest
from refunds.services import (
    refund_approve,
    refund_expire_confirmations,
    refund_reject,
)
from tests.factories import (
    RefundConfirmationFactory,
    RefundProposalFactory,
    RefundRequestFactory,
    TicketFactory,
    UserFactory,
    propose_new_version,
)
from tests.refunds.conftest import snapshot
from tickets.models import TicketMessage

pytestmark = pytest.mark.django_db


@pytest.fixture
def refund(agent_user):
    return RefundProposalFactory(requested_by=agent_user)


def pending(refund: RefundRequest) -> RefundConfirmation:
    return refund.confirmations.get(status="pending")


def test_it_approves_the_exact_version_and_enqueues_execution_on_commit(
    refund, reviewer, django_capture_on_commit_callbacks
):
    v1 = pending(refund)

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        result = refund_approve(
            refund=refund,
            reviewer=reviewer,
            version=1,
            fingerprint=v1.fingerprint,
            note="Photo checks out.",
        )

    assert len(callbacks) == 1
    assert result.status == "approved"
    v1.refresh_from_db()
    assert (v1.status, v1.decided_by, v1.decision_note) == (
        "approved",
        reviewer,
        "Photo checks out.",
    )
    assert v1.decided_at is not None
    event = refund.events.last()
    assert (event.from_status, event.to_status, event.actor) == (
        "pending_approval",
        "approved",
        reviewer,
    )
    assert event.detail == {
        "version": 1,
        "fingerprint": v1.fingerprint,
        "note": "Photo checks out.",
    }
    assert TicketMessage.objects.filter(ticket=refund.ticket).last().body == (
        f"Refund {refund.request_id} of 129.00 CNY for order {refund.order.order_id} approved "
        f"by t_reviewer; sending it to the payment provider."
    )


def test_it_refuses_a_stale_version(
    refund, reviewer, agent_user, django_capture_on_commit_callbacks
):
    v1 = pending(refund)
    propose_new_version(refund, requested_by=agent_user)
    before = snapshot(refund)

    with (
        django_capture_on_commit_callbacks(execute=False) as callbacks,
        pytest.raises(StaleConfirmation) as refusal,
    ):
        refund_approve(refund=refund, reviewer=reviewer, version=1, fingerprint=v1.fingerprint)

    assert refusal.value.status_code == 409
    assert refusal.value.extra == {"current_version": 2}
    assert snapshot(refund) == before
    assert callbacks == []


def test_it_refuses_an_old_fingerprint_for_the_current_version(
    refund, reviewer, agent_user, django_capture_on_commit_callbacks
):
    old_fingerprint = pending(refund).fingerprint
    propose_new_version(refund, requested_by=agent_user)
    before = snapshot(refund)

    with (
        django_capture_on_commit_callbacks(execute=False) as callbacks,
        pytest.raises(StaleConfirmation) as refusal,
    ):
        refund_approve(refund=refund, reviewer=reviewer, version=2, fingerprint=old_fingerprint)

    assert refusal.value.code == "fingerprint_mismatch"
    assert snapshot(refund) == before
    assert callbacks == []


def test_it_refuses_a_fingerprint_that_matches_the_row_but_not_the_current_version(
    refund, reviewer, agent_user, django_capture_on_commit_callbacks
):
    # Given version 1 at 129.00, which the reviewer saw, corrected to 100.00 as version 2
    seen = pending(refund).fingerprint
    propose_new_version(refund, requested_by=agent_user)
    # and the row edited back to 129.00 behind version 2's back: the row now hashes to the
    # fingerprint the reviewer saw, while version 2 binds 100.00
    RefundRequest.objects.filter(pk=refund.pk).update(amount=Decimal("129.00"))
    assert fingerprint(fingerprint_params(RefundRequest.objects.get(pk=refund.pk))) == seen
    assert pending(refund).fingerprint != seen
    before = snapshot(refund)

    # When the reviewer approves version 2 with the fingerprint of version 1
    with (
        django_capture_on_commit_callbacks(execute=False) as callbacks,
        pytest.raises(StaleConfirmation) as refusal,
    ):
        refund_approve(refund=refund, reviewer=reviewer, version=2, fingerprint=seen)

    # Then it is refused: nobody approved the parameters version 2 binds
    assert (refusal.value.status_code, refusal.value.code) == (409, "fingerprint_mismatch")
    assert refusal.value.extra == {"current_version": 2}
    assert snapshot(refund) == before
    assert callbacks == []


def test_it_refuses_when_the_row_no_longer_matches_the_confirmed_fingerprint(
    refund, reviewer, django_capture_on_commit_callbacks
):
    v1 = pending(refund)
    # Someone changed the row behind the confirmation's back.
    RefundRequest.objects.filter(pk=refund.pk).update(amount=Decimal("128.00"))
    before = snapshot(refund)

    with (
        django_capture_on_commit_callbacks(execute=False) as callbacks,
        pytest.raises(StaleConfirmation) as refusal,
    ):
        refund_approve(refund=refund, reviewer=reviewer, version=1, fingerprint=v1.fingerprint)

    assert refusal.value.code == "fingerprint_mismatch"
    assert snapshot(refund) == before
    assert callbacks == []


def test_it_refuses_an_expired_version(refund, reviewer, django_capture_on_commit_callbacks):
    v1 = pending(refund)
    before = snapshot(refund)

    with (
        django_capture_on_commit_callbacks(execute=False) as callbacks,
        pytest.raises(StaleConfirmation) as refusal,
    ):
        refund_approve(
            refund=refund,
            reviewer=reviewer,
            version=1,
            fingerprint=v1.fingerprint,
            now=v1.expires_at + timedelta(seconds=1),
        )

    assert refusal.value.code == "confirmation_expired"
    assert snapshot(refund) == before
    assert callbacks == []


def test_the_requester_cannot_approve_their_own_request(django_capture_on_commit_callbacks):
    both = UserFactory(username="t_agent_reviewer", role=Role.AGENT)
    both.groups.add(Group.objects.get(name="refund_reviewer"))
    refund = RefundProposalFactory(requested_by=both)
    before = snapshot(refund)

    with (
        django_capture_on_commit_callbacks(execute=False) as callbacks,
        pytest.raises(ReviewForbidden) as refusal,
    ):
        refund_approve(
            refund=refund, reviewer=both, version=1, fingerprint=pending(refund).fingerprint
        )

    assert (refusal.value.status_code, refusal.value.code) == (403, "own_request")
    assert snapshot(refund) == before
    assert callbacks == []


def test_a_non_reviewer_cannot_approve(refund, supervisor, django_capture_on_commit_callbacks):
    before = snapshot(refund)

    with (
        django_capture_on_commit_callbacks(execute=False) as callbacks,
        pytest.raises(ReviewForbidden) as refusal,
    ):
        refund_approve(
            refund=refund, reviewer=supervisor, version=1, fingerprint=pending(refund).fingerprint
        )

    assert (refusal.value.status_code, refusal.value.code) == (403, "review_forbidden")
    assert snapshot(refund) == before
    assert callbacks == []


def test_a_policy_failure_at_approval_is_refused_with_its_clauses(
    refund, reviewer, django_capture_on_commit_callbacks
):
    # Past the refund window by the time the reviewer gets to it.
    refund.order.delivered_at = timezone.now() - timedelta(days=45)
    refund.order.save()
    before = snapshot(refund)

    with (
        django_capture_on_commit_callbacks(execute=False) as callbacks,
        pytest.raises(RefundRefused) as refusal,
    ):
        refund_approve(
            refund=refund, reviewer=reviewer, version=1, fingerprint=pending(refund).fingerprint
        )

    assert refusal.value.status_code == 422
    assert refusal.value.extra["failing_clauses"] == ["R-1"]
    assert snapshot(refund) == before
    assert callbacks == []


def test_two_intents_on_one_order_cannot_together_exceed_what_was_paid(
    agent_user, reviewer, django_capture_on_commit_callbacks
):
    ticket = TicketFactory()
    second_ticket = TicketFactory(customer=ticket.customer, order=ticket.order)
    damaged = RefundProposalFactory(
        ticket=ticket, amount=Decimal("100.00"), reason="damaged", requested_by=agent_user
    )
    wrong = RefundProposalFactory(
        ticket=second_ticket, amount=Decimal("100.00"), reason="wrong_item", requested_by=agent_user
    )
    refund_approve(
        refund=damaged, reviewer=reviewer, version=1, fingerprint=pending(damaged).fingerprint
    )
    before = snapshot(wrong)

    with (
        django_capture_on_commit_callbacks(execute=False) as callbacks,
        pytest.raises(RefundRefused) as refusal,
    ):
        refund_approve(
            refund=wrong, reviewer=reviewer, version=1, fingerprint=pending(wrong).fingerprint
        )

    assert refusal.value.extra["failing_clauses"] == ["R-2"]
    assert "exceeds the refundable balance of 29.00 CNY" in refusal.value.message
    assert snapshot(wrong) == before
    assert callbacks == []


def test_an_approved_version_cannot_be_approved_again(
    refund, reviewer, reviewer2, django_capture_on_commit_callbacks
):
    fingerprint = pending(refund).fingerprint
    refund_approve(refund=refund, reviewer=reviewer, version=1, fingerprint=fingerprint)
    before = snapshot(refund)

    with (
        django_capture_on_commit_callbacks(execute=False) as callbacks,
        pytest.raises(StaleConfirmation),
    ):
        refund_approve(refund=refund, reviewer=reviewer2, version=1, fingerprint=fingerprint)

    assert snapshot(refund) == before
    assert callbacks == []


def test_it_rejects_the_current_version(refund, reviewer, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        result = refund_reject(refund=refund, reviewer=reviewer, version=1, note="No photo.")

    assert callbacks == []
    assert result.status == "rejected"
    v1 = refund.confirmations.get()
    assert (v1.status, v1.decided_by, v1.decision_note) == ("rejected", reviewer, "No photo.")
    assert list(refund.events.values_list("from_status", "to_status")) == [
        ("", "pending_approval"),
        ("pending_approval", "rejected"),
    ]
    assert (
        TicketMessage.objects.filter(ticket=refund.ticket)
        .last()
        .body.endswith("rejected by t_reviewer: No photo.")
    )


def test_a_reject_of_a_stale_version_changes_nothing(refund, reviewer, agent_user):
    propose_new_version(refund, requested_by=agent_user)
    before = snapshot(refund)

    with pytest.raises(StaleConfirmation):
        refund_reject(refund=refund, reviewer=reviewer, version=1)

    assert snapshot(refund) == before


def test_a_non_reviewer_cannot_reject(refund, agent2_user):
    before = snapshot(refund)

    with pytest.raises(ReviewForbidden):
        refund_reject(refund=refund, reviewer=agent2_user, version=1)

    assert snapshot(refund) == before


def test_it_expires_lapsed_versions_and_their_requests(agent_user, reviewer):
    lapsed = RefundProposalFactory(requested_by=agent_user)
    fresh = RefundProposalFactory(requested_by=agent_user)
    decided = RefundProposalFactory(requested_by=agent_user)
    refund_approve(
        refund=decided, reviewer=reviewer, version=1, fingerprint=pending(decided).fingerprint
    )
    later = timezone.now() + timedelta(minutes=30)
    RefundConfirmation.objects.filter(refund_request__in=[lapsed, decided]).update(
        expires_at=later - timedelta(minutes=1)
    )
    decided_before = snapshot(decided)

    assert refund_expire_confirmations(now=later) == 1
    assert refund_expire_confirmations(now=later) == 0

    lapsed.refresh_from_db()
    assert lapsed.status == "expired"
    assert lapsed.confirmations.get().status == "expired"
    event = lapsed.events.last()
    assert (event.from_status, event.to_status, event.actor) == (
        "pending_approval",
        "expired",
        None,
    )
    fresh.refresh_from_db()
    assert (fresh.status, pending(fresh).version) == ("pending_approval", 1)
    assert snapshot(decided) == decided_before


def test_it_refuses_to_approve_an_amount_its_currency_cannot_express(
    agent_user, reviewer, django_capture_on_commit_callbacks
):
    # Given a pending 12.50 JPY proposal, stored before amounts were checked at proposal
    request = RefundRequestFactory(requested_by=agent_user, currency="JPY", amount=Decimal("12.50"))
    request.order.currency = "JPY"
    request.order.save()
    confirmation = RefundConfirmationFactory(refund_request=request)
    before = snapshot(request)

    # When a reviewer approves exactly what they saw
    with (
        django_capture_on_commit_callbacks(execute=False) as callbacks,
        pytest.raises(AmountNotExpressible) as refusal,
    ):
        refund_approve(
            refund=request, reviewer=reviewer, version=1, fingerprint=confirmation.fingerprint
        )

    # Then it is refused before anything is approved or sent to the provider
    assert refusal.value.message == (
        "12.50 JPY cannot be refunded: JPY has no minor unit, so the amount must be whole."
    )
    assert snapshot(request) == before
    assert callbacks == []
