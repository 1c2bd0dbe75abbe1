from decimal import Decimal

import pytest

from refunds.adapters import (
    ProviderTerminalError,
    ProviderUnknownOutcome,
    StripeAdapter,
    get_adapter,
)
from refunds.models import RefundEvent, RefundRequest
from refunds.reconciliation import refunds_reconcile
from refunds.tasks import execute_refund
from tests.factories import OrderFactory, TicketFactory
from tests.refunds.test_reconciliation import later, left_executing

S = RefundRequest.Status


def create(adapter, key="rf_key_1", amount="129.00", intent="pi_1", currency="CNY"):
    return adapter.create_refund(
        idempotency_key=key,
        amount=Decimal(amount),
        currency=currency,
        payment_reference=intent,
        metadata={"request_id": key},
    )


def test_it_executes_a_refund_through_the_stripe_sdk(stripe_server, make_refund):
    refund = make_refund()

    assert execute_refund(refund.pk) == "succeeded"

    refund.refresh_from_db()
    [stored] = stripe_server.refunds.values()
    [sent] = stripe_server.create_requests()
    assert refund.provider_refund_id == stored["id"]
    assert refund.provider_refund_id.startswith("re_")
    assert sent.params == {
        "payment_intent": refund.order.payment_reference,
        "amount": "12900",
        "currency": "cny",
        "metadata[request_id]": refund.request_id,
    }
    assert sent.headers["idempotency-key"] == refund.request_id
    assert sent.headers["authorization"] == f"Bearer {stripe_server.api_key}"
    assert RefundEvent.objects.filter(refund_request=refund).last().detail == {
        "provider_refund_id": stored["id"],
        "provider_status": "succeeded",
        "provider_amount": "129.00",
        "provider_currency": "CNY",
        "source": "execute",
    }


def test_it_refunds_129_yen_as_129_yen_and_not_the_whole_charge(stripe_server, make_refund):
    # Given a charge of 12900 JPY and an approved refund of 129 JPY on it
    order = OrderFactory(currency="JPY", amount_paid=Decimal("12900.00"))
    stripe_server.captured[order.payment_reference] = 12900
    refund = make_refund(
        ticket=TicketFactory(order=order), amount=Decimal("129.00"), currency="JPY"
    )

    # When it is executed
    assert execute_refund(refund.pk) == "succeeded"

    # Then Stripe was asked for 129 yen (JPY has no minor unit) and refunded exactly that
    [sent] = stripe_server.create_requests()
    [stored] = stripe_server.refunds.values()
    assert (sent.params["amount"], sent.params.get("currency")) == ("129", "jpy")
    assert (stored["amount"], stored["currency"]) == (129, "jpy")
    detail = RefundEvent.objects.filter(refund_request=refund).last().detail
    assert (detail["provider_amount"], detail["provider_currency"]) == ("129.00", "JPY")
    assert "amount_mismatch" not in detail


def test_reconciliation_flags_a_refund_stripe_holds_in_other_units_than_the_request(
    stripe_server, make_refund
):
    # Given a 129 JPY request whose outcome is unknown, and Stripe holding a refund of the
    # whole 12900 JPY charge under its key (what a sender multiplying every amount by 100 left)
    order = OrderFactory(currency="JPY", amount_paid=Decimal("12900.00"))
    refund = make_refund(
        ticket=TicketFactory(order=order), amount=Decimal("129.00"), currency="JPY"
    )
    stripe_server.fail_next(status=500)
    assert execute_refund(refund.pk) == "outcome_unknown"
    stripe_server.refunds["re_whole_charge"] = {
        "id": "re_whole_charge",
        "object": "refund",
        "amount": 12900,
        "currency": "jpy",
        "status": "succeeded",
        "payment_intent": order.payment_reference,
        "metadata": {"request_id": refund.request_id},
        "created": 0,
        "reason": None,
    }

    # When reconciliation asks Stripe
    refunds_reconcile(now=later())

    # Then the desk records what Stripe holds, 12900 yen, and flags it, not "129.00 succeeded"
    refund.refresh_from_db()
    detail = RefundEvent.objects.filter(refund_request=refund).last().detail
    assert refund.status == S.SUCCEEDED
    assert (detail["provider_amount"], detail["provider_currency"]) == ("12900.00", "JPY")
    assert detail["amount_mismatch"] is True


@pytest.mark.parametrize(
    ("currency", "amount", "minor_units"),
    [
        ("JPY", "129.00", 129),  # no minor unit
        ("KRW", "5000.00", 5000),
        ("CNY", "129.00", 12900),  # 2 decimals
        ("EUR", "0.01", 1),
        ("KWD", "12.34", 12340),  # 3 decimals: fils
        ("BHD", "0.05", 50),
    ],
)
def test_it_sends_and_reads_back_amounts_in_the_currencys_minor_units(
    stripe_server, currency, amount, minor_units
):
    adapter = get_adapter()

    made = create(adapter, amount=amount, currency=currency)

    [sent] = stripe_server.create_requests()
    [stored] = stripe_server.refunds.values()
    assert (sent.params["amount"], sent.params.get("currency")) == (
        str(minor_units),
        currency.lower(),
    )
    assert (stored["amount"], stored["currency"]) == (minor_units, currency.lower())
    assert (made.amount, made.currency) == (Decimal(amount), currency)
    found = adapter.find_refund(idempotency_key="rf_key_1", payment_reference="pi_1")
    assert found == made


def test_it_gets_the_first_refund_back_when_it_replays_a_key(stripe_server):
    adapter = get_adapter()

    first = create(adapter)
    replay = create(adapter)

    assert replay == first
    assert len(stripe_server.create_requests()) == 2
    assert len(stripe_server.refunds) == 1


def test_it_calls_a_key_reused_with_other_parameters_an_unknown_outcome(stripe_server):
    adapter = get_adapter()
    create(adapter)

    with pytest.raises(ProviderUnknownOutcome) as raised:
        create(adapter, amount="5.00")

    assert raised.value.code == "IdempotencyError"
    assert "HTTP 400" in raised.value.message
    assert len(stripe_server.refunds) == 1


def test_it_treats_a_decline_as_terminal(stripe_server):
    stripe_server.decline_next()

    with pytest.raises(ProviderTerminalError) as raised:
        create(get_adapter())

    assert raised.value.code == "card_declined"
    assert stripe_server.refunds == {}


def test_it_treats_an_invalid_request_as_terminal(stripe_server):
    with pytest.raises(ProviderTerminalError) as raised:
        create(get_adapter(), amount="20000.00")

    assert raised.value.code == "amount_too_large"


@pytest.mark.parametrize("status", [500, 503, 429, 409])
def test_it_treats_server_errors_and_rate_limits_as_unknown(stripe_server, status):
    stripe_server.fail_next(status=status)

    with pytest.raises(ProviderUnknownOutcome):
        create(get_adapter())

    # The SDK did not retry on its own: we reconcile instead.
    assert len(stripe_server.create_requests()) == 1


def test_it_finds_a_refund_by_its_request_id_metadata(stripe_server):
    adapter = get_adapter()
    create(adapter, key="rf_other")
    made = create(adapter, key="rf_wanted")

    assert adapter.find_refund(idempotency_key="rf_wanted", payment_reference="pi_1") == made
    assert adapter.find_refund(idempotency_key="rf_absent", payment_reference="pi_1") is None


def test_a_failed_lookup_is_never_taken_for_no_refund(stripe_server):
    stripe_server.fail_next(status=401)

    with pytest.raises(ProviderUnknownOutcome):
        get_adapter().find_refund(idempotency_key="rf_key_1", payment_reference="pi_1")


@pytest.mark.parametrize(
    ("currency", "amount"), [("JPY", "12.50"), ("KRW", "0.10"), ("CNY", "1.005"), ("KWD", "1.0005")]
)
def test_it_refuses_an_amount_the_currency_cannot_express_without_calling_stripe(
    stripe_server, currency, amount
):
    with pytest.raises(ProviderTerminalError) as raised:
        create(get_adapter(), amount=amount, currency=currency)

    assert raised.value.code == "amount_not_expressible"
    assert raised.value.message == f"{amount} {currency} is not a whole number of its minor unit"
    assert stripe_server.requests == []


def test_a_500_leaves_the_outcome_unknown_and_reconciliation_settles_it(stripe_server, make_refund):
    # Given Stripe answers the refund with a 500 before doing anything
    refund = make_refund()
    stripe_server.fail_next(status=500)

    assert execute_refund(refund.pk) == "outcome_unknown"

    # When reconciliation runs after the call can no longer land
    refunds_reconcile(now=later())

    # Then Stripe was asked, had nothing, and the request failed without a second refund
    refund.refresh_from_db()
    assert refund.status == S.FAILED
    assert len(stripe_server.create_requests()) == 1
    lookups = [r for r in stripe_server.requests if r.method == "GET"]
    assert [r.params["payment_intent"] for r in lookups] == [refund.order.payment_reference]
    assert stripe_server.refunds == {}


def test_a_timeout_leaves_the_outcome_unknown_and_reconciliation_finds_the_refund(
    settings, stripe_server, make_refund
):
    # Given Stripe makes the refund but answers after the client gave up
    settings.REFUND_PROVIDER_TIMEOUT_S = 0.5
    stripe_server.stall_next(seconds=1.5)
    refund = make_refund()

    assert execute_refund(refund.pk) == "outcome_unknown"
    assert RefundEvent.objects.filter(refund_request=refund).last().detail["code"] == (
        "APIConnectionError"
    )

    # When reconciliation runs
    refunds_reconcile()

    # Then the request carries Stripe's refund, which was created exactly once
    refund.refresh_from_db()
    [stored] = stripe_server.refunds.values()
    assert refund.status == S.SUCCEEDED
    assert refund.provider_refund_id == stored["id"]
    assert len(stripe_server.create_requests()) == 1


def test_a_stale_execution_is_resubmitted_to_stripe_under_the_same_key(stripe_server, make_refund):
    refund = make_refund()
    left_executing(refund)

    refunds_reconcile()

    refund.refresh_from_db()
    [sent] = stripe_server.create_requests()
    assert refund.status == S.SUCCEEDED
    assert sent.headers["idempotency-key"] == refund.request_id
    assert refund.provider_refund_id == next(iter(stripe_server.refunds))


def test_it_needs_an_api_key():
    with pytest.raises(Exception, match="STRIPE_API_KEY"):
        StripeAdapter(api_key="", api_base="", timeout=1)
