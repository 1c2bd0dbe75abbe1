from datetime import timedelta
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone

from refunds.models import RefundConfirmation, RefundEvent, RefundRequest, SimulatedRefund
from refunds.reconciliation import APPROVED_GRACE, in_flight_window, refunds_reconcile
from refunds.tasks import execute_refund, expire_confirmations, reconcile_refunds
from tests.services import run_in_threads
from tickets.models import TicketMessage

S = RefundRequest.Status


def transitions(refund) -> list[tuple[str, str]]:
    return list(
        RefundEvent.objects.filter(refund_request=refund).values_list("from_status", "to_status")
    )


def later() -> timezone.datetime:
    """A sweep's clock once every call in flight has landed or never will."""
    return timezone.now() + in_flight_window() + timedelta(seconds=1)


def age(refund, by: timedelta) -> None:
    RefundRequest.objects.filter(pk=refund.pk).update(updated_at=timezone.now() - by)


def left_executing(refund) -> None:
    """What a worker that died around its provider call leaves behind."""
    RefundRequest.objects.filter(pk=refund.pk).update(status=S.EXECUTING)
    RefundEvent.objects.create(refund_request=refund, from_status="approved", to_status="executing")
    age(refund, in_flight_window() + timedelta(seconds=5))


def test_it_settles_a_timed_out_refund_the_provider_did_make(
    settings, simulated_provider, make_refund
):
    # Given a refund whose provider call timed out after the provider made it
    settings.SIMULATED_PROVIDER_MODE = "timeout"
    refund = make_refund()
    execute_refund(refund.pk)
    settings.SIMULATED_PROVIDER_MODE = "normal"

    # When reconciliation runs, even right away
    report = refunds_reconcile()

    # Then the request takes the provider's refund, and nothing was submitted again
    refund.refresh_from_db()
    ledger = SimulatedRefund.objects.get()
    assert refund.status == S.SUCCEEDED
    assert refund.provider_refund_id == ledger.provider_refund_id
    assert dict(report.unknown) == {"succeeded": 1}
    assert len(simulated_provider.calls("create")) == 1
    assert [c.idempotency_key for c in simulated_provider.calls("find")] == [refund.request_id]
    assert transitions(refund) == [
        ("approved", "executing"),
        ("executing", "outcome_unknown"),
        ("outcome_unknown", "succeeded"),
    ]
    assert RefundEvent.objects.filter(refund_request=refund).last().detail["source"] == (
        "reconcile"
    )
    assert TicketMessage.objects.filter(ticket=refund.ticket).last().body == (
        f"Refund {refund.request_id} of 129.00 CNY succeeded (provider id "
        f"{ledger.provider_refund_id}) (confirmed by reconciliation)."
    )


def test_it_fails_an_unknown_refund_the_provider_never_made_once_it_cannot_land(
    settings, simulated_provider, make_refund
):
    # Given a refund whose call got a 5xx: the provider recorded nothing
    settings.SIMULATED_PROVIDER_MODE = "down"
    refund = make_refund()
    execute_refund(refund.pk)
    settings.SIMULATED_PROVIDER_MODE = "normal"

    # When reconciliation runs while the call could still land, it waits
    early = refunds_reconcile()
    refund.refresh_from_db()
    assert dict(early.unknown) == {"unresolved": 1}
    assert refund.status == S.OUTCOME_UNKNOWN

    # And once it can no longer land, the provider's "no such refund" settles it
    late = refunds_reconcile(now=later())

    refund.refresh_from_db()
    assert dict(late.unknown) == {"failed": 1}
    assert refund.status == S.FAILED
    assert RefundEvent.objects.filter(refund_request=refund).last().detail == {
        "error": "the provider has no refund under this idempotency key",
        "source": "reconcile",
        "provider_called": True,
    }
    # Never resubmitted: one create call in all, no refund at the provider
    assert len(simulated_provider.calls("create")) == 1
    assert SimulatedRefund.objects.count() == 0


def test_it_leaves_an_unknown_refund_alone_while_the_provider_cannot_be_asked(
    settings, simulated_provider, make_refund
):
    settings.SIMULATED_PROVIDER_MODE = "down"
    refund = make_refund()
    execute_refund(refund.pk)

    report = refunds_reconcile(now=later())

    refund.refresh_from_db()
    assert dict(report.unknown) == {"unresolved": 1}
    assert refund.status == S.OUTCOME_UNKNOWN
    assert len(simulated_provider.calls("create")) == 1


def test_it_settles_a_stale_executing_refund_the_provider_made(simulated_provider, make_refund):
    # Given a worker that died after the provider made the refund
    refund = make_refund()
    left_executing(refund)
    SimulatedRefund.objects.create(
        provider_refund_id="sim_re_before_crash",
        idempotency_key=refund.request_id,
        payment_reference=refund.order.payment_reference,
        amount=Decimal("129.00"),
        currency="CNY",
    )

    report = refunds_reconcile()

    refund.refresh_from_db()
    assert dict(report.stale_executing) == {"succeeded": 1}
    assert refund.status == S.SUCCEEDED
    assert refund.provider_refund_id == "sim_re_before_crash"
    assert simulated_provider.calls("create") == []


def test_it_resubmits_a_stale_executing_refund_with_the_same_key(simulated_provider, make_refund):
    # Given a worker that died before its call reached the provider
    refund = make_refund()
    left_executing(refund)

    report = refunds_reconcile()

    refund.refresh_from_db()
    ledger = SimulatedRefund.objects.get()
    assert dict(report.stale_executing) == {"succeeded": 1}
    assert refund.status == S.SUCCEEDED
    assert refund.provider_refund_id == ledger.provider_refund_id
    assert [c.idempotency_key for c in simulated_provider.calls("create")] == [refund.request_id]
    assert ledger.idempotency_key == refund.request_id
    assert RefundEvent.objects.filter(refund_request=refund).last().detail["source"] == (
        "reconcile-resubmit"
    )


def test_it_resubmits_only_the_approved_parameters_of_a_row_edited_while_executing(
    simulated_provider, make_refund
):
    refund = make_refund()
    left_executing(refund)
    RefundRequest.objects.filter(pk=refund.pk).update(amount=Decimal("500.00"))
    age(refund, in_flight_window() + timedelta(seconds=5))

    report = refunds_reconcile()

    refund.refresh_from_db()
    assert dict(report.stale_executing) == {"succeeded": 1}
    assert [call.idempotency_key for call in simulated_provider.calls("create")] == [
        refund.request_id
    ]
    assert list(SimulatedRefund.objects.values_list("amount", flat=True)) == [Decimal("129.00")]
    assert (
        RefundEvent.objects.filter(refund_request=refund).last().detail["amount_mismatch"] is True
    )


def test_it_leaves_a_refund_that_is_still_executing_alone(simulated_provider, make_refund):
    refund = make_refund()
    RefundRequest.objects.filter(pk=refund.pk).update(status=S.EXECUTING)

    report = refunds_reconcile()

    refund.refresh_from_db()
    assert refund.status == S.EXECUTING
    assert simulated_provider.calls() == []
    assert dict(report.stale_executing) == {}


def test_it_executes_an_approved_refund_whose_task_never_ran(simulated_provider, make_refund):
    lost = make_refund()
    age(lost, APPROVED_GRACE + timedelta(seconds=1))
    just_approved = make_refund()

    report = refunds_reconcile()

    lost.refresh_from_db()
    just_approved.refresh_from_db()
    assert dict(report.approved) == {"succeeded": 1}
    assert lost.status == S.SUCCEEDED
    # Its own task is still on its way: the sweep leaves it to that task.
    assert just_approved.status == S.APPROVED
    assert [c.idempotency_key for c in simulated_provider.calls("create")] == [lost.request_id]


def test_it_never_sends_a_second_refund_across_timeouts_redeliveries_and_sweeps(
    settings, simulated_provider, make_refund
):
    settings.SIMULATED_PROVIDER_MODE = "timeout"
    refund = make_refund()

    execute_refund(refund.pk)
    execute_refund(refund.pk)
    settings.SIMULATED_PROVIDER_MODE = "normal"
    refunds_reconcile(now=later())
    refunds_reconcile(now=later())
    execute_refund(refund.pk)

    refund.refresh_from_db()
    assert refund.status == S.SUCCEEDED
    assert len(simulated_provider.calls("create")) == 1
    assert SimulatedRefund.objects.filter(idempotency_key=refund.request_id).count() == 1
    assert [to for _, to in transitions(refund)] == ["executing", "outcome_unknown", "succeeded"]


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_it_settles_each_request_once_when_sweeps_race(
    postgres, settings, simulated_provider, make_refund
):
    # Given a slow provider and one request of each kind the sweep settles
    settings.SIMULATED_PROVIDER_LATENCY_S = 0.2
    settings.SIMULATED_PROVIDER_MODE = "timeout"
    unknown = make_refund()
    execute_refund(unknown.pk)
    settings.SIMULATED_PROVIDER_MODE = "normal"
    stale = make_refund()
    left_executing(stale)
    lost = make_refund()
    age(lost, APPROVED_GRACE + timedelta(seconds=1))
    simulated_provider.reset()
    sweeps = 4
    now = later()

    # When four sweeps run at the same moment
    reports = run_in_threads(sweeps, lambda _: refunds_reconcile(now=now))

    # Then no sweep crashed,
    assert not [report for report in reports if isinstance(report, Exception)]
    # and every request is settled exactly once, with one refund each at the provider
    for refund in (unknown, stale, lost):
        refund.refresh_from_db()
        assert refund.status == S.SUCCEEDED
        assert RefundEvent.objects.filter(refund_request=refund, to_status="succeeded").count() == 1
        assert SimulatedRefund.objects.filter(idempotency_key=refund.request_id).count() == 1
    creates = sorted(c.idempotency_key for c in simulated_provider.calls("create"))
    assert creates == sorted([stale.request_id, lost.request_id])


def test_the_command_reports_what_it_settled(settings, simulated_provider, make_refund):
    settings.SIMULATED_PROVIDER_MODE = "timeout"
    unknown = make_refund()
    execute_refund(unknown.pk)
    settings.SIMULATED_PROVIDER_MODE = "normal"
    stale = make_refund()
    left_executing(stale)
    out = StringIO()

    call_command("reconcile_refunds", stdout=out)

    assert out.getvalue() == (
        "Reconciled refunds. outcome_unknown: 1 succeeded; provider_pending: none; "
        "stale executing: 1 succeeded; "
        "approved, never executed: none.\n"
    )
    assert RefundRequest.objects.filter(status=S.SUCCEEDED).count() == 2


def test_the_periodic_task_reconciles(settings, simulated_provider, make_refund):
    settings.SIMULATED_PROVIDER_MODE = "timeout"
    refund = make_refund()
    execute_refund(refund.pk)
    settings.SIMULATED_PROVIDER_MODE = "normal"

    summary = reconcile_refunds()

    refund.refresh_from_db()
    assert refund.status == S.SUCCEEDED
    assert summary == (
        "outcome_unknown: 1 succeeded; provider_pending: none; "
        "stale executing: none; "
        "approved, never executed: none"
    )


def test_expire_confirmations_expires_lapsed_pending_versions(simulated_provider, make_refund):
    lapsed = make_refund(status=S.PENDING_APPROVAL)
    lapsed.confirmations.update(expires_at=timezone.now() - timedelta(minutes=1))
    current = make_refund(status=S.PENDING_APPROVAL)
    out = StringIO()

    call_command("expire_confirmations", stdout=out)

    lapsed.refresh_from_db()
    current.refresh_from_db()
    assert out.getvalue() == "Expired 1 pending refund confirmation(s).\n"
    assert lapsed.status == S.EXPIRED
    assert lapsed.confirmations.get().status == RefundConfirmation.Status.EXPIRED
    assert current.status == S.PENDING_APPROVAL
    assert expire_confirmations() == 0
    assert simulated_provider.calls() == []
