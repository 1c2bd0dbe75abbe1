from decimal import Decimal

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import IntegrityError

from refunds.adapters import (
    ProviderRefund,
    ProviderUnknownOutcome,
    SimulatedAdapter,
    StripeAdapter,
    get_adapter,
)
from refunds.models import SimulatedRefund
from tests.services import run_in_threads


def create(adapter, key="rf_key_1", amount="129.00", reference="pi_1"):
    return adapter.create_refund(
        idempotency_key=key,
        amount=Decimal(amount),
        currency="CNY",
        payment_reference=reference,
        metadata={"request_id": key},
    )


def test_it_picks_the_adapter_named_in_settings(settings):
    settings.REFUND_ADAPTER = "simulated"
    assert isinstance(get_adapter(), SimulatedAdapter)

    settings.REFUND_ADAPTER = "stripe"
    settings.STRIPE_API_KEY = "sk_test_x"
    assert isinstance(get_adapter(), StripeAdapter)

    settings.REFUND_ADAPTER = "paypal"
    with pytest.raises(ImproperlyConfigured):
        get_adapter()


def test_it_rejects_an_unknown_simulated_mode(settings, simulated_provider):
    settings.SIMULATED_PROVIDER_MODE = "flaky"

    with pytest.raises(ImproperlyConfigured):
        get_adapter()


def test_the_simulated_provider_replays_a_key(db, simulated_provider):
    adapter = get_adapter()

    first = create(adapter)
    replay = create(adapter)

    row = SimulatedRefund.objects.get()
    assert (
        replay
        == first
        == ProviderRefund(
            id=row.provider_refund_id, status="succeeded", amount=Decimal("129.00"), currency="CNY"
        )
    )
    assert len(simulated_provider.calls("create")) == 2


def test_the_simulated_provider_refuses_a_key_reused_with_other_parameters(db, simulated_provider):
    adapter = get_adapter()
    create(adapter)

    with pytest.raises(ProviderUnknownOutcome) as raised:
        create(adapter, amount="5.00")

    assert raised.value.code == "idempotency_error"
    assert list(SimulatedRefund.objects.values_list("amount", flat=True)) == [Decimal("129.00")]


def test_the_simulated_provider_finds_by_key(db, simulated_provider):
    adapter = get_adapter()
    made = create(adapter)

    assert adapter.find_refund(idempotency_key="rf_key_1", payment_reference="pi_1") == made
    assert adapter.find_refund(idempotency_key="rf_key_2", payment_reference="pi_1") is None


def test_the_simulated_provider_cannot_be_asked_while_down(db, settings, simulated_provider):
    settings.SIMULATED_PROVIDER_MODE = "down"

    with pytest.raises(ProviderUnknownOutcome):
        get_adapter().find_refund(idempotency_key="rf_key_1", payment_reference="pi_1")


def test_the_ledger_holds_one_refund_per_key(db):
    SimulatedRefund.objects.create(
        provider_refund_id="sim_re_1",
        idempotency_key="rf_1",
        payment_reference="pi_1",
        amount=Decimal("1.00"),
        currency="CNY",
    )

    with pytest.raises(IntegrityError):
        SimulatedRefund.objects.create(
            provider_refund_id="sim_re_2",
            idempotency_key="rf_1",
            payment_reference="pi_1",
            amount=Decimal("1.00"),
            currency="CNY",
        )


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_the_simulated_provider_makes_one_refund_for_racing_calls_with_one_key(
    postgres, simulated_provider
):
    callers = 6
    results = run_in_threads(callers, lambda _: create(get_adapter()))

    row = SimulatedRefund.objects.get()
    assert {result.id for result in results} == {row.provider_refund_id}
    assert len(results) == callers
