"""Model replies that tried to crash a step or skip a log row (DESIGN §1 invariant 3, §7).

Whatever one reply asks for, every tool call in it gets exactly one ToolCallLog row and
exactly one tool message, under the id saved in the assistant message and sent back to the
model, and the run goes on. Driven against the fake OpenAI server through the real `openai`
client, with real commits; the NUL case also runs on PostgreSQL when DATABASE_URL points there.
"""

import json
import re
import threading

import pytest

from agent.models import AgentMessage, RunEvent, ToolCallLog
from agent.tools.registry import SUPPORT_ROLES, Tool, ToolKind, registered_tool
from agent.untrusted import untrusted_blocks
from tests.agent.runs import drive, start_run
from tests.fakes.openai_server import text_reply, tool_call, tool_reply

pytestmark = pytest.mark.django_db(transaction=True)

MUG, HEADPHONES = "202610110087", "202610150012"
DERIVED_ID = re.compile(r"call_[0-9a-f]{24}")


def saved_call_ids(run, step: int = 1) -> list[str]:
    """The tool-call ids of the run's `step`-th assistant message, as saved."""
    message = AgentMessage.objects.filter(run=run, role="assistant").order_by("seq")[step - 1]
    return [call["id"] for call in message.tool_calls]


def sent_results(fake_openai, step: int) -> dict[str, dict]:
    """tool_call_id -> the result the model was sent, in the order it was sent, for the calls
    of the `step`-th assistant message, as the request after that step carried them."""
    messages = fake_openai.requests[step]["messages"]
    assistant = [i for i, m in enumerate(messages) if m["role"] == "assistant"][step - 1]
    results = {}
    for message in messages[assistant + 1 :]:
        if message["role"] != "tool":
            break
        results[message["tool_call_id"]] = json.loads(untrusted_blocks(message["content"])[0])
    return results


def assert_one_answer_per_call(run, fake_openai, *, step: int = 1) -> list[str]:
    """Every call saved in the step's assistant message has one log row and one tool message,
    and the model got the same ids back in the assistant message and the tool messages."""
    ids = saved_call_ids(run, step)
    assert len(set(ids)) == len(ids)
    logged = list(
        ToolCallLog.objects.filter(run=run, tool_call_id__in=ids).values_list(
            "tool_call_id", flat=True
        )
    )
    assert sorted(logged) == sorted(ids)
    answered = list(
        AgentMessage.objects.filter(run=run, role="tool", tool_call_id__in=ids)
        .order_by("seq")
        .values_list("tool_call_id", flat=True)
    )
    assert answered == ids
    sent_assistant = [
        m for m in fake_openai.requests[step]["messages"] if m["role"] == "assistant"
    ][step - 1]
    assert [call["id"] for call in sent_assistant["tool_calls"]] == ids
    assert list(sent_results(fake_openai, step)) == ids
    return ids


def test_it_renames_a_call_id_longer_than_its_column_and_answers_it_under_the_new_id(
    demo, fake_openai
):
    # Given a model that names its call with 205 characters
    long_id = "call_" + "x" * 200
    fake_openai.enqueue(
        tool_reply(tool_call("get_order", {"order_id": MUG}, call_id=long_id)),
        text_reply("Paid 129.00."),
    )
    run = start_run()

    # When the steps run
    drive(run)

    # Then the call was saved, logged and answered under one derived id
    (call_id,) = assert_one_answer_per_call(run, fake_openai)
    assert DERIVED_ID.fullmatch(call_id)
    log = ToolCallLog.objects.get(run=run)
    assert (log.tool_call_id, log.tool_name, log.ok) == (call_id, "get_order", True)
    assert sent_results(fake_openai, 1)[call_id]["order_id"] == MUG
    assert (run.status, run.final_answer) == ("completed", "Paid 129.00.")


def test_it_stores_a_reply_with_nul_bytes_cleaned_and_answers_the_call(demo, fake_openai):
    # Given a reply with NUL bytes in its text, a tool name and the arguments
    fake_openai.enqueue(
        tool_reply(
            tool_call("get_order\x00", '{"order_id": "2026101\x0010087"}', call_id="call_nul"),
            content="Looking\x00 it up.",
        ),
        text_reply("Done\x00."),
    )
    run = start_run()

    # When the steps run (PostgreSQL refuses NUL in text and in jsonb)
    drive(run)

    # Then the name, arguments and text were stored with U+FFFD instead
    message = AgentMessage.objects.filter(run=run, role="assistant").order_by("seq").first()
    assert message.content == "Looking\ufffd it up."
    assert message.tool_calls[0]["function"] == {
        "name": "get_order\ufffd",
        "arguments": '{"order_id": "2026101\ufffd10087"}',
    }
    # and the call got its one log row and answer: an unknown tool, pointing at get_order
    assert assert_one_answer_per_call(run, fake_openai) == ["call_nul"]
    log = ToolCallLog.objects.get(run=run)
    assert (log.tool_name, log.ok, log.error_code) == ("get_order\ufffd", False, "UNKNOWN_TOOL")
    assert log.result["error"]["next_actions"] == ["get_order"]
    # and no NUL reached a row of the run
    stored = [
        list(AgentMessage.objects.filter(run=run).values("content", "tool_calls")),
        list(RunEvent.objects.filter(run=run).values("data")),
        list(ToolCallLog.objects.filter(run=run).values()),
    ]
    assert "\x00" not in json.dumps(stored, ensure_ascii=False, default=str)
    assert (run.status, run.final_answer) == ("completed", "Done\ufffd.")


def test_it_answers_deeply_nested_arguments_with_bad_json_and_goes_on(demo, fake_openai):
    # Given arguments nested 5,000 levels deep (json.loads raises RecursionError on them)
    nested = '{"order_id": ' + "[" * 5000 + "]" * 5000 + "}"
    fake_openai.enqueue(
        tool_reply(tool_call("get_order", nested, call_id="call_deep")),
        text_reply("The arguments were broken."),
    )
    run = start_run()

    # When the steps run
    drive(run)

    # Then the call was logged and answered BAD_JSON, and the run went on to its answer
    assert assert_one_answer_per_call(run, fake_openai) == ["call_deep"]
    log = ToolCallLog.objects.get(run=run)
    assert (log.ok, log.error_code, log.arguments) == (False, "BAD_JSON", None)
    assert sent_results(fake_openai, 1)["call_deep"]["error"]["code"] == "BAD_JSON"
    started = RunEvent.objects.get(run=run, type="tool_call.started")
    assert started.data["summary"] == "Looking up an order…"
    assert (run.status, run.final_answer) == ("completed", "The arguments were broken.")


def test_it_runs_both_calls_of_a_reply_that_gives_them_the_same_id(demo, fake_openai):
    # Given a reply with two different lookups under one id
    fake_openai.enqueue(
        tool_reply(
            tool_call("get_order", {"order_id": MUG}, call_id="call_dup"),
            tool_call("get_order", {"order_id": HEADPHONES}, call_id="call_dup"),
        ),
        text_reply("Both found."),
    )
    run = start_run()

    # When the steps run
    drive(run)

    # Then the first keeps its id, the second gets a derived one, and both ran
    first, second = assert_one_answer_per_call(run, fake_openai)
    assert first == "call_dup"
    assert DERIVED_ID.fullmatch(second)
    results = sent_results(fake_openai, 1)
    assert (results[first]["order_id"], results[second]["order_id"]) == (MUG, HEADPHONES)
    logs = {
        log.tool_call_id: (log.ok, log.result["order_id"])
        for log in ToolCallLog.objects.filter(run=run)
    }
    assert logs == {first: (True, MUG), second: (True, HEADPHONES)}
    assert run.status == "completed"


def test_it_runs_a_call_whose_id_an_earlier_step_already_used(demo, fake_openai):
    # Given a model that numbers its calls per reply: "call_0" in both steps
    fake_openai.enqueue(
        tool_reply(tool_call("get_order", {"order_id": MUG}, call_id="call_0")),
        tool_reply(tool_call("get_order", {"order_id": HEADPHONES}, call_id="call_0")),
        text_reply("Both found."),
    )
    run = start_run()

    # When the steps run
    drive(run)

    # Then the second step's call ran under a new id instead of replaying the first's result
    assert assert_one_answer_per_call(run, fake_openai, step=1) == ["call_0"]
    (second,) = assert_one_answer_per_call(run, fake_openai, step=2)
    assert DERIVED_ID.fullmatch(second)
    assert sent_results(fake_openai, 2)[second]["order_id"] == HEADPHONES
    logs = {log.tool_call_id: log.result["order_id"] for log in ToolCallLog.objects.filter(run=run)}
    assert logs == {"call_0": MUG, second: HEADPHONES}
    assert run.status == "completed"


@pytest.fixture
def counting_tool():
    """A read tool that takes a number, so every call is distinct; records the numbers."""
    seen: list[int] = []
    lock = threading.Lock()

    def handler(ctx, args):
        with lock:
            seen.append(args["n"])
        return {"n": args["n"]}

    tool = Tool(
        name="count_probe",
        description="Test probe.",
        kind=ToolKind.READ,
        roles=SUPPORT_ROLES,
        handler=handler,
        parameters={
            "type": "object",
            "properties": {"n": {"type": "integer"}},
            "required": ["n"],
            "additionalProperties": False,
        },
    )
    with registered_tool(tool):
        yield seen


def test_it_runs_sixteen_calls_of_a_reply_and_answers_the_seventeenth_too_many_calls(
    demo, fake_openai, counting_tool
):
    # Given the default limit (16) and a reply with 17 distinct calls
    fake_openai.enqueue(
        tool_reply(
            *[tool_call("count_probe", {"n": n}, call_id=f"call_{n:02d}") for n in range(1, 18)]
        ),
        text_reply("Counted."),
    )
    run = start_run()

    # When the steps run
    drive(run)

    # Then the first 16 ran, the 17th did not
    assert sorted(counting_tool) == list(range(1, 17))
    # and all 17 have their log row and answer, the 17th TOO_MANY_CALLS
    ids = assert_one_answer_per_call(run, fake_openai)
    assert ids == [f"call_{n:02d}" for n in range(1, 18)]
    logs = {
        log.tool_call_id: (log.ok, log.error_code, log.retryable)
        for log in ToolCallLog.objects.filter(run=run)
    }
    assert logs == {
        **{f"call_{n:02d}": (True, "", False) for n in range(1, 17)},
        "call_17": (False, "TOO_MANY_CALLS", True),
    }
    refused = sent_results(fake_openai, 1)["call_17"]["error"]
    assert refused["message"] == (
        "One reply may make at most 16 tool calls; only the first 16 were run. Make this "
        "call again in your next reply if you still need it."
    )
    assert (run.status, run.final_answer) == ("completed", "Counted.")


def test_it_refuses_arguments_over_the_size_cap_without_reading_them(demo, fake_openai):
    # Given a search_policies call with 20,000 characters of arguments
    arguments = json.dumps({"query": "x" * 20_000})
    fake_openai.enqueue(
        tool_reply(tool_call("search_policies", arguments, call_id="call_big")),
        text_reply("Too long."),
    )
    run = start_run()

    # When the steps run
    drive(run)

    # Then the call was logged and answered ARGUMENTS_TOO_LARGE, with nothing parsed
    assert assert_one_answer_per_call(run, fake_openai) == ["call_big"]
    log = ToolCallLog.objects.get(run=run)
    assert (log.ok, log.error_code, log.arguments, log.args_digest) == (
        False,
        "ARGUMENTS_TOO_LARGE",
        None,
        "",
    )
    assert log.result["error"]["message"] == (
        f"The arguments are {len(arguments)} characters long; at most 16000 are read. Send "
        "only the fields of the search_policies schema."
    )
    assert log.result["error"]["next_actions"] == ["search_policies"]
    assert (run.status, run.final_answer) == ("completed", "Too long.")


def test_it_reads_arguments_sent_as_a_json_object_instead_of_a_string(demo, fake_openai):
    # Given a compatible server that sends the arguments as an object
    call = tool_call("get_order", {}, call_id="call_object")
    call["function"]["arguments"] = {"order_id": MUG}
    fake_openai.enqueue(tool_reply(call), text_reply("Paid 129.00."))
    run = start_run()

    # When the steps run
    drive(run)

    # Then the call ran with those arguments, saved and sent back as their JSON
    assert assert_one_answer_per_call(run, fake_openai) == ["call_object"]
    log = ToolCallLog.objects.get(run=run)
    assert (log.ok, log.arguments_raw) == (True, '{"order_id": "202610110087"}')
    assert (run.status, run.final_answer) == ("completed", "Paid 129.00.")


def test_it_fails_the_run_readably_on_arguments_that_are_neither_text_nor_an_object(
    demo, fake_openai
):
    call = tool_call("get_order", {}, call_id="call_number")
    call["function"]["arguments"] = 5
    fake_openai.enqueue(tool_reply(call))
    run = start_run()

    drive(run)

    assert (run.status, run.stop_reason) == ("failed", "error")
    assert run.error == (
        "The model call failed: the model returned a malformed response: "
        "tool call arguments that are neither text nor an object."
    )
    assert ToolCallLog.objects.filter(run=run).count() == 0
    assert AgentMessage.objects.filter(run=run, role="assistant").count() == 0
