"""Without a model's reading, a public reply is read by the precise patterns first and then by
the recall-first word lists (agent/answer_check/): a reply that says money moved, was approved
or is on its way while the refund is not there yet is asked to be confirmed; hedged, true and
unrelated replies go out."""

import json
from collections import defaultdict
from pathlib import Path

import pytest

from agent.answer_check import check_text, contradicted_claims
from agent.draft_templates import SAME_AS, TEMPLATES
from agent.drafts import model_body_refusal, template_draft
from refunds.models import RefundRequest
from tests.factories import demo_refund
from tickets.models import Ticket

pytestmark = pytest.mark.django_db

MUG, HEADPHONES = "202610110087", "202610150012"
TUNING = Path(__file__).resolve().parent.parent / "data" / "claims" / "tuning.jsonl"


@pytest.fixture(autouse=True)
def no_model(settings):
    settings.LLM_PROVIDER = "offline"


def _ticket(reference: str = "TCK-1001") -> Ticket:
    return Ticket.objects.get(reference=reference)


def _request(ticket: Ticket, order_id: str, status: str, amount: str) -> RefundRequest:
    return demo_refund(ticket, order_id, status, amount)


# Said while the mug's refund waits for approval; none of them is the precise patterns' kind.
FALSE_CLAIMS = [
    ("en", "Your refund has gone out today."),
    ("en", "Refunded: 129.00 CNY to your Visa."),
    ("en", "129.00 CNY is back in your account."),
    ("en", "Thanks for bearing with us about the refund. It went out this morning."),
    ("en", "Have a lovely weekend!\nP.S. the money is back on your card."),
    ("zh", "款项已原路返回。"),
    ("zh", "退款搞定了"),
    ("de", "Die Erstattung ging heute raus."),
    ("es", "Ya te devolvimos el dinero."),
    ("fr", "L'argent est de retour sur votre compte."),
    ("pt", "O estorno foi feito hoje no seu cartão."),
    ("nl", "We hebben het bedrag vandaag teruggestort."),
    ("ja", "ご返金の手続きが完了しました。"),
    ("ko", "환불이 완료되었습니다."),
    ("ru", "Мы уже вернули вам деньги."),
    ("pl", "Zwrot został zrealizowany dzisiaj."),
    ("sv", "Pengarna har skickats tillbaka till ditt kort."),
    ("tr", "Ücret iadeniz yapıldı."),
]

HEDGED = [
    "Once approved, it takes 3–5 days.",
    "We cannot refund digital goods.",
    "A colleague will review your refund request.",
    "We sent you an email about your refund.",
    "Your refund is expected to be processed on Monday.",
    "退款审核通过后，款项将在3-5个工作日内原路返回。",
    "Sobald die Erstattung genehmigt ist, überweisen wir Ihnen den Betrag.",
    "Cuando se apruebe, el reembolso tardará de 3 a 5 días.",
    "Votre demande de remboursement est en cours d'examen.",
]


@pytest.mark.parametrize("language, text", FALSE_CLAIMS)
def test_a_claim_the_patterns_miss_is_asked_to_be_confirmed(demo, language, text):
    _request(_ticket(), MUG, "pending_approval", "129.00")

    claims = contradicted_claims(text=text, ticket=_ticket())

    assert [(claim["claimed"], claim["actual"]) for claim in claims] == [
        ("refunded", "pending_approval")
    ]


def test_it_reads_at_least_twelve_languages():
    assert len({language for language, _ in FALSE_CLAIMS}) >= 12


@pytest.mark.parametrize("language, text", FALSE_CLAIMS)
def test_the_same_words_go_out_once_the_refund_succeeded(demo, language, text):
    _request(_ticket(), MUG, "succeeded", "129.00")

    assert contradicted_claims(text=text, ticket=_ticket()) == []


@pytest.mark.parametrize("text", HEDGED)
def test_a_hedged_reply_goes_out(demo, text):
    _request(_ticket(), MUG, "pending_approval", "129.00")

    assert contradicted_claims(text=text, ticket=_ticket()) == []


@pytest.mark.parametrize(
    "text",
    [
        # No cue the word lists know, nothing that takes it back: recall first.
        "Regarding your 129.00 CNY refund for the mug: all good on our side.",
        # The customer's own figure is money, with or without a currency.
        "Good news: the 129 is yours again.",
        "Your 129,00 is on the card.",
    ],
)
def test_an_unhedged_sentence_about_their_money_is_asked_to_be_confirmed(demo, text):
    _request(_ticket(), MUG, "pending_approval", "129.00")

    claims = contradicted_claims(text=text, ticket=_ticket())

    assert [claim["actual"] for claim in claims] == ["pending_approval"]


@pytest.mark.parametrize(
    "text",
    [
        "Thanks for your patience while we look into the refund.",
        # A number that is not one of the customer's figures is no money of theirs.
        "Good news: the 12 is yours again.",
    ],
)
def test_a_sentence_that_is_hedged_or_not_their_money_goes_out(demo, text):
    _request(_ticket(), MUG, "pending_approval", "129.00")

    assert contradicted_claims(text=text, ticket=_ticket()) == []


def test_an_unhedged_sentence_about_their_money_goes_out_once_approved(demo):
    _request(_ticket(), MUG, "approved", "129.00")

    text = "Regarding your 129.00 CNY refund for the mug: all good on our side."
    assert contradicted_claims(text=text, ticket=_ticket()) == []


def test_with_no_refund_at_all_a_claim_is_false(demo):
    claims = contradicted_claims(text="款项已原路返回。", ticket=_ticket())

    assert claims == [
        {"text": "款项已原路返回。", "order_id": None, "claimed": "refunded", "actual": "none"}
    ]


def test_an_approval_is_true_from_approval_on(demo):
    refund = _request(_ticket(), MUG, "pending_approval", "129.00")
    text = "Good news: the refund got the green light."

    before = contradicted_claims(text=text, ticket=_ticket())
    RefundRequest.objects.filter(pk=refund.pk).update(status="approved")
    after = contradicted_claims(text=text, ticket=_ticket())

    assert [claim["claimed"] for claim in before] == ["approved"]
    assert after == []


def test_a_sentence_after_a_true_claim_keeps_its_order(demo):
    ticket = _ticket("TCK-1004")
    _request(ticket, MUG, "succeeded", "129.00")
    _request(ticket, HEADPHONES, "pending_approval", "899.00")

    true = contradicted_claims(
        text="Your mug has been refunded. The money is back on your card.", ticket=ticket
    )
    false = contradicted_claims(
        text="Your mug has been refunded. P.S. the headphones money is back too.", ticket=ticket
    )

    assert true == []
    assert [(claim["order_id"], claim["actual"]) for claim in false] == [
        (HEADPHONES, "pending_approval")
    ]


def test_drafts_and_answers_are_not_read_by_the_word_lists(demo):
    _request(_ticket(), MUG, "pending_approval", "129.00")

    assert check_text(text="Die Erstattung ging heute raus.", ticket=_ticket()).ok is True


def test_a_model_draft_the_word_lists_stop_gives_way_to_the_templates(demo):
    _request(_ticket(), MUG, "pending_approval", "129.00")

    refusal = model_body_refusal("Die Erstattung ging heute raus.", _ticket(), "de")

    assert refusal == "claims the records contradict"


# Every status a template paragraph is written for.
STATUSES = sorted({*TEMPLATES["en"]["refund"], *SAME_AS})


@pytest.mark.parametrize("language", sorted(TEMPLATES))
@pytest.mark.parametrize("status", STATUSES)
def test_every_template_draft_goes_out_as_a_public_reply(demo, language, status):
    ticket = _ticket("TCK-1004")
    _request(ticket, HEADPHONES, status, "899.00")

    draft = template_draft(ticket, language=language)

    assert contradicted_claims(text=draft.body, ticket=ticket) == []


# --- The tuning corpus ----------------------------------------------------------------------


def _corpus() -> list[dict]:
    return [json.loads(line) for line in TUNING.read_text().splitlines() if line.strip()]


def test_the_tuning_corpus_is_labelled_replies_in_ten_languages_or_more():
    rows = _corpus()

    assert len(rows) >= 80
    assert len({row["language"] for row in rows}) >= 10
    assert {row["kind"] for row in rows} == {"false", "true", "hedged", "unrelated"}
    assert all(row["false_claim"] == (row["kind"] == "false") for row in rows)
    assert len({row["id"] for row in rows}) == len(rows)


def test_on_the_tuning_corpus_it_stops_false_claims_and_lets_the_rest_go(demo):
    by_state: dict[tuple, list[dict]] = defaultdict(list)
    for row in _corpus():
        by_state[(row["ticket"], row["order_id"], row["refund_state"], row["amount"])].append(row)
    stopped = {}
    for (reference, order_id, status, amount), rows in by_state.items():
        RefundRequest.objects.filter(ticket__isnull=False).delete()
        ticket = _ticket(reference)
        if status is not None:
            _request(ticket, order_id, status, amount)
        for row in rows:
            stopped[row["id"]] = bool(contradicted_claims(text=row["text"], ticket=ticket))

    rows = _corpus()
    false = [row["id"] for row in rows if row["false_claim"]]
    fair = [row["id"] for row in rows if row["kind"] in ("true", "hedged")]
    unrelated = [row["id"] for row in rows if row["kind"] == "unrelated"]
    missed = [i for i in false if not stopped[i]]
    asked = [i for i in fair if stopped[i]]
    assert sum(stopped[i] for i in false) / len(false) >= 0.9, missed
    assert sum(stopped[i] for i in fair) / len(fair) <= 0.2, asked
    assert not any(stopped[i] for i in unrelated)


@pytest.mark.django_db
@pytest.mark.parametrize("unit", ["0", "1,", "0.", "9 ", "¥0", "0元", "退", "- "])
def test_a_reply_as_long_as_the_desk_takes_is_read_in_linear_time(demo, unit):
    # A figure read from every one of its digits again was quadratic: 20,000 zeros took half
    # a minute of a web worker's CPU. The bound is generous: linear reading takes a fraction.
    import time

    text = (unit * 20_000)[:20_000]
    ticket = Ticket.objects.get(reference="TCK-1001")

    started = time.process_time()
    contradicted_claims(text=text, ticket=ticket)

    assert time.process_time() - started < 5
