"""Refunds tell their ticket what happened through refunds.signals; the tickets app posts it.
Each refund event is told once: a second note about the same event is noise on the ticket."""

import re
from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from refunds.execution import refund_execute
from refunds.models import RefundRequest, SimulatedRefund
from refunds.reconciliation import in_flight_window, refunds_reconcile
from refunds.services import refund_approve, refund_reject
from refunds.signals import tell_ticket
from tests.factories import OrderFactory, RefundProposalFactory, RefundRequestFactory
from tickets.models import TicketMessage

pytestmark = pytest.mark.django_db


def test_it_posts_a_refund_note_on_the_refunds_ticket_as_a_system_message():
    refund = RefundRequestFactory()

    tell_ticket(refund, "Refund rf_x approved; executing.")

    [message] = refund.ticket.messages.all()
    assert (message.author_kind, message.author, message.body) == (
        "system",
        None,
        "Refund rf_x approved; executing.",
    )
    refund.ticket.refresh_from_db()
    assert refund.ticket.updated_at == message.created_at


def test_it_posts_nothing_for_a_refund_made_outside_a_ticket():
    refund = RefundRequestFactory(ticket=None, order=OrderFactory())

    tell_ticket(refund, "Refund rf_y succeeded.")

    assert TicketMessage.objects.exists() is False


# --- One note per event, along the whole path -----------------------------------------------


class Notes:
    """The system notes on one ticket, read in the order they were posted."""

    def __init__(self, ticket):
        self.ticket = ticket
        self.seen = 0

    def since_last_look(self) -> list[str]:
        bodies = list(
            TicketMessage.objects.filter(ticket=self.ticket, author_kind="system").values_list(
                "body", flat=True
            )
        )
        new, self.seen = bodies[self.seen :], len(bodies)
        return new


@pytest.fixture
def proposed(agent_user):
    """A proposal of 129.50 CNY (the cents show whether amounts keep both decimals), with the
    ticket's notes so far."""
    refund = RefundProposalFactory(
        requested_by=agent_user, amount=Decimal("129.5"), ticket__order__amount_paid=500
    )
    return refund, Notes(refund.ticket)


def approve(refund, reviewer, django_capture_on_commit_callbacks) -> None:
    # The execute task is enqueued on commit; the test executes in the next step itself.
    with django_capture_on_commit_callbacks(execute=False):
        refund_approve(
            refund=refund,
            reviewer=reviewer,
            version=1,
            fingerprint=refund.confirmations.get().fingerprint,
        )


def later():
    return timezone.now() + in_flight_window() + timedelta(seconds=1)


def assert_one_clear_note(notes: list[str], refund: RefundRequest, *words: str) -> None:
    assert len(notes) == 1, notes
    [note] = notes
    assert f"Refund {refund.request_id} of 129.50 CNY" in note
    for word in words:
        assert word in note, (word, note)
    # Every amount in a note has its cents.
    amounts = re.findall(r"(\S+) CNY", note)
    assert amounts and all(re.fullmatch(r"\d+\.\d{2}", amount) for amount in amounts), note


def test_the_happy_path_posts_one_note_per_event(
    simulated_provider, proposed, reviewer, django_capture_on_commit_callbacks
):
    refund, notes = proposed
    assert_one_clear_note(notes.since_last_look(), refund, "proposed", "waiting for review")

    approve(refund, reviewer, django_capture_on_commit_callbacks)
    assert_one_clear_note(
        notes.since_last_look(), refund, "approved by t_reviewer", "payment provider"
    )

    assert refund_execute(refund_pk=refund.pk) == "succeeded"
    refund.refresh_from_db()
    assert_one_clear_note(notes.since_last_look(), refund, "succeeded", refund.provider_refund_id)

    # Another delivery of the execute task, and a sweep: nothing happened, nothing is posted.
    assert refund_execute(refund_pk=refund.pk) is None
    refunds_reconcile(now=later())
    assert notes.since_last_look() == []


def test_a_rejection_posts_one_note_naming_who_rejected_it(proposed, reviewer):
    refund, notes = proposed
    notes.since_last_look()

    refund_reject(refund=refund, reviewer=reviewer, version=1, note="No photo.")

    assert_one_clear_note(notes.since_last_look(), refund, "rejected by t_reviewer: No photo.")


def test_a_declined_refund_posts_one_note_for_the_approval_and_one_for_the_failure(
    settings, simulated_provider, proposed, reviewer, django_capture_on_commit_callbacks
):
    refund, notes = proposed
    notes.since_last_look()
    approve(refund, reviewer, django_capture_on_commit_callbacks)
    assert len(notes.since_last_look()) == 1
    settings.SIMULATED_PROVIDER_MODE = "fail"

    assert refund_execute(refund_pk=refund.pk) == "failed"

    assert_one_clear_note(notes.since_last_look(), refund, "failed", "declined")


def test_an_unknown_outcome_posts_one_note_and_its_reconciliation_one_more(
    settings, simulated_provider, proposed, reviewer, django_capture_on_commit_callbacks
):
    refund, notes = proposed
    notes.since_last_look()
    approve(refund, reviewer, django_capture_on_commit_callbacks)
    notes.since_last_look()
    settings.SIMULATED_PROVIDER_MODE = "timeout"

    assert refund_execute(refund_pk=refund.pk) == "outcome_unknown"
    assert_one_clear_note(notes.since_last_look(), refund, "outcome unknown")

    settings.SIMULATED_PROVIDER_MODE = "normal"
    refunds_reconcile(now=later())
    assert_one_clear_note(
        notes.since_last_look(), refund, "succeeded", "confirmed by reconciliation"
    )
    refunds_reconcile(now=later())
    assert notes.since_last_look() == []


def test_a_refund_pending_at_the_provider_posts_one_note_until_it_settles(
    settings, simulated_provider, proposed, reviewer, django_capture_on_commit_callbacks
):
    refund, notes = proposed
    notes.since_last_look()
    approve(refund, reviewer, django_capture_on_commit_callbacks)
    notes.since_last_look()
    settings.SIMULATED_PROVIDER_MODE = "pending"

    assert refund_execute(refund_pk=refund.pk) == "provider_pending"
    assert_one_clear_note(notes.since_last_look(), refund, "not settled yet")

    # Still pending at the provider: the sweep asks again and has nothing new to say.
    refunds_reconcile(now=later())
    assert notes.since_last_look() == []

    SimulatedRefund.objects.filter(idempotency_key=refund.request_id).update(status="succeeded")
    refunds_reconcile(now=later())
    assert_one_clear_note(
        notes.since_last_look(), refund, "succeeded", "confirmed by reconciliation"
    )


def test_a_request_edited_after_approval_posts_one_note_for_its_refusal(
    simulated_provider, proposed, reviewer, django_capture_on_commit_callbacks
):
    refund, notes = proposed
    notes.since_last_look()
    approve(refund, reviewer, django_capture_on_commit_callbacks)
    notes.since_last_look()
    RefundRequest.objects.filter(pk=refund.pk).update(amount=Decimal("99.00"))
    refund.refresh_from_db()

    assert refund_execute(refund_pk=refund.pk) == "failed"

    [note] = notes.since_last_look()
    assert note == (
        f"Refund {refund.request_id} of 99.00 CNY was not sent to the provider: "
        "fingerprint mismatch (its approval no longer covers it)."
    )
