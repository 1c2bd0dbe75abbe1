"""The records a small model's answer leaves out, put under it by the desk (agent/runtime/
records.py): the orders shown, the proposal and that it waits for a reviewer, the clauses read;
each only when the answer does not name it."""

import pytest

from agent.runtime.records import HEADING, records_left_out
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
    "result": {"request_id": "rf_0a1b2c", "amount": "129.00", "currency": "CNY"},
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
        f"- Order {MUG} (Ceramic mug): 129.00 CNY paid, delivered 5 days ago, 129.00 CNY left "
        "to refund.\n"
        "- Proposal rf_0a1b2c: 129.00 CNY, pending a reviewer's approval. Not refunded yet.\n"
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

    assert records.count("- Order ") == 5  # a listing's first five: the rest is a list to open
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
    assert with_records.startswith(f"She paid that.\n\n{HEADING}\n- Order {MUG} (Ceramic mug)")
    assert without == "She paid that."
