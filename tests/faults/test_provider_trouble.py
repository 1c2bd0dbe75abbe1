"""A provider that errors, times out or is slow (DESIGN §1.8, §8).

Already covered elsewhere, not repeated here:
* simulated `timeout` → unknown → reconciled to the provider's refund, and `down` → unknown →
  failed once the call cannot land; no refund resent across redeliveries and sweeps
  (tests/refunds/test_reconciliation.py);
* Stripe 500 before acting → failed by reconciliation; a stalled answer (refund made,
  answer late) → reconciled to Stripe's refund (tests/refunds/test_stripe_adapter.py).

Here: a simulated provider slower than REFUND_PROVIDER_TIMEOUT_S end to end, a Stripe 500
after it acted, and a Stripe that acts only after we gave up *and* after a sweep looked.
"""

import time

import pytest

from refunds.models import RefundEvent, RefundRequest, SimulatedRefund
from refunds.reconciliation import refunds_reconcile
from refunds.tasks import execute_refund
from tests.refunds.test_reconciliation import later

S = RefundRequest.Status

pytestmark = pytest.mark.django_db


def transitions(refund) -> list[str]:
    return list(
        RefundEvent.objects.filter(refund_request=refund).values_list("to_status", flat=True)
    )


def test_a_simulated_provider_slower_than_the_timeout_is_reconciled_to_its_refund(
    settings, simulated_provider, make_refund
):
    # Given a provider that answers after we stopped waiting, having made the refund
    settings.REFUND_PROVIDER_TIMEOUT_S = 0.05
    settings.SIMULATED_PROVIDER_LATENCY_S = 0.2
    refund = make_refund()
    assert execute_refund(refund.pk) == "outcome_unknown"

    # When the provider is fast again and the sweep runs, now and later
    settings.SIMULATED_PROVIDER_LATENCY_S = 0
    first = refunds_reconcile()
    second = refunds_reconcile(now=later())

    # Then the request took the provider's refund, which exists once
    refund.refresh_from_db()
    ledger = SimulatedRefund.objects.get()
    assert dict(first.unknown) == {"succeeded": 1}
    assert dict(second.unknown) == {}
    assert (refund.status, refund.provider_refund_id) == (S.SUCCEEDED, ledger.provider_refund_id)
    assert ledger.idempotency_key == refund.request_id
    assert len(simulated_provider.calls("create")) == 1
    assert transitions(refund) == ["executing", "outcome_unknown", "succeeded"]


def test_a_stripe_500_after_the_refund_was_made_is_reconciled_to_that_refund(
    late_stripe, make_refund
):
    # Given Stripe makes the refund and then answers 500
    late_stripe.fail_after_work_next()
    refund = make_refund()

    assert execute_refund(refund.pk) == "outcome_unknown"
    assert RefundEvent.objects.filter(refund_request=refund).last().detail["code"] == ("APIError")

    # When the sweep runs
    report = refunds_reconcile()

    # Then it found the refund under the key instead of failing or resending
    refund.refresh_from_db()
    [made] = late_stripe.refunds.values()
    assert dict(report.unknown) == {"succeeded": 1}
    assert (refund.status, refund.provider_refund_id) == (S.SUCCEEDED, made["id"])
    assert len(late_stripe.create_requests()) == 1
    assert transitions(refund) == ["executing", "outcome_unknown", "succeeded"]


def test_a_refund_stripe_makes_after_we_gave_up_is_never_called_failed_while_it_can_land(
    settings, late_stripe, make_refund
):
    # Given Stripe acts on the refund only well after the client stopped waiting
    settings.REFUND_PROVIDER_TIMEOUT_S = 0.5
    late_stripe.land_late_next(2.0)
    refund = make_refund()

    assert execute_refund(refund.pk) == "outcome_unknown"
    assert late_stripe.refunds == {}

    # When a sweep looks before the refund exists
    early = refunds_reconcile()

    # Then the request stays unknown: "nothing there yet" is not "failed"
    refund.refresh_from_db()
    assert dict(early.unknown) == {"unresolved": 1}
    assert refund.status == S.OUTCOME_UNKNOWN

    # When the refund lands at Stripe and the next sweep looks
    deadline = time.monotonic() + 10
    while not late_stripe.refunds and time.monotonic() < deadline:
        time.sleep(0.1)
    late = refunds_reconcile()

    # Then the request carries Stripe's refund, made once, under the request's key
    refund.refresh_from_db()
    [made] = late_stripe.refunds.values()
    assert dict(late.unknown) == {"succeeded": 1}
    assert (refund.status, refund.provider_refund_id) == (S.SUCCEEDED, made["id"])
    [sent] = late_stripe.create_requests()
    assert sent.headers["idempotency-key"] == refund.request_id
    assert transitions(refund) == ["executing", "outcome_unknown", "succeeded"]
