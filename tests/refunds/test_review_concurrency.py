"""Concurrency claims, tested concurrently: real threads against PostgreSQL."""

import threading
from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connection

from config.errors import ApplicationError
from policies.selectors import evaluate_refund_for_order
from refunds.errors import NotWithdrawable, StaleConfirmation
from refunds.models import RefundConfirmation, RefundEvent, RefundRequest
from refunds.services import (
    refund_approve,
    refund_expire_confirmations,
    refund_propose,
    refund_reject,
    refund_withdraw,
)
from refunds.services import withdrawal as withdrawal_service
from tests.factories import RefundProposalFactory, TicketFactory
from tests.services import run_in_threads, wait_for
from tickets.models import TicketMessage

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]


def test_concurrent_identical_proposals_make_one_request(postgres, agent_user):
    ticket = TicketFactory()

    outcomes = run_in_threads(
        20,
        lambda _: refund_propose(
            ticket=ticket,
            order=ticket.order,
            amount=Decimal("129.00"),
            reason="damaged",
            explanation="Broken on arrival.",
            requested_by=agent_user,
            role="agent",
        ),
    )

    assert [o for o in outcomes if isinstance(o, Exception)] == []
    assert sorted(o.outcome for o in outcomes) == ["created"] + ["unchanged"] * 19
    assert {o.refund.pk for o in outcomes} == {RefundRequest.objects.get().pk}
    assert list(RefundConfirmation.objects.values_list("version", "status")) == [(1, "pending")]
    assert RefundEvent.objects.count() == 1


def test_concurrent_approvals_of_one_version_approve_once(postgres, agent_user, reviewer, enqueued):
    refund = RefundProposalFactory(requested_by=agent_user)
    fingerprint = refund.confirmations.get().fingerprint

    outcomes = run_in_threads(
        10,
        lambda _: refund_approve(
            refund=refund, reviewer=reviewer, version=1, fingerprint=fingerprint
        ),
    )

    approvals = [o for o in outcomes if isinstance(o, RefundRequest)]
    refusals = [o for o in outcomes if isinstance(o, ApplicationError)]
    assert (len(approvals), len(refusals)) == (1, 9)
    assert {r.status_code for r in refusals} == {409}
    assert RefundRequest.objects.get().status == "approved"
    assert RefundEvent.objects.filter(to_status="approved").count() == 1
    assert RefundConfirmation.objects.get().status == "approved"
    assert enqueued == [refund.pk]


def test_concurrent_approvals_of_two_intents_never_exceed_the_amount_paid(
    postgres, agent_user, reviewer, reviewer2, enqueued
):
    ticket = TicketFactory()  # its order paid 129.00
    second_ticket = TicketFactory(customer=ticket.customer, order=ticket.order)
    damaged = RefundProposalFactory(
        ticket=ticket, amount=Decimal("100.00"), reason="damaged", requested_by=agent_user
    )
    wrong = RefundProposalFactory(
        ticket=second_ticket, amount=Decimal("100.00"), reason="wrong_item", requested_by=agent_user
    )
    decisions = [(damaged, reviewer), (wrong, reviewer2)]

    outcomes = run_in_threads(
        2,
        lambda i: refund_approve(
            refund=decisions[i][0],
            reviewer=decisions[i][1],
            version=1,
            fingerprint=decisions[i][0].confirmations.get().fingerprint,
        ),
    )

    refusals = [o for o in outcomes if isinstance(o, ApplicationError)]
    assert len(refusals) == 1
    assert (refusals[0].status_code, refusals[0].extra["failing_clauses"]) == (422, ["R-2"])
    statuses = sorted(RefundRequest.objects.values_list("status", flat=True))
    assert statuses == ["approved", "pending_approval"]
    approved = RefundRequest.objects.filter(status="approved")
    assert sum(r.amount for r in approved) <= Decimal("129.00")
    assert enqueued == [approved.get().pk]


def backend_pid() -> int:
    """The PostgreSQL backend serving this thread's connection."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def waits_for_a_lock(pid: int) -> bool:
    """Whether backend `pid` is blocked by a lock another transaction holds."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT cardinality(pg_blocking_pids(%s)) > 0", [pid])
        return cursor.fetchone()[0]


@pytest.mark.parametrize("decision", ["reject", "expiry sweep", "withdraw"])
def test_a_decision_arriving_during_an_approval_waits_for_it_and_finds_it_approved(
    postgres, agent_user, reviewer, reviewer2, enqueued, monkeypatch, decision
):
    # Given a pending proposal
    refund = RefundProposalFactory(requested_by=agent_user)
    v1 = refund.confirmations.get()
    # and an approval that, once it holds its locks, pauses in its policy check until the
    # other decision is either blocked on a lock or finished
    approving, other_finished = threading.Event(), threading.Event()
    other_backend: list[int] = []

    def paused_policy_check(**kwargs):
        approving.set()
        wait_for(
            lambda: (
                other_finished.is_set()
                or (bool(other_backend) and waits_for_a_lock(other_backend[0]))
            ),
            timeout=15,
            what="the other decision to block or finish",
        )
        return evaluate_refund_for_order(**kwargs)

    monkeypatch.setattr("refunds.services.shared.evaluate_refund_for_order", paused_policy_check)

    def decide_otherwise():
        other_backend.append(backend_pid())
        assert approving.wait(timeout=15)
        try:
            if decision == "reject":
                return refund_reject(refund=refund, reviewer=reviewer2, version=1, note="No photo.")
            if decision == "withdraw":
                return refund_withdraw(refund=refund, by=agent_user, note="Changed her mind.")
            return refund_expire_confirmations(now=v1.expires_at + timedelta(seconds=1))
        finally:
            other_finished.set()

    # When the other decision arrives while the approval is being checked
    approval, other = run_in_threads(
        2,
        lambda index: (
            decide_otherwise()
            if index
            else (
                refund_approve(
                    refund=refund, reviewer=reviewer, version=1, fingerprint=v1.fingerprint
                )
            )
        ),
    )

    # Then the approval stands, and the other decision, made after it, found nothing to decide
    assert isinstance(approval, RefundRequest), approval
    assert approval.status == "approved"
    if decision == "reject":
        assert isinstance(other, StaleConfirmation), other
        assert (other.status_code, other.extra) == (409, {"status": "approved"})
    elif decision == "withdraw":
        assert isinstance(other, NotWithdrawable), other
        assert (other.status_code, other.extra) == (409, {"status": "approved"})
    else:
        assert other == 0
    assert RefundRequest.objects.get(pk=refund.pk).status == "approved"
    assert list(RefundConfirmation.objects.values_list("version", "status", "decided_by")) == [
        (1, "approved", reviewer.pk)
    ]
    assert list(RefundEvent.objects.values_list("from_status", "to_status")) == [
        ("", "pending_approval"),
        ("pending_approval", "approved"),
    ]
    assert enqueued == [refund.pk]
    assert not TicketMessage.objects.filter(body__contains="rejected").exists()
    assert not TicketMessage.objects.filter(body__contains="withdrawn").exists()


def test_an_approval_racing_a_withdrawal_either_wins_whole_or_loses_whole(
    postgres, agent_user, reviewer, enqueued
):
    for _ in range(30):
        # Given a pending proposal
        refund = RefundProposalFactory(requested_by=agent_user)
        fingerprint = refund.confirmations.get().fingerprint

        # When its reviewer approves it while its requester withdraws it
        approval, withdrawal = run_in_threads(
            2,
            lambda index, refund=refund, fingerprint=fingerprint: (
                refund_withdraw(refund=refund, by=agent_user, note="Changed her mind.")
                if index
                else refund_approve(
                    refund=refund, reviewer=reviewer, version=1, fingerprint=fingerprint
                )
            ),
        )

        # Then exactly one of them happened, and the other was told what did
        status = RefundRequest.objects.get(pk=refund.pk).status
        confirmation = RefundConfirmation.objects.get(refund_request=refund)
        events = list(refund.events.values_list("to_status", flat=True))
        if status == "withdrawn":
            assert isinstance(approval, StaleConfirmation), approval
            assert (approval.status_code, approval.extra) == (409, {"status": "withdrawn"})
            assert refund.pk not in enqueued
        else:
            assert isinstance(withdrawal, NotWithdrawable), withdrawal
            assert (withdrawal.status_code, withdrawal.extra) == (409, {"status": "approved"})
            assert enqueued.count(refund.pk) == 1
        assert status in ("withdrawn", "approved")
        assert confirmation.status == status
        assert events == ["pending_approval", status]


def test_an_approval_arriving_during_a_withdrawal_waits_for_it_and_finds_it_withdrawn(
    postgres, agent_user, reviewer, enqueued, monkeypatch
):
    # Given a pending proposal
    refund = RefundProposalFactory(requested_by=agent_user)
    v1 = refund.confirmations.get()
    # and a withdrawal that, once it holds its locks, pauses before voiding the version until
    # the approval is blocked on a lock
    withdrawing = threading.Event()
    approval_backend: list[int] = []
    void = withdrawal_service.confirmation_transition

    def paused_void(**kwargs):
        withdrawing.set()
        wait_for(
            lambda: bool(approval_backend) and waits_for_a_lock(approval_backend[0]),
            timeout=15,
            what="the approval to block",
        )
        return void(**kwargs)

    monkeypatch.setattr("refunds.services.withdrawal.confirmation_transition", paused_void)

    def approve():
        approval_backend.append(backend_pid())
        assert withdrawing.wait(timeout=15)
        return refund_approve(
            refund=refund, reviewer=reviewer, version=1, fingerprint=v1.fingerprint
        )

    # When the approval arrives while the withdrawal is under way
    withdrawal, approval = run_in_threads(
        2,
        lambda index: (
            approve() if index else refund_withdraw(refund=refund, by=agent_user, note="No.")
        ),
    )

    # Then the withdrawal stands, and the approval, made after it, found nothing to approve
    assert isinstance(withdrawal, RefundRequest), withdrawal
    assert isinstance(approval, StaleConfirmation), approval
    assert (approval.status_code, approval.extra) == (409, {"status": "withdrawn"})
    assert list(RefundConfirmation.objects.values_list("status", "decided_by")) == [
        ("withdrawn", agent_user.pk)
    ]
    assert list(RefundEvent.objects.values_list("to_status", flat=True)) == [
        "pending_approval",
        "withdrawn",
    ]
    assert enqueued == []
