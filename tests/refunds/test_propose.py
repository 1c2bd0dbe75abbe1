import json
from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from agent.context import RunContext
from agent.errors import ToolError
from agent.tools.refund import create_refund
from config.errors import ApplicationError
from refunds.errors import AmountNotExpressible
from refunds.identity import derive_request_id, fingerprint, fingerprint_params
from refunds.models import RefundConfirmation, RefundEvent, RefundRequest
from refunds.services import (
    refund_approve,
    refund_expire_confirmations,
    refund_propose,
    refund_reject,
)
from tests.factories import AgentRunFactory, OrderFactory, TicketFactory, publish_role_limits
from tickets.models import TicketMessage

pytestmark = pytest.mark.django_db

CNY_LIMITS = {"intern": "0.00", "agent": "500.00", "supervisor": "5000.00"}


@pytest.fixture
def ticket(db):
    return TicketFactory(reference="TCK-7001", order__order_id="202610110087")


@pytest.fixture
def ctx(ticket, agent_user):
    run = AgentRunFactory(ticket=ticket, started_by=agent_user, actor_role="agent")
    return RunContext(
        run=run, actor=agent_user, role="agent", ticket=ticket, customer=ticket.customer
    )


def args(**overrides) -> dict:
    return {
        "order_id": "202610110087",
        "amount": Decimal("129.00"),
        "reason": "damaged",
        "explanation": "The mug arrived in pieces.",
        **overrides,
    }


def test_it_proposes_a_refund_and_executes_nothing(
    ctx, ticket, agent_user, django_capture_on_commit_callbacks
):
    before = timezone.now()

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        result = create_refund(ctx, args())

    assert callbacks == []
    refund = RefundRequest.objects.get()
    expected_id = derive_request_id(ticket_reference="TCK-7001", order_id="202610110087", n=0)
    assert refund.request_id == expected_id
    assert (refund.status, refund.amount, refund.currency) == (
        "pending_approval",
        Decimal("129.00"),
        "CNY",
    )
    assert (refund.requested_by, refund.run, refund.ticket) == (agent_user, ctx.run, ticket)
    assert refund.policy_version is not None
    assert [v["clause"] for v in refund.policy_evaluation] == [
        "R-1",
        "R-2",
        "R-3",
        "R-4",
        "R-5",
        "R-6",
    ]
    confirmation = refund.confirmations.get()
    assert (confirmation.version, confirmation.status) == (1, "pending")
    assert confirmation.params == fingerprint_params(refund)
    assert confirmation.fingerprint == fingerprint(fingerprint_params(refund))
    ttl = timedelta(minutes=1440)
    assert before + ttl <= confirmation.expires_at <= timezone.now() + ttl
    assert list(refund.events.values_list("from_status", "to_status", "actor")) == [
        ("", "pending_approval", agent_user.pk)
    ]
    assert result == {
        "status": "pending_approval",
        "request_id": expected_id,
        "version": 1,
        "amount": "129.00",
        "currency": "CNY",
        "policy": refund.policy_evaluation,
        "expires_at": confirmation.expires_at.isoformat(),
        "message": "Proposed a refund of 129.00 CNY (version 1) — waiting for a reviewer. "
        "Not refunded yet.",
    }
    assert "fingerprint" not in result
    message = TicketMessage.objects.get(ticket=ticket)
    assert message.author_kind == "system"
    assert message.body == (
        f"Refund {refund.request_id} of 129.00 CNY proposed for order 202610110087 (damaged), "
        "waiting for review."
    )


def test_it_returns_the_same_version_for_identical_parameters(ctx):
    first = create_refund(ctx, args())
    confirmation = RefundConfirmation.objects.get()

    again = create_refund(ctx, args())

    assert again["request_id"] == first["request_id"]
    assert again["version"] == 1
    assert "already proposed" in again["message"]
    assert RefundRequest.objects.count() == 1
    assert RefundEvent.objects.count() == 1
    assert list(RefundConfirmation.objects.values_list("pk", "status", "fingerprint")) == [
        (confirmation.pk, "pending", confirmation.fingerprint)
    ]
    assert TicketMessage.objects.count() == 1


def test_it_makes_a_new_version_when_the_amount_changes(ctx):
    create_refund(ctx, args())
    v1 = RefundConfirmation.objects.get()

    result = create_refund(ctx, args(amount=Decimal("100.00")))

    assert result["version"] == 2 and result["amount"] == "100.00"
    refund = RefundRequest.objects.get()
    assert refund.amount == Decimal("100.00")
    assert refund.status == "pending_approval"
    v1.refresh_from_db()
    v2 = refund.confirmations.get(version=2)
    assert (v1.status, v2.status) == ("superseded", "pending")
    assert v2.fingerprint != v1.fingerprint
    assert v2.fingerprint == fingerprint(fingerprint_params(refund))
    assert v2.params["amount"] == "100.00"
    # A new version is not a transition of the request: still its one creation event.
    assert RefundEvent.objects.count() == 1
    assert TicketMessage.objects.last().body == (
        f"Refund {refund.request_id} of 100.00 CNY proposed for order 202610110087 (damaged) "
        "as version 2, waiting for review."
    )


def test_it_makes_a_new_version_when_the_explanation_changes(ctx):
    create_refund(ctx, args())

    result = create_refund(ctx, args(explanation="Photo shows the handle broke off."))

    assert result["version"] == 2
    refund = RefundRequest.objects.get()
    assert refund.explanation == "Photo shows the handle broke off."
    assert list(refund.confirmations.values_list("version", "status")) == [
        (1, "superseded"),
        (2, "pending"),
    ]


def test_it_answers_not_found_for_another_customers_order_as_for_a_missing_one(ctx):
    OrderFactory(order_id="202699990001")  # another customer's

    with pytest.raises(ToolError) as foreign:
        create_refund(ctx, args(order_id="202699990001"))
    with pytest.raises(ToolError) as missing:
        create_refund(ctx, args(order_id="202699990002"))

    assert foreign.value.code == missing.value.code == "NOT_FOUND"
    assert foreign.value.message.replace("202699990001", "X") == missing.value.message.replace(
        "202699990002", "X"
    )
    assert RefundRequest.objects.count() == 0


def test_it_refuses_an_amount_over_the_role_limit_and_suggests_a_supervisor(ticket, ctx):
    ticket.order.amount_paid = Decimal("899.00")
    ticket.order.save()

    with pytest.raises(ToolError) as refusal:
        create_refund(ctx, args(amount=Decimal("899.00")))

    error = refusal.value.as_result()["error"]
    assert error["code"] == "AMOUNT_OVER_ROLE_LIMIT"
    assert "R-5" in error["message"] and "supervisor" in error["message"]
    assert error["next_actions"] == ["escalate_to_supervisor", "propose_smaller_amount"]
    assert error["clauses"] == ["R-5"]
    assert RefundRequest.objects.count() == 0
    assert RefundConfirmation.objects.count() == 0


def test_it_refuses_what_the_policy_denies_naming_the_clauses(ctx):
    with pytest.raises(ToolError) as refusal:
        create_refund(ctx, args(reason="not_received"))

    error = refusal.value.as_result()["error"]
    assert error["code"] == "POLICY_DENIED"
    assert error["clauses"] == ["R-4"]
    assert (
        "R-4: reason 'not_received' does not fit an order that was delivered" in (error["message"])
    )
    assert RefundRequest.objects.count() == 0


def test_a_changed_amount_the_policy_denies_changes_nothing(ctx):
    create_refund(ctx, args())

    with pytest.raises(ToolError) as refusal:
        create_refund(ctx, args(amount=Decimal("130.00")))

    assert refusal.value.code == "POLICY_DENIED"
    refund = RefundRequest.objects.get()
    assert refund.amount == Decimal("129.00")
    assert list(refund.confirmations.values_list("version", "status")) == [(1, "pending")]


def test_the_model_cannot_approve_calling_again_after_approval_is_refused(ctx, reviewer):
    create_refund(ctx, args())
    refund = RefundRequest.objects.get()
    v1 = refund.confirmations.get()
    refund_approve(refund=refund, reviewer=reviewer, version=1, fingerprint=v1.fingerprint)
    approved = RefundConfirmation.objects.values().get()

    with pytest.raises(ToolError) as refusal:
        create_refund(ctx, args(amount=Decimal("100.00")))

    assert refusal.value.code == "REFUND_ALREADY_DECIDED"
    assert refusal.value.extra == {"request_id": refund.request_id, "status": "approved"}
    assert RefundConfirmation.objects.values().get() == approved
    refund.refresh_from_db()
    assert (refund.status, refund.amount) == ("approved", Decimal("129.00"))


def test_a_rejected_intent_stays_rejected_and_a_new_proposal_is_the_next_intent(ctx, reviewer):
    create_refund(ctx, args())
    rejected = RefundRequest.objects.get()
    refund_reject(refund=rejected, reviewer=reviewer, version=1, note="No photo.")

    result = create_refund(ctx, args())

    assert result["request_id"] == derive_request_id(
        ticket_reference="TCK-7001", order_id="202610110087", n=1
    )
    assert (result["status"], result["version"]) == ("pending_approval", 1)
    rejected.refresh_from_db()
    assert rejected.status == "rejected"
    assert list(rejected.confirmations.values_list("version", "status")) == [(1, "rejected")]


def test_an_expired_intent_is_renewed_as_the_next_version(ctx, agent_user):
    create_refund(ctx, args())
    refund = RefundRequest.objects.get()
    assert refund_expire_confirmations(now=timezone.now() + timedelta(days=2)) == 1
    refund.refresh_from_db()
    assert refund.status == "expired"

    result = create_refund(ctx, args())

    assert result["version"] == 2 and "lapsed" in result["message"]
    refund.refresh_from_db()
    assert refund.status == "pending_approval"
    assert list(refund.confirmations.values_list("version", "status")) == [
        (1, "expired"),
        (2, "pending"),
    ]
    assert list(refund.events.values_list("from_status", "to_status")) == [
        ("", "pending_approval"),
        ("pending_approval", "expired"),
        ("expired", "pending_approval"),
    ]


def test_a_lapsed_version_not_yet_swept_is_replaced(ctx):
    create_refund(ctx, args())
    RefundConfirmation.objects.update(expires_at=timezone.now() - timedelta(minutes=1))

    result = create_refund(ctx, args())

    assert result["version"] == 2
    refund = RefundRequest.objects.get()
    assert refund.status == "pending_approval"
    assert list(refund.confirmations.values_list("version", "status")) == [
        (1, "expired"),
        (2, "pending"),
    ]


def test_a_different_reason_is_the_next_version_of_the_same_intent(ctx):
    first = create_refund(ctx, args(amount=Decimal("100.00")))
    second = create_refund(ctx, args(reason="wrong_item", amount=Decimal("100.00")))

    assert second["request_id"] == first["request_id"]
    assert second["version"] == 2
    refund = RefundRequest.objects.get()
    assert refund.reason == "wrong_item"
    assert list(refund.confirmations.values_list("version", "status")) == [
        (1, "superseded"),
        (2, "pending"),
    ]
    assert refund.confirmations.get(version=2).params["reason"] == "wrong_item"


def test_a_smaller_correction_replaces_the_proposal_instead_of_adding_one(ctx):
    create_refund(ctx, args())

    result = create_refund(ctx, args(amount=Decimal("100.00"), explanation="Only the lid."))

    assert result["version"] == 2
    refund = RefundRequest.objects.get()
    assert (refund.amount, refund.explanation) == (Decimal("100.00"), "Only the lid.")
    assert RefundConfirmation.objects.filter(status="pending").count() == 1


def test_a_further_refund_after_a_settled_one_is_a_new_intent(ctx, reviewer):
    create_refund(ctx, args(amount=Decimal("50.00")))
    first = RefundRequest.objects.get()
    refund_approve(
        refund=first,
        reviewer=reviewer,
        version=1,
        fingerprint=first.confirmations.get().fingerprint,
    )
    RefundRequest.objects.filter(pk=first.pk).update(status="succeeded")

    result = create_refund(ctx, args(amount=Decimal("79.00")))

    assert result["request_id"] == derive_request_id(
        ticket_reference="TCK-7001", order_id="202610110087", n=1
    )
    assert RefundRequest.objects.count() == 2


def test_it_refuses_an_amount_the_orders_currency_cannot_express(ticket, ctx):
    # Given an order paid in yen, which has no minor unit
    ticket.order.currency = "JPY"
    ticket.order.save()

    # When the model proposes 12.50 JPY
    with pytest.raises(ToolError) as refusal:
        create_refund(ctx, args(amount=Decimal("12.50")))

    # Then it is told which field and why, and nothing was proposed
    message = "12.50 JPY cannot be refunded: JPY has no minor unit, so the amount must be whole."
    assert refusal.value.as_result() == {
        "ok": False,
        "error": {
            "code": "INVALID_ARGUMENTS",
            "message": message,
            "retryable": False,
            "next_actions": ["create_refund"],
            "currency": "JPY",
            "decimal_places": 0,
            "field_errors": {"amount": message},
        },
    }
    assert RefundRequest.objects.count() == 0
    assert RefundConfirmation.objects.count() == 0
    assert TicketMessage.objects.count() == 0


@pytest.mark.parametrize("amount", [Decimal("0.00"), Decimal("-5.00")])
def test_the_service_refuses_an_amount_of_nothing_or_less(ticket, agent_user, amount):
    # When a caller past the tool's validation proposes nothing, or less than nothing
    with pytest.raises(ApplicationError) as refusal:
        refund_propose(
            ticket=ticket,
            order=ticket.order,
            amount=amount,
            reason="damaged",
            explanation="The mug arrived in pieces.",
            requested_by=agent_user,
            role="agent",
        )

    # Then it is refused, and nothing was proposed
    assert (refusal.value.code, refusal.value.message) == (
        "invalid_amount",
        "A refund must be more than 0.00.",
    )
    assert RefundRequest.objects.count() == 0
    assert RefundConfirmation.objects.count() == 0
    assert TicketMessage.objects.count() == 0


@pytest.mark.parametrize(
    ("currency", "amount", "message"),
    [
        (
            "JPY",
            "12.5",
            "12.5 JPY cannot be refunded: JPY has no minor unit, so the amount must be whole.",
        ),
        (
            "KWD",
            "12.345",
            "12.345 KWD cannot be refunded: the desk holds KWD amounts to 2 decimal places.",
        ),
        (
            "CNY",
            "10.001",
            "10.001 CNY cannot be refunded: the desk holds CNY amounts to 2 decimal places.",
        ),
    ],
)
def test_the_proposal_service_refuses_an_amount_it_cannot_hold_instead_of_rounding_it(
    ticket, agent_user, currency, amount, message
):
    ticket.order.currency = currency
    ticket.order.save()

    with pytest.raises(AmountNotExpressible) as refusal:
        refund_propose(
            ticket=ticket,
            order=ticket.order,
            amount=Decimal(amount),
            reason="damaged",
            explanation="Broken.",
            requested_by=agent_user,
            role="agent",
        )

    assert (refusal.value.code, refusal.value.message) == ("amount_not_expressible", message)
    assert refusal.value.status_code == 400
    assert RefundRequest.objects.count() == 0
    assert TicketMessage.objects.count() == 0


def paid_in(ticket, currency: str, amount: str) -> None:
    ticket.order.currency = currency
    ticket.order.amount_paid = Decimal(amount)
    ticket.order.save()


def test_it_refuses_a_currency_the_policy_does_not_name_and_creates_nothing(ticket, ctx):
    # Given an order paid 499.00 KWD (about 11,500 CNY), and limits set in CNY only
    paid_in(ticket, "KWD", "499.00")

    # When an agent proposes refunding all of it
    with pytest.raises(ToolError) as refusal:
        create_refund(ctx, args(amount=Decimal("499.00")))

    # Then the currency is refused with its clause, never compared with the 500.00 CNY limit
    detail = (
        "the policy sets no refund limits for KWD (only for CNY); a refund in KWD cannot be "
        "proposed or approved at the desk"
    )
    assert refusal.value.as_result()["error"] == {
        "code": "CURRENCY_NOT_SUPPORTED",
        "message": f"The refund policy sets no limits for KWD, so the desk cannot refund this "
        f"order (R-5: {detail}).",
        "retryable": False,
        "next_actions": ["explain_policy", "ask_agent"],
        "currency": "KWD",
        "clauses": ["R-5"],
        "verdicts": [{"clause": "R-5", "outcome": "fail", "detail": detail}],
    }
    assert RefundRequest.objects.count() == 0
    assert RefundConfirmation.objects.count() == 0
    assert RefundEvent.objects.count() == 0
    assert TicketMessage.objects.count() == 0


def test_it_holds_a_kwd_proposal_to_the_kwd_limit_and_names_kwd_everywhere(ticket, ctx):
    # Given a policy with limits in CNY and in KWD, and an order paid 499.00 KWD
    publish_role_limits({"CNY": CNY_LIMITS, "KWD": {"agent": "20.00", "supervisor": "200.00"}})
    paid_in(ticket, "KWD", "499.00")

    # When an agent proposes 499.00 KWD, then 19.00 KWD
    with pytest.raises(ToolError) as refusal:
        create_refund(ctx, args(amount=Decimal("499.00")))
    result = create_refund(ctx, args(amount=Decimal("19.00")))

    # Then the KWD limit applies, not the CNY one, and every word names KWD
    error = refusal.value.as_result()["error"]
    assert error["code"] == "AMOUNT_OVER_ROLE_LIMIT"
    assert error["verdicts"] == [
        {
            "clause": "R-5",
            "outcome": "fail",
            "detail": "requested 499.00 KWD exceeds the agent limit of 20.00 KWD; above every "
            "desk limit; escalate to a supervisor, who takes it beyond the desk",
        }
    ]
    assert (result["status"], result["amount"], result["currency"]) == (
        "pending_approval",
        "19.00",
        "KWD",
    )
    verdicts = {v["clause"]: v["detail"] for v in result["policy"]}
    assert verdicts["R-5"] == "requested 19.00 KWD is within the agent limit of 20.00 KWD"
    assert verdicts["R-2"] == (
        "requested 19.00 KWD is within the refundable balance of 499.00 KWD "
        "(paid 499.00 KWD, already refunded 0.00 KWD)"
    )
    assert result["message"].startswith("Proposed a refund of 19.00 KWD (version 1)")
    assert "CNY" not in json.dumps(result)
    assert TicketMessage.objects.get().body == (
        f"Refund {result['request_id']} of 19.00 KWD proposed for order 202610110087 "
        "(damaged), waiting for review."
    )
