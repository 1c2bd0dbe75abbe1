"""Small-model mode's pieces (DESIGN §16, agent/runtime/small_model.py) and the check that an
answer tells only of work the run did, driven through the step loop with the real openai
client against the fake server."""

import json

import pytest

from agent.models import AgentMessage, ToolCallLog
from agent.providers.required_call import call_from_content
from agent.runtime.answers import COULD_NOT_ANSWER, OPEN_REFUND_QUESTION, unfounded_answer
from agent.runtime.examples import EXAMPLES_CLOSE, EXAMPLES_OPEN
from agent.runtime.records import HEADING as RECORDS_HEADING
from agent.runtime.run_step import ASK_AGAIN_HEAD
from agent.runtime.small_model import (
    DESK_ANSWERED,
    clear_refund_request,
    needs_desk_data,
    planned_call,
    proposal_due,
)
from refunds.models import RefundRequest
from tests.agent.runs import drive, start_run
from tests.fakes.openai_server import text_reply, tool_call, tool_reply

pytestmark = pytest.mark.django_db(transaction=True)

MUG = "202610110087"  # Li Wei's, TCK-1001
JACKET = "202609020031"  # Li Wei's, past the refund window
BLENDER = "202610180099"  # Maria's, TCK-1002: 599.00 paid, 200.00 refunded
LOOKED_UP_MUG = [{"tool_name": "get_order", "ok": True, "result": {"order_id": MUG}}]
PROPOSED = [
    *LOOKED_UP_MUG,
    {"tool_name": "create_refund", "ok": True, "result": {"status": "pending_approval"}},
]


# --- Answers that tell of work the run did not do (small-model mode) --------------------


@pytest.fixture
def small_model(settings):
    settings.AGENT_SMALL_MODEL = True


@pytest.fixture
def without_fallback(settings, small_model):
    settings.AGENT_SMALL_MODEL_PIECES = [
        piece for piece in settings.AGENT_SMALL_MODEL_PIECES if piece != "fallback"
    ]


@pytest.mark.parametrize(
    "text",
    [
        "I proposed a partial refund of 50.00 for the damage.",
        "I've submitted a refund request for the mug; it awaits a reviewer.",
        "Proposed a full refund of 129.00; pending approval.",
        "A refund request has been created for 129.00.",
        "已为订单提交退款提议，等待审核。",
        "Ich habe eine Erstattung von 50,00 vorgeschlagen.",
        "J'ai proposé un remboursement de 50,00.",
        "He propuesto un reembolso de 50,00.",
        # A negation in an aside before the claim does not take it back.
        "I looked the mug up (delivered, nothing refunded) and proposed a full refund of 129.00.",
        f"I found the order {MUG} with status delivered and amount paid 129.00.",
        f"Order {MUG} was delivered last week.",
    ],
)
def test_an_answer_telling_of_work_no_tool_did_is_recognised(text):
    assert unfounded_answer(text, []) is not None


@pytest.mark.parametrize(
    ("text", "calls"),
    [
        ("Which order do you mean, and how much should go back?", []),
        (f"Should I propose 129.00 on order {MUG}?", []),
        ("I have not proposed a refund: tell me the amount first.", []),
        ("I looked the mug order up twice and stopped; no refund was proposed.", []),
        ("Nothing has been created: no refund request was submitted.", []),
        ("没有提交退款。", []),
        ("The customer paid 129.00 CNY for the mug.", []),
        ("Here is a poem about mugs: clay and glaze, a morning's warmth.", []),
        (f"The customer says order {MUG} was never delivered; shall I look it up?", []),
        (f"Li wrote that order {MUG} arrived broken and she paid 129.00.", []),
        (f"Order {MUG} was delivered; she paid 129.00.", LOOKED_UP_MUG),
        ("I proposed a full refund of 129.00; a reviewer decides.", PROPOSED),
    ],
)
def test_an_answer_the_tool_log_bears_out_is_accepted(text, calls):
    assert unfounded_answer(text, calls) is None


def test_a_proposal_claimed_with_no_call_made_is_asked_for_again(demo, fake_openai, small_model):
    fake_openai.enqueue(
        text_reply(f"I looked up order {MUG} and proposed a full refund of 129.00."),
        text_reply("I have not done anything yet: which amount should I propose?"),
    )
    run = start_run("The mug arrived broken, propose a full refund.")

    drive(run)

    assert run.final_answer == "I have not done anything yet: which amount should I propose?"
    notes = [m for m in fake_openai.requests[1]["messages"] if m["role"] == "system"]
    assert notes[-1]["content"].startswith(ASK_AGAIN_HEAD)
    assert "no create_refund call of this run succeeded" in notes[-1]["content"]
    assert not RefundRequest.objects.filter(order__order_id=MUG).exists()


def test_a_model_that_keeps_claiming_work_it_did_not_do_is_not_posted(
    demo, fake_openai, small_model
):
    claim = f"Order {MUG} was delivered and I proposed a refund of 129.00."
    fake_openai.enqueue(text_reply(claim), text_reply(claim), text_reply("never asked"))
    run = start_run("The mug arrived broken, propose a full refund.")

    drive(run)

    assert len(fake_openai.requests) == 2
    assert run.final_answer.endswith(DESK_ANSWERED)
    assert "proposed a refund" not in run.final_answer


def proposing(order_id: str, amount: str) -> dict:
    """The model's reply proposing `amount` on the order as damaged."""
    arguments = {"order_id": order_id, "amount": amount, "reason": "damaged", "explanation": "x"}
    return tool_reply(tool_call("create_refund", arguments))


def test_an_answer_after_the_lookup_and_the_proposal_is_posted_with_the_proposals_record(
    demo, fake_openai, small_model
):
    answer = f"Order {MUG} was delivered; I proposed a full refund of 129.00 for review."
    fake_openai.enqueue(
        tool_reply(tool_call("get_order", {"order_id": MUG})),
        proposing(MUG, "129.00"),
        text_reply(answer),
    )
    run = start_run("The mug arrived broken, propose a full refund.")

    drive(run)

    (refund,) = RefundRequest.objects.filter(order__order_id=MUG)
    assert run.final_answer == (
        f"{answer}\n\n{RECORDS_HEADING}\n- Proposed a refund of 129.00 CNY for order #{MUG} "
        f"(Ceramic mug) (request {refund.request_id}): waiting for a reviewer, nothing refunded "
        "yet."
    )
    assert len(fake_openai.requests) == 3


# --- Small-model mode ------------------------------------------------------------------


def roles(request: dict) -> list[str]:
    return [message["role"] for message in request["messages"]]


def system_texts(request: dict) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "system"]


def ask_what_she_paid(fake_openai, settings) -> list[dict]:
    """The requests of a small-model run that looks the mug up, then answers."""
    settings.AGENT_SMALL_MODEL = True
    fake_openai.enqueue(
        tool_reply(tool_call("get_order", {"order_id": MUG})), text_reply("She paid 129.00.")
    )
    drive(start_run(f"How much did she pay for order {MUG}?"))
    return fake_openai.requests


def test_small_model_mode_sends_worked_examples_after_the_rules_on_every_step(
    demo, fake_openai, settings
):
    first, second = ask_what_she_paid(fake_openai, settings)

    systems = system_texts(first)
    assert systems[0].startswith("You are the Refund Desk assistant.")
    assert (systems[1], systems[2]) == (EXAMPLES_OPEN, EXAMPLES_CLOSE)
    assert "Today: " in systems[3]
    # the examples are real calls with their results, the same on every step (cacheable)
    examples = first["messages"][
        1 : first["messages"].index(
            next(m for m in first["messages"] if m["content"] == EXAMPLES_CLOSE)
        )
    ]
    assert {"user", "assistant", "tool"} <= {m["role"] for m in examples}
    calls = [m for m in examples if m.get("tool_calls")]
    assert [c["tool_calls"][0]["function"]["name"] for c in calls] == [
        "get_order",
        "create_refund",
        "get_order",
        "search_policies",
        "get_refund_status",
    ]
    assert second["messages"][: len(examples) + 1] == first["messages"][: len(examples) + 1]


def test_without_small_model_mode_or_its_examples_piece_no_examples_are_sent(
    demo, fake_openai, settings
):
    fake_openai.enqueue(text_reply("She paid 129.00."))
    drive(start_run("Thanks, that's all."))
    settings.AGENT_SMALL_MODEL = True
    settings.AGENT_SMALL_MODEL_PIECES = ["tools", "must_call", "context"]
    fake_openai.enqueue(text_reply("You're welcome."))
    drive(start_run("Thanks, that's all."))

    for request in fake_openai.requests:
        assert EXAMPLES_OPEN not in system_texts(request)
        assert roles(request).count("user") == 1


def test_small_model_mode_makes_the_first_call_of_a_desk_request_a_tool_call(
    demo, fake_openai, settings
):
    requests = ask_what_she_paid(fake_openai, settings)

    assert [r["tool_choice"] for r in requests] == ["required", "auto"]


def test_small_model_mode_makes_the_call_after_the_lookup_of_a_refund_asked_for_a_call(
    demo, fake_openai, settings
):
    settings.AGENT_SMALL_MODEL = True
    fake_openai.enqueue(
        tool_reply(tool_call("get_order", {"order_id": MUG})),
        proposing(MUG, "129.00"),
        text_reply("Proposed 129.00 for review."),
    )

    drive(start_run(f"The mug of order {MUG} arrived broken: propose a full refund."))

    assert [r["tool_choice"] for r in fake_openai.requests] == ["required", "required", "auto"]
    assert "create_refund" in [t["function"]["name"] for t in fake_openai.requests[1]["tools"]]


def test_a_clear_refund_request_keeps_calls_required_until_a_lookup_lets_the_model_propose(
    demo, fake_openai, settings
):
    settings.AGENT_SMALL_MODEL = True
    fake_openai.enqueue(
        tool_reply(tool_call("get_refund_status", {"order_id": BLENDER})),
        tool_reply(tool_call("get_order", {"order_id": BLENDER})),
        proposing(BLENDER, "399.00"),
        text_reply("Proposed the 399.00 left, pending a reviewer."),
    )

    drive(
        start_run(
            f"Check the refund history of the blender {BLENDER}, then propose whatever is left "
            "for the same cracked lid.",
            reference="TCK-1002",
        )
    )

    requests = fake_openai.requests
    assert [r["tool_choice"] for r in requests] == ["required"] * 3 + ["auto"]
    assert "create_refund" not in [t["function"]["name"] for t in requests[1]["tools"]]


def test_a_call_the_desks_planner_would_still_make_is_required(demo, fake_openai, settings):
    # A listing found the jacket; whether it can be refunded needs the order and the policy.
    settings.AGENT_SMALL_MODEL = True
    fake_openai.enqueue(
        tool_reply(tool_call("list_customer_orders", {"limit": 10})),
        tool_reply(tool_call("get_order", {"order_id": JACKET})),
        tool_reply(tool_call("search_policies", {"query": "refund window"})),
        text_reply("No: the jacket is past the 30-day window (R-1)."),
    )

    drive(
        start_run(
            "Li also asks about a rain jacket she bought. Find that order and tell me whether "
            "it can still be refunded.",
            reference="TCK-1004",
        )
    )

    assert [r["tool_choice"] for r in fake_openai.requests] == ["required"] * 3 + ["auto"]


def test_the_planners_reading_needs_nothing_more_once_the_order_is_read(small_model):
    messages = [
        {"role": "system", "content": "Ticket TCK-1001."},
        {"role": "user", "content": f"What did she pay for order {MUG}?"},
    ]
    assert planned_call(messages, {"get_order"}) == "get_order"
    call = tool_call("get_order", {"order_id": MUG})
    messages += [
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call["id"], "content": json.dumps({"order_id": MUG})},
    ]
    assert planned_call(messages, {"get_order"}) is None


def test_outside_small_model_mode_the_planner_is_not_consulted():
    messages = [{"role": "user", "content": f"What did she pay for order {MUG}?"}]
    assert planned_call(messages, {"get_order"}) is None


def test_a_proposal_refused_with_create_refund_to_do_next_is_pushed_to_be_tried_once_more(
    demo, fake_openai, settings
):
    settings.AGENT_SMALL_MODEL = True
    proposal = {"order_id": MUG, "amount": "129.00", "explanation": "x"}
    fake_openai.enqueue(
        tool_reply(tool_call("get_order", {"order_id": MUG})),
        tool_reply(tool_call("create_refund", {**proposal, "reason": "other"})),
        tool_reply(tool_call("create_refund", {**proposal, "reason": "wrong_item"})),
        text_reply(f"Nothing was proposed for order {MUG}: which reason?"),
    )

    drive(start_run(f"The mug of order {MUG} arrived in pieces: propose a full refund."))

    # Refused twice, the run stops pushing (and the same refusal twice ends it: "none").
    assert [r["tool_choice"] for r in fake_openai.requests] == ["required"] * 3 + ["none"]
    assert not RefundRequest.objects.filter(order__order_id=MUG).exists()


@pytest.mark.parametrize(
    ("words", "offered"),
    [
        (f"The mug of order {MUG} arrived broken: propose a full refund.", True),
        (f"Give her something back for order {MUG}.", False),
    ],
)
def test_after_the_lookup_create_refund_is_offered_only_for_a_refund_said_in_full(
    demo, fake_openai, small_model, words, offered
):
    fake_openai.enqueue(
        tool_reply(tool_call("get_order", {"order_id": MUG})),
        text_reply(f"Order {MUG}: how much should go back?"),
    )

    drive(start_run(words))

    second = [tool["function"]["name"] for tool in fake_openai.requests[1]["tools"]]
    assert ("create_refund" in second) is offered


def refusal(*next_actions: str) -> dict:
    error = {"code": "X", "next_actions": list(next_actions)}
    return {"tool_name": "create_refund", "ok": False, "result": {"ok": False, "error": error}}


@pytest.mark.parametrize(
    ("calls", "due"),
    [
        (LOOKED_UP_MUG, True),
        ([*LOOKED_UP_MUG, refusal("create_refund", "ask_agent")], True),
        ([*LOOKED_UP_MUG, refusal("create_refund"), refusal("create_refund")], False),
        ([*LOOKED_UP_MUG, refusal("explain_policy", "search_policies")], False),
        (PROPOSED, False),
    ],
)
def test_a_proposal_stays_due_until_made_or_refused_for_good(calls, due):
    assert proposal_due(calls) is due


@pytest.mark.parametrize(("pieces", "first"), [(["search"], "R-3"), ([], "R-1")])
def test_a_policy_search_in_small_model_mode_reads_the_agents_own_words_first(
    demo, fake_openai, settings, pieces, first
):
    # The model's keywords are the example's; the question is about downloads.
    settings.AGENT_SMALL_MODEL = True
    settings.AGENT_SMALL_MODEL_PIECES = pieces
    query = {"query": "refund window after delivery", "limit": 1}
    fake_openai.enqueue(
        tool_reply(tool_call("search_policies", query)), text_reply("See the clause.")
    )
    run = start_run("Can customers get refunds on e-books and other downloads?")

    drive(run)

    (row,) = ToolCallLog.objects.filter(run=run)
    assert row.result["clauses"][0]["ref"] == first


@pytest.mark.parametrize(
    ("words", "clear"),
    [
        ("Propose a full refund for the mug, it arrived broken.", True),
        ("Propose a partial refund of 50.00 for the damage.", True),
        ("Propose whatever is left on the blender.", True),
        ("Give her something back.", False),
        ("Refund that one as well.", False),
        ("Propose what she asks for.", False),
        ("How much did she pay?", False),
    ],
)
def test_only_a_refund_request_that_says_how_much_pushes_the_model_to_propose(words, clear):
    assert clear_refund_request(words) is clear


def test_the_first_call_is_left_free_for_a_thank_you_and_outside_small_model_mode(
    demo, fake_openai, settings
):
    fake_openai.enqueue(text_reply("129.00."))
    drive(start_run(f"How much did she pay for order {MUG}?"))
    settings.AGENT_SMALL_MODEL = True
    fake_openai.enqueue(text_reply("You're welcome."))
    drive(start_run("Thanks, that's all."))

    assert [r["tool_choice"] for r in fake_openai.requests] == ["auto", "auto"]


@pytest.mark.parametrize(
    ("words", "needs"),
    [
        (f"What's the status of {MUG}?", True),
        ("Propose a full refund for the mug, it arrived broken.", True),
        ("Who has to approve a refund?", True),
        ("她的退款到哪一步了？", True),
        ("What's the status of this customer's order and how much did she pay?", True),
        ("When was the phone case delivered and what did it cost?", True),
        ("Tell me when the lamp shipped.", True),
        ("Thanks, that's all.", False),
        ("Write me a poem about ceramic mugs.", False),
    ],
)
def test_requests_about_orders_refunds_or_policy_need_desk_data(words, needs):
    assert needs_desk_data(words) is needs


def test_the_ask_again_note_is_saved_on_the_run(demo, fake_openai, small_model):
    fake_openai.enqueue(
        text_reply("I proposed a refund of 129.00 for the mug."),
        text_reply("Nothing was proposed yet."),
    )
    run = start_run("The mug arrived broken, propose a full refund.")

    drive(run)

    (note,) = AgentMessage.objects.filter(run=run, role="system")
    assert note.content.startswith(ASK_AGAIN_HEAD)


# --- A required call on an endpoint that enforces only a JSON schema --------------------


def test_a_required_call_can_be_asked_for_as_a_json_schema_and_is_read_back_as_a_call(
    demo, fake_openai, settings
):
    settings.AGENT_SMALL_MODEL = True
    settings.LLM_REQUIRED_CALL = "json_schema"
    fake_openai.enqueue(
        text_reply(json.dumps({"tool": {"name": "get_order", "arguments": {"order_id": MUG}}})),
        text_reply(f"She paid 129.00 for order {MUG}."),
    )
    run = start_run(f"How much did she pay for order {MUG}?")

    drive(run)

    first, second = fake_openai.requests
    assert first["tool_choice"] == "auto"
    schema = first["response_format"]["json_schema"]
    assert (first["response_format"]["type"], schema["name"]) == ("json_schema", "tool_call")
    offered_names = {tool["function"]["name"] for tool in first["tools"]}
    choices = schema["schema"]["properties"]["tool"]["anyOf"]
    assert {choice["properties"]["name"]["enum"][0] for choice in choices} == offered_names
    assert "response_format" not in second
    (row,) = ToolCallLog.objects.filter(run=run)
    assert (row.tool_name, row.ok, row.result["order_id"]) == ("get_order", True, MUG)
    assert run.final_answer == f"She paid 129.00 for order {MUG}."


@pytest.mark.parametrize(
    "content",
    [
        "She paid 129.00.",
        '{"tool": {"name": "approve_refund", "arguments": {}}}',
        '{"tool": "get_order"}',
        "[1, 2]",
    ],
)
def test_content_that_is_no_call_of_an_offered_tool_is_not_read_as_one(content):
    tools = [{"type": "function", "function": {"name": "get_order", "parameters": {}}}]

    assert call_from_content(content, tools) is None


def test_a_call_written_to_the_schema_or_unwrapped_by_the_server_is_read():
    tools = [{"type": "function", "function": {"name": "get_order", "parameters": {}}}]
    for content in (
        '{"tool": {"name": "get_order", "arguments": {"order_id": "1"}}}',
        '{"name": "get_order", "arguments": {"order_id": "1"}}',
    ):
        call = call_from_content(content, tools)
        assert call is not None
        assert call["function"] == {"name": "get_order", "arguments": '{"order_id": "1"}'}


# --- Claims the records contradict, and the question a run that could not answer asks --


def test_in_small_model_mode_an_answer_the_refunds_contradict_is_asked_for_again(
    demo, fake_openai, settings
):
    settings.AGENT_SMALL_MODEL = True
    fake_openai.enqueue(
        tool_reply(tool_call("get_order", {"order_id": MUG})),
        text_reply("The refund for the mug has been paid out."),
        text_reply(f"Nothing has been refunded for order {MUG}."),
    )
    run = start_run(f"Has the refund on {MUG} gone through?")

    drive(run)

    assert run.final_answer == f"Nothing has been refunded for order {MUG}."
    assert run.answer_contradicts_state is False
    note = [m for m in fake_openai.requests[2]["messages"] if m["role"] == "system"][-1]
    assert note["content"].startswith(ASK_AGAIN_HEAD)
    assert "is not what the records say" in note["content"]


def test_a_small_model_that_repeats_a_false_claim_gets_no_answer_posted_that_claims_it(
    demo, fake_openai, settings
):
    settings.AGENT_SMALL_MODEL = True
    claim = "The refund has been approved and paid out."
    fake_openai.enqueue(
        tool_reply(tool_call("get_refund_status", {"order_id": MUG})),
        text_reply(claim),
        text_reply(claim),
    )
    run = start_run(f"Has the refund on {MUG} gone through?")

    drive(run)

    assert run.final_answer.endswith(DESK_ANSWERED)
    assert claim not in run.final_answer
    assert run.answer_contradicts_state is False


def test_outside_small_model_mode_an_answer_is_not_checked_against_the_tool_log(demo, fake_openai):
    claim = f"I looked up order {MUG} and proposed a full refund of 129.00."
    fake_openai.enqueue(text_reply(claim))
    run = start_run("The mug arrived broken, propose a full refund.")

    drive(run)

    assert run.final_answer == claim
    assert len(fake_openai.requests) == 1


def test_outside_small_model_mode_such_an_answer_is_posted_flagged(demo, fake_openai):
    fake_openai.enqueue(
        tool_reply(tool_call("get_order", {"order_id": MUG})),
        text_reply("The refund for the mug has been paid out."),
    )
    run = start_run(f"Has the refund on {MUG} gone through?")

    drive(run)

    assert run.final_answer == "The refund for the mug has been paid out."
    assert run.answer_contradicts_state is True
    assert len(fake_openai.requests) == 2


def test_a_run_that_could_not_answer_an_open_refund_request_asks_what_to_propose(
    demo, fake_openai, without_fallback
):
    claim = "I proposed a refund for the mug."
    fake_openai.enqueue(text_reply(claim), text_reply(claim))
    run = start_run("Give her something back.")

    drive(run)

    assert run.final_answer.startswith(COULD_NOT_ANSWER)
    assert run.final_answer.endswith(OPEN_REFUND_QUESTION)
    assert not RefundRequest.objects.filter(order__order_id=MUG).exists()


@pytest.mark.parametrize(
    ("answer", "asked"),
    [
        (f"Order {MUG} is the mug, delivered 5 days ago.", True),
        (f"Order {MUG} is the mug. How much should I propose?", False),
    ],
)
def test_an_answer_to_an_open_refund_request_that_asks_nothing_gets_the_desks_question(
    demo, fake_openai, small_model, answer, asked
):
    fake_openai.enqueue(tool_reply(tool_call("get_order", {"order_id": MUG})), text_reply(answer))
    run = start_run("Li says the mug has a problem too. Refund that one as well.")

    drive(run)

    expected = f"{answer}\n\n{OPEN_REFUND_QUESTION}" if asked else answer
    assert run.final_answer == expected


def test_when_the_model_cannot_answer_the_desk_answers_from_the_run_s_records(
    demo, fake_openai, small_model
):
    call_as_text = '<tool_call>{"name": "get_order", "arguments": {}}</tool_call>'
    fake_openai.enqueue(
        tool_reply(tool_call("get_order", {"order_id": MUG})),
        text_reply(call_as_text),
        text_reply(call_as_text),
    )
    run = start_run("Give her something back for the mug.")

    drive(run)

    answer, note = run.final_answer.rsplit("\n\n", 1)
    assert note == DESK_ANSWERED
    assert MUG in answer and "129.00" in answer  # what the lookup showed
    assert answer.rstrip().endswith("?")  # and the question the request leaves open
    assert not RefundRequest.objects.filter(order__order_id=MUG).exists()


def test_a_run_that_could_not_answer_a_clear_request_asks_nothing(
    demo, fake_openai, without_fallback
):
    claim = "I proposed a refund for the mug."
    fake_openai.enqueue(text_reply(claim), text_reply(claim))
    run = start_run("Propose a full refund for the broken mug.")

    drive(run)

    assert run.final_answer.startswith(COULD_NOT_ANSWER)
    assert OPEN_REFUND_QUESTION not in run.final_answer
