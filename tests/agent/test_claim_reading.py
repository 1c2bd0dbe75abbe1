"""With a model configured, the claim check has it read the text (DESIGN §13, §18): one call
without tools, structured output, through the real `openai` client to the fake server over
HTTP; the desk judges what it read against the database. A reply past the deadline, malformed
or failed is no reading: the word lists read the text instead."""

import json
import time
import uuid

import pytest
from django.db import connection

from agent import claim_reading, services
from agent.answer_check import check_text, contradicted_claims, judging, read_for_check
from agent.claim_reading import SCHEMA_NAME, parse_reading
from refunds.models import RefundRequest
from tests.agent.runs import drive, start_run
from tests.factories import demo_refund
from tests.fakes.openai_server import Sleep, claims_reply, error_body, text_reply
from tickets.models import Ticket

MUG, HEADPHONES = "202610110087", "202610150012"
BACKPACK_CLAIM = "The refund for your backpack has been processed."


@pytest.fixture(autouse=True)
def own_cache(settings):
    """A cache of this test's own: a reading cached by another test is never served here."""
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            "LOCATION": uuid.uuid4().hex,
        }
    }


def _ticket(reference: str = "TCK-1004") -> Ticket:
    return Ticket.objects.get(reference=reference)


def _request(ticket: Ticket, order_id: str, status: str, amount: str) -> RefundRequest:
    return demo_refund(ticket, order_id, status, amount)


@pytest.mark.django_db
def test_it_asks_the_model_once_without_tools_for_a_strict_schema(demo, fake_openai, settings):
    settings.AGENT_MODEL = "reader-model"

    check_text(text="Thanks, we're on it.", ticket=_ticket())

    assert fake_openai.requests == []
    (request,) = fake_openai.claim_requests
    assert request["model"] == "reader-model"
    assert "tools" not in request
    assert request["response_format"]["type"] == "json_schema"
    assert request["response_format"]["json_schema"]["name"] == SCHEMA_NAME
    assert request["response_format"]["json_schema"]["strict"] is True
    schema = request["response_format"]["json_schema"]["schema"]
    claim = schema["properties"]["claims"]["items"]
    assert claim["properties"]["claimed_state"]["enum"] == [
        "refunded",
        "on_its_way",
        "approved",
        "requested",
        "none",
    ]
    # The text is data, in an untrusted block, never in the instructions.
    assert "Thanks, we're on it." not in request["messages"][0]["content"]
    assert '<untrusted source="message">' in request["messages"][1]["content"]


@pytest.mark.django_db
def test_the_model_reads_the_text_masked_as_everything_it_is_sent(demo, fake_openai):
    text = "Dear Li Wei (li.wei@example.com), your refund has been processed."

    check_text(text=text, ticket=_ticket())

    sent = fake_openai.claim_requests[0]["messages"][1]["content"]
    assert "Dear Li (l***@example.com), your refund has been processed." in sent
    assert "Wei" not in sent


@pytest.mark.django_db
def test_a_claim_about_a_product_the_customer_never_bought_is_false(demo, fake_openai):
    ticket = _ticket("TCK-1001")
    _request(ticket, MUG, "succeeded", "129.00")
    fake_openai.enqueue_claims([("backpack", "refunded", BACKPACK_CLAIM)])

    check = check_text(text=BACKPACK_CLAIM, ticket=ticket)

    # Never judged against the mug's refund, which succeeded.
    assert check.public() == {
        "ok": False,
        "claims": [
            {
                "text": BACKPACK_CLAIM,
                "order_id": None,
                "claimed": "refunded",
                "actual": "not_ordered",
            }
        ],
    }


@pytest.mark.django_db
def test_a_true_claim_read_by_the_model_passes(demo, fake_openai):
    ticket = _ticket("TCK-1001")
    _request(ticket, MUG, "succeeded", "129.00")
    text = "Your mug money went out to your Visa today."
    fake_openai.enqueue_claims([("ceramic mug", "refunded", text)])

    assert check_text(text=text, ticket=ticket).public() == {"ok": True, "claims": []}


@pytest.mark.parametrize(
    "named, order_id",
    [
        ("wireless headphnes", HEADPHONES),
        ("Headphones", HEADPHONES),
        (f"order {HEADPHONES}", HEADPHONES),
        ("the mug", MUG),
        ("mugs", MUG),
    ],
)
@pytest.mark.django_db
def test_the_order_or_product_the_model_names_is_one_of_the_customers(
    demo, fake_openai, named, order_id
):
    ticket = _ticket()
    _request(ticket, MUG, "succeeded", "129.00")
    _request(ticket, HEADPHONES, "pending_approval", "899.00")
    text = "All squared away now."
    fake_openai.enqueue_claims([(named, "refunded", text)])

    check = check_text(text=text, ticket=ticket)

    assert [(c.order_id, c.true) for c in check.claims] == [(order_id, order_id == MUG)]


@pytest.mark.django_db
def test_an_order_id_that_is_not_the_customers_is_false(demo, fake_openai):
    ticket = _ticket()
    _request(ticket, HEADPHONES, "succeeded", "899.00")
    text = "Order 202610280001 was refunded."
    fake_openai.enqueue_claims([("202610280001", "refunded", text)])

    check = check_text(text=text, ticket=ticket)

    assert [c.public() for c in check.false_claims] == [
        {"text": text, "order_id": "202610280001", "claimed": "refunded", "actual": "not_ordered"}
    ]


@pytest.mark.django_db
def test_a_claim_naming_nothing_is_judged_against_the_tickets_requests(demo, fake_openai):
    ticket = _ticket()
    _request(ticket, HEADPHONES, "pending_approval", "899.00")
    text = "Good news, it got the green light."
    fake_openai.enqueue_claims([(None, "approved", text)])

    check = check_text(text=text, ticket=ticket)

    assert [c.public() for c in check.claims] == [
        {"text": text, "order_id": None, "claimed": "approved", "actual": "pending_approval"}
    ]


@pytest.mark.django_db
def test_a_request_said_to_be_made_with_none_behind_it_is_false(demo, fake_openai):
    text = "I have put in a refund request for you."
    fake_openai.enqueue_claims([(None, "requested", text)])

    check = check_text(text=text, ticket=_ticket())

    assert [(c.claimed, c.actual, c.true) for c in check.claims] == [("requested", "none", False)]


@pytest.mark.django_db
def test_what_the_model_reads_as_no_claim_is_not_read_by_the_word_lists(demo, fake_openai):
    ticket = _ticket("TCK-1001")
    _request(ticket, MUG, "pending_approval", "129.00")
    text = "Die Erstattung ging heute raus."
    fake_openai.enqueue_claims([])

    assert contradicted_claims(text=text, ticket=ticket) == []
    assert len(fake_openai.claim_requests) == 1


@pytest.mark.django_db
def test_the_cache_serves_a_second_check_without_a_model_call(demo, fake_openai):
    ticket = _ticket("TCK-1001")
    _request(ticket, MUG, "pending_approval", "129.00")
    fake_openai.read_claims_with(lambda text: [("mug", "refunded", text)])

    first = contradicted_claims(text="All settled for the mug.", ticket=ticket)
    second = contradicted_claims(text="All settled for the mug.", ticket=ticket)

    assert first == second
    assert [claim["order_id"] for claim in first] == [MUG]
    assert len(fake_openai.claim_requests) == 1


@pytest.mark.django_db
def test_past_the_deadline_the_word_lists_read_the_reply(demo, fake_openai, settings):
    settings.CLAIM_CHECK_TIMEOUT_S = 0.5
    ticket = _ticket("TCK-1001")
    _request(ticket, MUG, "pending_approval", "129.00")
    fake_openai.enqueue_claims(Sleep(3, claims_reply()))

    started = time.monotonic()
    claims = contradicted_claims(text="Die Erstattung ging heute raus.", ticket=ticket)

    assert time.monotonic() - started < 2.5
    assert claims == [
        {
            "text": "Die Erstattung ging heute raus.",
            "order_id": None,
            "claimed": "refunded",
            "actual": "pending_approval",
        }
    ]


@pytest.mark.parametrize(
    "reply",
    [
        b"\x00not json at all",
        text_reply("The reply claims the refund was processed."),
        text_reply(
            '{"claims": [{"order_or_product": null, "claimed_state": "paid", "sentence": "x"}]}'
        ),
        text_reply('{"claims": [], "note": "ignore the desk"}'),
        text_reply('{"claims": [{"claimed_state": "refunded", "sentence": "x"}]}'),
        text_reply('{"claims": "none"}'),
        error_body(500, "the model crashed"),
        error_body(400, "response_format is not supported"),
    ],
)
@pytest.mark.django_db
def test_a_malformed_or_failed_reading_falls_back_to_the_word_lists(demo, fake_openai, reply):
    ticket = _ticket("TCK-1001")
    _request(ticket, MUG, "pending_approval", "129.00")
    fake_openai.enqueue_claims(reply, reply)

    first = contradicted_claims(text="退款搞定了", ticket=ticket)
    second = contradicted_claims(text="退款搞定了", ticket=ticket)

    assert [claim["text"] for claim in first] == ["退款搞定了"]
    assert second == first
    # Nothing that is not a reading is cached: the second check asked again.
    assert len(fake_openai.claim_requests) == 2


@pytest.mark.parametrize(
    "content",
    [
        '{"claims": []}',
        '{"claims": [{"order_or_product": "mug", "claimed_state": "refunded", "sentence": "s"}]}',
        '{"claims": [{"order_or_product": null, "claimed_state": "none", "sentence": "s"}]}',
    ],
)
def test_a_reading_in_the_schemas_shape_is_read(content):
    assert parse_reading(content) is not None


@pytest.mark.parametrize(
    "content",
    [
        None,
        "",
        "[]",
        '{"claims": null}',
        '```json\n{"claims": []}\n```',
        '{"claims": [{"order_or_product": 7, "claimed_state": "refunded", "sentence": "s"}]}',
        '{"claims": [{"order_or_product": null, "claimed_state": "REFUNDED", "sentence": "s"}]}',
        '{"claims": [{"order_or_product": null, "claimed_state": "none", "sentence": ["s"]}]}',
        json.dumps(
            {
                "claims": [
                    {"order_or_product": None, "claimed_state": "none", "sentence": "s", "x": 1}
                ]
            }
        ),
        json.dumps(
            {"claims": [{"order_or_product": None, "claimed_state": "none", "sentence": "s"}] * 51}
        ),
    ],
)
def test_anything_else_is_no_reading(content):
    assert parse_reading(content) is None


@pytest.mark.django_db
def test_without_a_model_nothing_is_asked(demo, fake_openai, settings):
    settings.LLM_PROVIDER = "offline"

    check_text(text="Your refund has been processed.", ticket=_ticket())

    assert fake_openai.claim_requests == []


@pytest.mark.django_db
def test_a_run_ends_judged_by_the_reading_asked_before_its_transaction(demo, fake_openai):
    # The step asks for the reading first: the run's row is not held while a model reads.
    run = start_run(reference="TCK-1001")
    _request(run.ticket, MUG, "pending_approval", "129.00")
    services.run_acquire_lease(run_id=run.pk, owner="t")
    fake_openai.read_claims_with(lambda text: [("mug", "refunded", text)])
    answer = "All settled for the mug."
    reading = read_for_check(text=answer, ticket=run.ticket, customer=run.customer)
    asked = len(fake_openai.claim_requests)

    services.run_finish(
        run=run, owner="t", stop_reason="final_answer", final_answer=answer, claim_reading=reading
    )

    run.refresh_from_db()
    assert asked == 1
    assert len(fake_openai.claim_requests) == 1
    assert run.answer_contradicts_state is True
    assert run.answer_check["false_claims"][0]["order_id"] == MUG


@pytest.mark.django_db
def test_a_run_step_asks_for_the_reading_outside_its_ending_transaction(
    demo, fake_openai, monkeypatch
):
    # Watched where it is called (the step's thread), then read for real over HTTP.
    depths: list[int] = []

    def watched(text):
        depths.append(len(connection.atomic_blocks))
        return claim_reading.read_claims(text)

    monkeypatch.setattr(judging, "read_claims", watched)
    fake_openai.enqueue(text_reply("The mug cost 129.00."))
    run = start_run(reference="TCK-1001")
    baseline = len(connection.atomic_blocks)

    drive(run)

    run.refresh_from_db()
    assert run.status == "completed"
    assert depths and all(depth == baseline for depth in depths)
