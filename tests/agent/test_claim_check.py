"""The one claim check (DESIGN §13): claims that money was refunded, sent or is on its way, in
the languages the desk drafts in and others, hedges read per clause, each claim judged per order
against the refund requests that exist."""

import pytest

from agent.answer_check import check_text, claims_in, statements_in
from refunds.models import RefundRequest
from tests.factories import demo_refund
from tickets.models import Ticket

# The false "your refund is done" answers of issue 33, and more of their kind: claims whatever
# the words, the language or what else the sentence says.
REFUND_CLAIMS = [
    "Your refund of 899.00 CNY has been processed.",
    "We've issued a full refund.",
    "Refund completed: 899.00 CNY back to your card.",
    "The 899.00 CNY refund went through.",
    "Your refund of 899.00 CNY has been processed and you can expect it in 3 days.",
    "No worries, your refund has been processed.",
    "If you have any questions, let me know. Your refund has been completed.",
    "Your refund has been sent to your card — can I help with anything else?",
    "已退款 899.00 元",
    "您的退款已处理",
    "Ihre Rückerstattung wurde bearbeitet.",
    "Wir haben Ihnen den Betrag erstattet.",
    "Votre remboursement a été effectué.",
    "Your headphones have been refunded.",
    "You have been refunded 899.00 CNY.",
    "I've gone ahead and refunded your order.",
    "Your account has been credited with 899.00 CNY.",
    "The refund is now complete and should appear within 3-5 business days.",
    "We processed your refund today.",
    "The money has been returned to your card.",
    "Good news: the refund was approved and processed.",
    "It's been refunded.",
    "We have refunded the full amount to your original payment method.",
    "Su reembolso ha sido procesado.",
    "Le hemos devuelto el dinero.",
    "Nous avons procédé au remboursement.",
    "Le remboursement de 899,00 € a été effectué.",
    "Der Betrag wurde Ihrem Konto gutgeschrieben.",
    "我们已将899元退还给您",
    "退款已到账，请查收。",
    "钱已经退给您了",
    "Il rimborso è stato effettuato.",
    "O seu reembolso foi processado.",
    "Uw terugbetaling is verwerkt.",
    "返金が完了しました。",
    "A full refund has been issued to your card.",
    "The refund was successfully completed.",
    "Refund issued: 899.00 CNY.",
    "We have credited 899.00 CNY back to your account.",
    "Your refund of ¥899 has gone through.",
    "Rest assured, the refund has been sent.",
    "We are pleased to inform you that your refund has been processed.",
    "There's no need to worry: your refund has been processed.",
    "Your refund has arrived.",
    "您的款项已退回原支付账户。",
    "退款已经完成。",
    "我们已经为您处理了退款。",
    "已为您全额退款",
    "退款已发放",
    "El reembolso se ha completado.",
    "Nous avons effectué le remboursement.",
    "Le remboursement a bien été effectué.",
    "Die Rückerstattung ist erfolgt.",
    "Wir haben die Rückerstattung veranlasst.",
]

ON_ITS_WAY_CLAIMS = [
    "The money is on its way to you.",
    "Your refund is being processed.",
    "Li Wei will receive the refund in 3-5 days.",
    "We have initiated the refund.",
    "您的退款正在处理中。",
    "Votre remboursement est en route.",
    "Die Erstattung ist unterwegs.",
    # An opener, not a condition: "once" and "after" start one otherwise.
    "Once again, your refund is on its way.",
    "After all, your refund is on its way.",
]

NOT_CLAIMS = [
    "Once approved, the refund will be processed.",
    "Nothing has been refunded yet.",
    "We will let you know once your refund has been processed.",
    "Your refund request has been sent to our team for review.",
    "Refunds are usually processed within 5 business days.",
    # A kind of refund, as a policy clause quoted in an answer names it: no refund of this ticket.
    "The limit counts refunds that are approved or still being paid out.",
    "Refunds which are approved are paid out within 5 days.",
    # A proposal submitted is not money refunded
    "已提交退款提议 249.00 CNY，等待审核人批准，尚未退款。",
    "Has the customer been refunded? Let me check.",
    "The refund has not been approved.",
    "It must be approved by a reviewer before the customer gets any money.",
    "The refund isn't complete until the provider confirms it.",
    "If approved, you will receive your refund in 3-5 days.",
    "Your order has been shipped and the mug was delivered.",
    "I proposed a refund of 129.00 CNY; it is pending approval. Nothing has been refunded yet.",
    "We have sent you an email with the return label.",
    "Unfortunately the refund could not be processed.",
    "Once again, sorry for the trouble.",
    "退款审核通过后将退回您的账户。",
    "您的退款尚未处理。",
    "我们已收到您的退款申请。",
    "退款处理完成后会通知您。",
    "Ihre Rückerstattung wurde noch nicht bearbeitet.",
    "Sobald die Erstattung genehmigt ist, erhalten Sie das Geld.",
    "Votre remboursement n'a pas encore été effectué.",
    "Su reembolso no ha sido procesado todavía.",
    "Can you confirm whether the refund has been processed?",
    "Your refund will be processed once it has been approved.",
    "Your refund hasn't been processed yet.",
    "Your refund is not yet complete.",
    "I can't confirm the refund has been processed.",
    "I don't see that your refund has been processed.",
    "Please allow 5 days after your refund has been processed.",
    "As soon as your refund has been approved, we'll send it.",
    "We're unable to process your refund.",
    "We have not refunded you.",
    "We haven't issued the refund yet.",
    "Your package has arrived.",
    "Your request has been received and will be reviewed.",
]


@pytest.mark.parametrize("text", REFUND_CLAIMS)
def test_it_finds_a_claim_that_money_was_refunded(text):
    assert "refunded" in claims_in(text)


@pytest.mark.parametrize("text", ON_ITS_WAY_CLAIMS)
def test_it_finds_a_claim_that_money_is_on_its_way(text):
    assert claims_in(text) == ["on_its_way"]


@pytest.mark.parametrize("text", NOT_CLAIMS)
def test_hedged_negated_conditional_or_unrelated_text_claims_nothing(text):
    assert claims_in(text) == []


def test_a_hedge_in_one_clause_does_not_take_back_the_claim_of_another():
    statements = statements_in(
        "Your refund of 899.00 CNY has been processed and you can expect it in 3 days."
    )

    assert [(s.kind, s.clause) for s in statements] == [
        ("refunded", "Your refund of 899.00 CNY has been processed")
    ]


@pytest.mark.parametrize(
    "text",
    [
        "Your refund request was approved.",
        "Ihr Erstattungsantrag wurde genehmigt.",
        "Votre demande de remboursement a été approuvée.",
        "您的退款申请已批准。",
    ],
)
def test_an_approved_request_is_an_approval_claim(text):
    assert claims_in(text) == ["approved"]


@pytest.mark.parametrize(
    "text",
    ["You'll get your 899 yuan back within 3 days.", "Your money is on the way back to you."],
)
def test_money_promised_back_is_a_claim_that_it_is_on_its_way(text):
    assert claims_in(text) == ["on_its_way"]


def test_the_strongest_claim_of_a_clause_counts():
    assert claims_in("Good news, the refund was approved.") == ["approved"]
    assert claims_in("The refund was approved and processed.") == ["refunded"]


# --- Judged per order -------------------------------------------------------------------------


def _ticket(reference: str = "TCK-1004") -> Ticket:
    return Ticket.objects.get(reference=reference)


def _request(ticket: Ticket, order_id: str, status: str, amount: str) -> RefundRequest:
    return demo_refund(ticket, order_id, status, amount)


MUG, HEADPHONES = "202610110087", "202610150012"


@pytest.mark.django_db
@pytest.mark.parametrize("text", REFUND_CLAIMS)
def test_every_refund_claim_is_false_on_a_ticket_with_no_refund(demo, text):
    check = check_text(text=text, ticket=_ticket())

    assert check.ok is False
    assert check.public()["claims"][0]["actual"] == "none"


@pytest.mark.django_db
def test_a_claim_about_one_product_is_judged_against_that_orders_request(demo):
    ticket = _ticket()
    _request(ticket, MUG, "succeeded", "129.00")
    _request(ticket, HEADPHONES, "pending_approval", "899.00")

    headphones = check_text(text="Your headphones have been refunded.", ticket=ticket)
    mug = check_text(text="Your mug has been refunded.", ticket=ticket)

    assert headphones.public() == {
        "ok": False,
        "claims": [
            {
                "text": "Your headphones have been refunded.",
                "order_id": HEADPHONES,
                "claimed": "refunded",
                "actual": "pending_approval",
            }
        ],
    }
    assert mug.public() == {"ok": True, "claims": []}


@pytest.mark.django_db
def test_a_claim_naming_an_order_id_is_judged_against_that_order(demo):
    ticket = _ticket()
    _request(ticket, MUG, "succeeded", "129.00")
    _request(ticket, HEADPHONES, "pending_approval", "899.00")

    check = check_text(text=f"Order {HEADPHONES} has been refunded.", ticket=ticket)

    assert [(c.order_id, c.actual, c.true) for c in check.claims] == [
        (HEADPHONES, "pending_approval", False)
    ]


@pytest.mark.django_db
def test_a_claim_naming_no_order_holds_only_if_every_request_of_the_ticket_does(demo):
    ticket = _ticket()
    _request(ticket, MUG, "succeeded", "129.00")
    pending = _request(ticket, HEADPHONES, "pending_approval", "899.00")

    before = check_text(text="Your refund has been processed.", ticket=ticket)
    RefundRequest.objects.filter(pk=pending.pk).update(status="succeeded")
    after = check_text(text="Your refund has been processed.", ticket=ticket)

    assert (before.ok, before.claims[0].actual) == (False, "succeeded, pending_approval")
    assert after.ok is True


@pytest.mark.django_db
def test_an_amount_in_the_claim_picks_the_request_of_that_amount(demo):
    ticket = _ticket()
    _request(ticket, MUG, "succeeded", "129.00")
    _request(ticket, HEADPHONES, "pending_approval", "899.00")

    assert check_text(text="We have refunded 129.00 CNY.", ticket=ticket).ok is True
    assert check_text(text="We have refunded 899.00 CNY.", ticket=ticket).ok is False
    assert check_text(text="We have refunded 500.00 CNY.", ticket=ticket).ok is False


@pytest.mark.django_db
def test_an_approval_claim_is_true_from_approval_on_and_a_refund_claim_only_on_success(demo):
    ticket = _ticket()
    refund = _request(ticket, HEADPHONES, "approved", "899.00")

    approved = check_text(text="Your refund has been approved.", ticket=ticket)
    underway = check_text(text="Your refund is on its way.", ticket=ticket)
    refunded = check_text(text="Your refund has been processed.", ticket=ticket)
    RefundRequest.objects.filter(pk=refund.pk).update(status="succeeded")
    settled = check_text(text="Your refund has been processed.", ticket=ticket)

    assert (approved.ok, underway.ok, refunded.ok, settled.ok) == (True, True, False, True)


@pytest.mark.django_db
def test_a_withdrawn_proposal_does_not_speak_for_a_later_refund_of_the_order(demo):
    ticket = _ticket()
    _request(ticket, HEADPHONES, "withdrawn", "899.00")
    _request(ticket, HEADPHONES, "succeeded", "899.00")

    assert check_text(text="Your headphones have been refunded.", ticket=ticket).ok is True


@pytest.mark.django_db
def test_a_rejected_request_makes_a_refund_claim_false(demo):
    ticket = _ticket()
    _request(ticket, HEADPHONES, "rejected", "899.00")

    check = check_text(text="已为您退款 899.00 元", ticket=ticket)

    assert (check.ok, check.claims[0].actual) == (False, "rejected")


@pytest.mark.django_db
def test_text_with_no_claim_reads_nothing(demo, django_assert_num_queries):
    ticket = _ticket()
    with django_assert_num_queries(0):
        check = check_text(text="Thanks for your patience, we're looking into it.", ticket=ticket)

    assert check.public() == {"ok": True, "claims": []}
