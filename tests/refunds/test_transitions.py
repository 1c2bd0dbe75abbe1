"""The refund state machines (DESIGN §4), tried pair by pair: every move the design allows
succeeds with its event row; every other (from, to) pair is refused and changes nothing."""

from itertools import product

import pytest
from django.utils import timezone

from refunds.models import RefundConfirmation, RefundEvent, RefundRequest
from refunds.transitions import IllegalTransition, confirmation_transition, refund_transition
from tests.factories import RefundConfirmationFactory, RefundRequestFactory

pytestmark = pytest.mark.django_db

# DESIGN §4, written out here rather than read from the code under test.
REQUEST_MOVES = {
    ("pending_approval", "approved"),
    ("pending_approval", "rejected"),
    ("pending_approval", "expired"),
    ("pending_approval", "withdrawn"),
    ("approved", "executing"),
    ("executing", "succeeded"),
    ("executing", "failed"),
    ("executing", "outcome_unknown"),
    ("executing", "provider_pending"),
    ("outcome_unknown", "succeeded"),
    ("outcome_unknown", "failed"),
    ("outcome_unknown", "provider_pending"),
    ("provider_pending", "succeeded"),
    ("provider_pending", "failed"),
    ("expired", "pending_approval"),
}
REQUEST_REFUSALS = sorted(set(product(RefundRequest.Status.values, repeat=2)) - REQUEST_MOVES)

CONFIRMATION_MOVES = {
    ("pending", "approved"),
    ("pending", "rejected"),
    ("pending", "superseded"),
    ("pending", "expired"),
    ("pending", "withdrawn"),
}
CONFIRMATION_REFUSALS = sorted(
    set(product(RefundConfirmation.Status.values, repeat=2)) - CONFIRMATION_MOVES
)


def ids(pairs) -> list[str]:
    return [f"{from_status}->{to_status}" for from_status, to_status in pairs]


def request_row(refund: RefundRequest) -> dict:
    return RefundRequest.objects.values().get(pk=refund.pk)


def confirmation_row(confirmation: RefundConfirmation) -> dict:
    return RefundConfirmation.objects.values().get(pk=confirmation.pk)


# --- RefundRequest ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("from_status", "to_status"), sorted(REQUEST_MOVES), ids=ids(sorted(REQUEST_MOVES))
)
def test_it_makes_each_allowed_request_transition_with_one_event(from_status, to_status, reviewer):
    # Given a request in `from_status`
    refund = RefundRequestFactory(status=from_status)

    # When it moves to `to_status`
    moved = refund_transition(
        refund=refund,
        to_status=to_status,
        actor=reviewer,
        detail={"note": "checked"},
        provider_refund_id="re_1",
    )

    # Then the row moved, with the extra column, and one event records it
    assert moved is True
    row = request_row(refund)
    assert (row["status"], row["provider_refund_id"]) == (to_status, "re_1")
    assert refund.status == to_status
    events = RefundEvent.objects.filter(refund_request=refund)
    assert list(events.values_list("from_status", "to_status", "actor", "detail")) == [
        (from_status, to_status, reviewer.pk, {"note": "checked"})
    ]


@pytest.mark.parametrize(("from_status", "to_status"), REQUEST_REFUSALS, ids=ids(REQUEST_REFUSALS))
def test_it_refuses_every_other_request_transition_and_changes_nothing(
    from_status, to_status, reviewer
):
    # Given a request in `from_status`
    refund = RefundRequestFactory(status=from_status)
    before = request_row(refund)

    # When something tries to move it to `to_status`
    with pytest.raises(IllegalTransition):
        refund_transition(
            refund=refund, to_status=to_status, actor=reviewer, provider_refund_id="re_1"
        )

    # Then nothing changed and no event was written
    assert request_row(refund) == before
    assert RefundEvent.objects.filter(refund_request=refund).count() == 0


def test_it_leaves_a_request_that_another_process_moved_first():
    # Given a worker's copy of an executing request, settled meanwhile by reconciliation
    refund = RefundRequestFactory(status="executing")
    RefundRequest.objects.filter(pk=refund.pk).update(status="succeeded")

    # When the worker records its own outcome
    moved = refund_transition(refund=refund, to_status="failed")

    # Then the compare-and-swap lost: the settled status stands and no event was written
    assert moved is False
    assert request_row(refund)["status"] == "succeeded"
    assert RefundEvent.objects.filter(refund_request=refund).count() == 0


# --- RefundConfirmation -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("from_status", "to_status"), sorted(CONFIRMATION_MOVES), ids=ids(sorted(CONFIRMATION_MOVES))
)
def test_it_decides_a_pending_version_once_with_its_decision(from_status, to_status, reviewer):
    # Given a pending version
    confirmation = RefundConfirmationFactory(status=from_status)
    decided_at = timezone.now()

    # When it is decided
    moved = confirmation_transition(
        confirmation=confirmation,
        to_status=to_status,
        decided_by=reviewer,
        decided_at=decided_at,
        decision_note="checked",
    )

    # Then it carries the decision, written in the same update
    assert moved is True
    row = confirmation_row(confirmation)
    assert (row["status"], row["decided_by_id"], row["decided_at"], row["decision_note"]) == (
        to_status,
        reviewer.pk,
        decided_at,
        "checked",
    )
    assert confirmation.status == to_status


@pytest.mark.parametrize(
    ("from_status", "to_status"), CONFIRMATION_REFUSALS, ids=ids(CONFIRMATION_REFUSALS)
)
def test_it_refuses_every_other_version_transition_and_changes_nothing(
    from_status, to_status, reviewer
):
    # Given a version in `from_status` (a decided one is immutable)
    confirmation = RefundConfirmationFactory(status=from_status)
    before = confirmation_row(confirmation)

    # When something tries to move it to `to_status`
    with pytest.raises(IllegalTransition):
        confirmation_transition(
            confirmation=confirmation,
            to_status=to_status,
            decided_by=reviewer,
            decided_at=timezone.now(),
            decision_note="again",
        )

    # Then nothing changed
    assert confirmation_row(confirmation) == before


def test_it_leaves_a_version_that_another_reviewer_decided_first(reviewer, reviewer2):
    # Given a reviewer's copy of a pending version that another reviewer approved meanwhile
    confirmation = RefundConfirmationFactory()
    RefundConfirmation.objects.filter(pk=confirmation.pk).update(
        status="approved", decided_by=reviewer2
    )
    before = confirmation_row(confirmation)

    # When the first reviewer rejects it
    moved = confirmation_transition(
        confirmation=confirmation,
        to_status="rejected",
        decided_by=reviewer,
        decided_at=timezone.now(),
    )

    # Then the compare-and-swap lost and the approval stands untouched
    assert moved is False
    assert confirmation_row(confirmation) == before
