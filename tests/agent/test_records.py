"""The records a small model's answer leaves out, put under it by the desk (agent/runtime/
records.py): the orders shown, the proposal and that it waits for a reviewer, the clauses read;
each only when the answer does not name it. Worded for people, in the language of the agent's
request, never with a tool's name or an error code."""

import pytest

from agent.runtime.record_words import RECORD_WORDS
from agent.runtime.records import HEADING, record_language, records_left_out, run_record
from tests.agent.runs import drive, start_run
from tests.fakes.openai_server import text_reply, tool_call, tool_reply

MUG = "202610110087"
JACKET = "202609020031"
MUG_SHOWN = {
    "tool_name": "get_order",
    "ok": True,
    "result": {
        "order_id": MUG,
        "status": "delivered",
        "currency": "CNY",
        "amount_paid": "129.00",
        "refundable_balance": "129.00",
        "days_since_delivery": 5,
        "lines": [{"name": "Ceramic mug"}],
    },
}
PROPOSED = {
    "tool_name": "create_refund",
    "ok": True,
    "result": {"request_id": "rf_0a1b2c", "order_id": MUG, "amount": "129.00", "currency": "CNY"},
}
POLICY_READ = {
    "tool_name": "search_policies",
    "ok": True,
    "result": {"clauses": [{"ref": "R-6", "title": "Who approves a refund"}]},
}
REFUSED = {
    "tool_name": "create_refund",
    "ok": False,
    "result": {
        "ok": False,
        "error": {
            "code": "POLICY_DENIED",
            "verdicts": [{"clause": "R-1", "detail": "delivered 75 days ago; the window is 30"}],
        },
    },
}


def test_an_answer_naming_nothing_gets_every_record_under_it():
    records = records_left_out("Done, it is with a reviewer.", [MUG_SHOWN, PROPOSED, POLICY_READ])

    assert records == (
        f"{HEADING}\n"
        f"- Looked up order #{MUG} (Ceramic mug): 129.00 CNY paid, delivered 5 days ago, "
        "129.00 CNY left to refund.\n"
        f"- Proposed a refund of 129.00 CNY for order #{MUG} (Ceramic mug) (request rf_0a1b2c): "
        "waiting for a reviewer, nothing refunded yet.\n"
        "- Policy: R-6 Who approves a refund."
    )


def test_what_the_answer_names_is_not_repeated():
    answer = f"Proposal rf_0a1b2c for order {MUG} waits for a reviewer (R-6)."

    assert records_left_out(answer, [MUG_SHOWN, PROPOSED, POLICY_READ]) == ""


def test_a_refusal_names_the_clause_that_refused():
    records = records_left_out("The policy does not allow it.", [REFUSED])

    assert records == f"{HEADING}\n- Policy: R-1 delivered 75 days ago; the window is 30."


def test_only_what_a_lookup_showed_is_a_record():
    not_found = {"tool_name": "get_order", "ok": False, "result": {"ok": False, "error": {}}}
    listing = {
        "tool_name": "list_customer_orders",
        "ok": True,
        "result": {
            "orders": [
                {"order_id": str(number), "status": "delivered", "amount_paid": "1.00"}
                for number in range(202610000001, 202610000009)
            ]
        },
    }

    records = records_left_out("Here they are.", [not_found, listing])

    assert (
        records.count("- Looked up order #") == 5
    )  # a listing's first five: the rest is a list to open
    assert records_left_out("Not found.", [not_found]) == ""


@pytest.mark.django_db(transaction=True)
def test_records_go_under_a_small_models_answer_only_with_the_piece_on(demo, fake_openai, settings):
    settings.AGENT_SMALL_MODEL = True
    answers = []
    for pieces in (["records"], []):
        settings.AGENT_SMALL_MODEL_PIECES = pieces
        fake_openai.enqueue(
            tool_reply(tool_call("get_order", {"order_id": MUG})), text_reply("She paid that.")
        )
        run = start_run("How much did she pay for the mug?")
        drive(run)
        answers.append(run.final_answer)

    with_records, without = answers
    assert with_records.startswith(
        f"She paid that.\n\n{HEADING}\n- Looked up order #{MUG} (Ceramic mug)"
    )
    assert without == "She paid that."


TOOL_NAMES = ("get_order", "list_customer_orders", "search_policies", "create_refund")
NOT_FOUND = {
    "tool_name": "get_order",
    "ok": False,
    "error_code": "ORDER_NOT_FOUND",
    "arguments_raw": '{"order_id": "202610150099"}',
    "result": {"ok": False, "error": {"code": "ORDER_NOT_FOUND"}},
}


def test_the_record_names_no_tool_and_no_error_code():
    lines = run_record([MUG_SHOWN, PROPOSED, POLICY_READ, NOT_FOUND, REFUSED])

    text = "\n".join(lines)
    assert not any(name in text for name in TOOL_NAMES)
    assert "ORDER_NOT_FOUND" not in text and "POLICY_DENIED" not in text
    assert "Could not look up order #202610150099" in text
    assert "Could not propose the refund" in text


def test_a_chinese_request_gets_its_record_in_chinese():
    language = record_language("客户说杯子碎了，请帮忙退款129元")
    records = records_left_out("好的。", [MUG_SHOWN, PROPOSED, POLICY_READ], language=language)

    assert language == "zh"
    assert records.startswith(RECORD_WORDS["zh"]["heading"])
    assert f"已查询订单 #{MUG}（Ceramic mug）：已付 129.00 CNY，5 天前送达" in records
    assert "等待审核人批准，尚未退款" in records
    assert "Looked up" not in records and "Proposed" not in records


@pytest.mark.parametrize(
    ("words", "language", "opening"),
    [
        ("Bitte erstatten Sie die Tasse, sie ist kaputt angekommen", "de", "Bestellung #"),
        ("Le client dit que la tasse est arrivée cassée, remboursez-la", "fr", "Commande #"),
        ("El cliente dice que la taza llegó rota, por favor reembolsa", "es", "Consulté el pedido"),
        ("The mug arrived broken, refund it", "en", "Looked up order #"),
        ("", "en", "Looked up order #"),
    ],
)
def test_the_record_speaks_the_language_of_the_agents_request(words, language, opening):
    assert record_language(words) == language
    (line,) = run_record([MUG_SHOWN], language=record_language(words))
    assert line.startswith(opening)


def test_a_line_the_answer_already_says_is_not_said_again():
    # The model copied the desk's line into its answer, word for word
    line = run_record([MUG_SHOWN])[0]
    answer = f"Here is what I found. {line}"

    assert records_left_out(answer, [MUG_SHOWN, POLICY_READ]) == (
        f"{HEADING}\n- Policy: R-6 Who approves a refund."
    )
