import threading
from decimal import Decimal

import pytest
from django.db import connection, connections

from refunds import execution
from refunds.adapters import SimulatedAdapter
from refunds.models import RefundEvent, RefundRequest, SimulatedRefund
from refunds.tasks import execute_refund
from tests.factories import OrderFactory
from tests.services import run_in_threads
from tickets.models import TicketMessage

S = RefundRequest.Status


def transitions(refund) -> list[tuple[str, str]]:
    return list(
        RefundEvent.objects.filter(refund_request=refund).values_list("from_status", "to_status")
    )


def system_messages(refund) -> list[str]:
    return list(
        TicketMessage.objects.filter(ticket=refund.ticket, author_kind="system").values_list(
            "body", flat=True
        )
    )


def test_it_refunds_an_approved_request_at_the_provider(simulated_provider, make_refund):
    refund = make_refund()

    outcome = execute_refund(refund.pk)

    refund.refresh_from_db()
    ledger = SimulatedRefund.objects.get()
    assert outcome == "succeeded"
    assert refund.status == S.SUCCEEDED
    assert refund.provider_refund_id == ledger.provider_refund_id
    assert (
        ledger.idempotency_key,
        ledger.amount,
        ledger.currency,
        ledger.payment_reference,
        ledger.metadata,
    ) == (
        refund.request_id,
        Decimal("129.00"),
        "CNY",
        refund.order.payment_reference,
        {"request_id": refund.request_id},
    )
    assert [c.idempotency_key for c in simulated_provider.calls("create")] == [refund.request_id]
    assert transitions(refund) == [("approved", "executing"), ("executing", "succeeded")]
    executing, succeeded = RefundEvent.objects.filter(refund_request=refund)
    assert executing.detail == {
        "idempotency_key": refund.request_id,
        "confirmation_version": 1,
        "fingerprint": refund.confirmations.get().fingerprint,
        "adapter": "simulated",
    }
    assert succeeded.detail == {
        "provider_refund_id": ledger.provider_refund_id,
        "provider_status": "succeeded",
        "provider_amount": "129.00",
        "provider_currency": "CNY",
        "source": "execute",
    }
    label = f"Refund {refund.request_id} of 129.00 CNY"
    assert system_messages(refund) == [
        f"{label} succeeded (provider id {ledger.provider_refund_id}).",
    ]


@pytest.mark.parametrize("status", [S.PENDING_APPROVAL, S.REJECTED, S.EXPIRED])
def test_it_does_not_call_the_provider_for_a_request_that_is_not_approved(
    simulated_provider, make_refund, status
):
    refund = make_refund(status=status)

    outcome = execute_refund(refund.pk)

    refund.refresh_from_db()
    assert outcome is None
    assert refund.status == status
    assert simulated_provider.calls() == []
    assert SimulatedRefund.objects.count() == 0
    assert transitions(refund) == []
    assert system_messages(refund) == []


def test_it_refuses_a_request_whose_amount_changed_after_approval(simulated_provider, make_refund):
    refund = make_refund()
    approved_fingerprint = refund.confirmations.get().fingerprint
    RefundRequest.objects.filter(pk=refund.pk).update(amount=Decimal("999.00"))

    outcome = execute_refund(refund.pk)

    refund.refresh_from_db()
    assert outcome == "failed"
    assert refund.status == S.FAILED
    assert refund.provider_refund_id == ""
    assert simulated_provider.calls() == []
    assert SimulatedRefund.objects.count() == 0
    assert transitions(refund) == [("approved", "executing"), ("executing", "failed")]
    failed = RefundEvent.objects.filter(refund_request=refund).last()
    assert failed.detail["error"] == "fingerprint mismatch"
    assert failed.detail["provider_called"] is False
    assert failed.detail["approved_fingerprint"] == approved_fingerprint
    assert failed.detail["current_fingerprint"] != approved_fingerprint
    assert system_messages(refund)[-1] == (
        f"Refund {refund.request_id} of 999.00 CNY was not sent to the provider: "
        "fingerprint mismatch (its approval no longer covers it)."
    )


def test_it_refuses_a_request_whose_payment_reference_changed_after_approval(
    simulated_provider, make_refund
):
    refund = make_refund()
    type(refund.order).objects.filter(pk=refund.order_id).update(payment_reference="pi_evil")

    assert execute_refund(refund.pk) == "failed"

    assert simulated_provider.calls() == []
    assert RefundEvent.objects.filter(refund_request=refund).last().detail["error"] == (
        "fingerprint mismatch"
    )


def test_it_refuses_an_approved_request_without_an_approved_confirmation(
    simulated_provider, make_refund
):
    refund = make_refund()
    refund.confirmations.update(status="superseded")

    assert execute_refund(refund.pk) == "failed"

    assert simulated_provider.calls() == []
    assert RefundEvent.objects.filter(refund_request=refund).last().detail["error"] == (
        "no approved confirmation for the current version"
    )


def test_it_leaves_the_outcome_unknown_when_the_provider_times_out(
    settings, simulated_provider, make_refund
):
    settings.SIMULATED_PROVIDER_MODE = "timeout"
    refund = make_refund()

    outcome = execute_refund(refund.pk)

    refund.refresh_from_db()
    assert outcome == "outcome_unknown"
    assert refund.status == S.OUTCOME_UNKNOWN
    assert refund.provider_refund_id == ""
    # The realistic case: the provider did it, we did not hear back.
    assert SimulatedRefund.objects.filter(idempotency_key=refund.request_id).count() == 1
    assert transitions(refund) == [("approved", "executing"), ("executing", "outcome_unknown")]
    assert RefundEvent.objects.filter(refund_request=refund).last().detail["code"] == "timeout"
    assert system_messages(refund)[-1] == (
        f"Refund {refund.request_id} of 129.00 CNY: outcome unknown (simulated provider did "
        "not answer in time), reconciling with the provider."
    )


def test_it_treats_latency_beyond_the_provider_timeout_as_unknown(
    settings, simulated_provider, make_refund
):
    settings.REFUND_PROVIDER_TIMEOUT_S = 0.05
    settings.SIMULATED_PROVIDER_LATENCY_S = 0.2
    refund = make_refund()

    assert execute_refund(refund.pk) == "outcome_unknown"

    assert SimulatedRefund.objects.filter(idempotency_key=refund.request_id).count() == 1


def test_it_leaves_the_outcome_unknown_when_the_provider_is_down(
    settings, simulated_provider, make_refund
):
    settings.SIMULATED_PROVIDER_MODE = "down"
    refund = make_refund()

    assert execute_refund(refund.pk) == "outcome_unknown"

    refund.refresh_from_db()
    assert refund.status == S.OUTCOME_UNKNOWN
    assert SimulatedRefund.objects.count() == 0
    assert len(simulated_provider.calls("create")) == 1


def test_it_fails_a_refund_the_provider_declines(settings, simulated_provider, make_refund):
    settings.SIMULATED_PROVIDER_MODE = "fail"
    refund = make_refund()

    assert execute_refund(refund.pk) == "failed"

    refund.refresh_from_db()
    assert refund.status == S.FAILED
    assert SimulatedRefund.objects.count() == 0
    failed = RefundEvent.objects.filter(refund_request=refund).last()
    assert failed.detail == {
        "error": "simulated provider declined the refund",
        "code": "refund_declined",
        "source": "execute",
        "provider_called": True,
    }
    assert system_messages(refund)[-1] == (
        f"Refund {refund.request_id} of 129.00 CNY failed: simulated provider declined the refund."
    )


@pytest.mark.parametrize("mode", ["normal", "timeout", "down", "fail"])
def test_it_does_nothing_when_the_task_is_delivered_again(
    settings, simulated_provider, make_refund, mode
):
    settings.SIMULATED_PROVIDER_MODE = mode
    refund = make_refund()
    execute_refund(refund.pk)
    settings.SIMULATED_PROVIDER_MODE = "normal"
    events_before = transitions(refund)
    messages_before = system_messages(refund)

    outcome = execute_refund(refund.pk)

    assert outcome is None
    assert len(simulated_provider.calls("create")) == 1
    assert transitions(refund) == events_before
    assert system_messages(refund) == messages_before


def test_it_executes_a_refund_without_a_ticket_and_posts_no_message(
    simulated_provider, make_refund
):
    refund = make_refund(ticket=None, order=OrderFactory())

    assert execute_refund(refund.pk) == "succeeded"

    assert TicketMessage.objects.count() == 0


@pytest.mark.django_db(transaction=True)
def test_it_commits_executing_before_calling_the_provider(
    simulated_provider, make_refund, monkeypatch
):
    refund = make_refund()
    seen_by_others = []

    class ObservingAdapter(SimulatedAdapter):
        def create_refund(self, **kwargs):
            # Another connection sees only what is committed.
            def look():
                seen_by_others.append(RefundRequest.objects.get(pk=refund.pk).status)
                connections.close_all()

            reader = threading.Thread(target=look)
            reader.start()
            reader.join()
            return super().create_refund(**kwargs)

    monkeypatch.setattr(execution, "get_adapter", ObservingAdapter)

    assert execute_refund(refund.pk) == "succeeded"

    assert seen_by_others == ["executing"]
    assert not connection.in_atomic_block


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_it_sends_one_refund_when_deliveries_race(
    postgres, settings, simulated_provider, make_refund
):
    # Given a slow provider, so that racing workers overlap around the call
    settings.SIMULATED_PROVIDER_LATENCY_S = 0.3
    refund = make_refund()
    workers = 6

    # When the same task is delivered to six workers at once
    outcomes = run_in_threads(workers, lambda _: execute_refund(refund.pk))

    # Then exactly one reached the provider and the others did nothing
    refund.refresh_from_db()
    assert sorted(outcomes, key=str) == [None] * (workers - 1) + ["succeeded"]
    assert len(simulated_provider.calls("create")) == 1
    assert SimulatedRefund.objects.filter(idempotency_key=refund.request_id).count() == 1
    assert refund.status == S.SUCCEEDED
    assert transitions(refund) == [("approved", "executing"), ("executing", "succeeded")]
