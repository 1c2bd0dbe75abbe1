"""Streamed model answers (issue 14): the real `openai` client reads real server-sent events
from the fake OpenAI server over HTTP, with the text in pieces and tool-call arguments in
fragments; the reply it adds up to is the one the same call without a stream gives, a stream
cut mid-way is retried by the step without a duplicate, and the text reaches the run's event
stream as a few coalesced `message.delta` events that Last-Event-ID resumes.
"""

import json
import threading
import time

import pytest
from django.contrib.auth import get_user_model
from openai import _base_client as openai_base_client
from rest_framework.test import APIClient

from agent.models import AgentMessage, AgentRun, RunEvent, ToolCallLog
from agent.providers.breaker import ModelBreaker
from agent.providers.llm import ModelError, ModelReply
from agent.providers.openai_client import OpenAIProvider
from agent.runtime.streaming import AnswerStream
from tests.agent.runs import drive, start_run
from tests.fakes.openai_server import (
    Streamed,
    error_body,
    stream_chunks,
    text_reply,
    tool_call,
    tool_reply,
)

pytestmark = pytest.mark.django_db(transaction=True)

MUG = "202610110087"
LONG_ANSWER = (
    "The customer paid 129.00 CNY for the ceramic mug, which was delivered five days ago; "
    "it is within the return window and a damaged item qualifies for a full refund."
)


@pytest.fixture
def breaker(fake_openai, settings):
    """The fake endpoint's breaker, closed before and after: cut streams count as failures."""
    settings.LLM_BREAKER_THRESHOLD = 5
    breaker = ModelBreaker.for_provider(OpenAIProvider())
    breaker.record_success()
    yield breaker
    breaker.record_success()


def ask(on_text=None) -> ModelReply:
    return OpenAIProvider().complete(
        messages=[{"role": "user", "content": "The mug arrived broken."}],
        tools=[],
        on_text=on_text,
    )


def two_calls_and_text() -> dict:
    return tool_reply(
        tool_call("get_order", {"order_id": MUG, "note": "ünïcode ✓"}, call_id="call_a"),
        tool_call("search_policies", {"query": "damaged items, refund window"}, call_id="call_b"),
        content="Let me look that up.",
        prompt_tokens=321,
        completion_tokens=45,
    )


def deltas(run) -> list[dict]:
    return [
        event.data
        for event in RunEvent.objects.filter(run=run, type="message.delta").order_by("seq")
    ]


def text_from(delta_events: list[dict]) -> str:
    """The answer as a client rebuilds it: each delta continues the text at its offset."""
    text = ""
    for delta in delta_events:
        text = text[: delta["offset"]] + delta["text"]
    return text


# --- the provider ----------------------------------------------------------------------


@pytest.mark.parametrize("streamed", [False, True])
def test_the_endpoint_gets_the_conversation_and_tools_as_given_with_the_api_key(
    fake_openai, settings, streamed
):
    # Given a conversation and tools as a step sends them, streamed or not
    settings.LLM_STREAM = streamed
    settings.AGENT_MODEL = "desk-model"
    fake_openai.enqueue(text_reply("Noted."))
    messages = [
        {"role": "system", "content": "You help support agents."},
        {"role": "user", "content": "The mug arrived broken. ünïcode ✓"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "get_order", "arguments": json.dumps({"order_id": MUG})},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_a", "content": '{"ok": true}'},
    ]
    tools = [
        {
            "type": "function",
            "function": {
                "name": "get_order",
                "description": "One order.",
                "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}},
            },
        }
    ]

    # When the provider asks the model
    reply = OpenAIProvider().complete(messages=messages, tools=tools, tool_choice="none")

    # Then the endpoint read the Chat Completions request with exactly those, and the key
    assert reply.content == "Noted."
    request = fake_openai.requests[0]
    stream_fields = {"stream": True, "stream_options": {"include_usage": True}}
    assert request == {
        "model": "desk-model",
        "messages": messages,
        "tools": tools,
        "tool_choice": "none",
        "parallel_tool_calls": True,
        # every call is bounded and sampled alike (DESIGN §16)
        "max_tokens": settings.LLM_MAX_TOKENS,
        "temperature": settings.LLM_TEMPERATURE,
        **(stream_fields if streamed else {}),
    }
    assert fake_openai.headers[0]["authorization"] == "Bearer test-key"
    assert fake_openai.headers[0]["content-type"] == "application/json"


def test_split_tool_call_arguments_add_up_to_the_reply_the_unstreamed_call_gives(
    fake_openai, settings
):
    # Given the same reply with two tool calls, once as a stream and once as one body
    fake_openai.enqueue(two_calls_and_text(), two_calls_and_text())
    fragments = [
        chunk["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"]
        for chunk in stream_chunks(two_calls_and_text())
        if chunk["choices"] and chunk["choices"][0]["delta"].get("tool_calls")
    ]
    assert len(fragments) > 10  # the arguments really arrive in pieces

    # When the provider asks with and without a stream
    streamed = ask()
    settings.LLM_STREAM = False
    whole = ask()

    # Then both replies are the same, tokens included
    assert streamed == whole
    assert streamed == ModelReply(
        content="Let me look that up.",
        tool_calls=[
            {
                "id": "call_a",
                "type": "function",
                "function": {
                    "name": "get_order",
                    "arguments": json.dumps({"order_id": MUG, "note": "ünïcode ✓"}),
                },
            },
            {
                "id": "call_b",
                "type": "function",
                "function": {
                    "name": "search_policies",
                    "arguments": json.dumps({"query": "damaged items, refund window"}),
                },
            },
        ],
        finish_reason="tool_calls",
        tokens_in=321,
        tokens_out=45,
    )
    # and the first request asked for a stream with its usage, the second did not
    first, second = fake_openai.requests
    assert (first["stream"], first["stream_options"]) == (True, {"include_usage": True})
    assert "stream" not in second


def test_the_answer_is_read_as_json_without_building_the_clients_models(
    fake_openai, settings, monkeypatch
):
    # Given the client's model building made to fail (it took about 0.1 ms a chunk)
    def no_models(**_):
        raise AssertionError("the answer was built into the client's models")

    monkeypatch.setattr(openai_base_client, "construct_type", no_models)
    fake_openai.enqueue(two_calls_and_text(), two_calls_and_text())

    # When the provider asks with and without a stream
    streamed = ask()
    settings.LLM_STREAM = False
    whole = ask()

    # Then both answers are read, alike
    assert streamed == whole
    assert [call["function"]["name"] for call in whole.tool_calls] == [
        "get_order",
        "search_policies",
    ]
    assert (whole.content, whole.tokens_in) == ("Let me look that up.", 321)


def test_the_text_reaches_the_sink_piece_by_piece_as_it_arrives(fake_openai):
    fake_openai.enqueue(text_reply(LONG_ANSWER))
    pieces: list[str] = []

    reply = ask(pieces.append)

    assert reply.content == LONG_ANSWER
    assert "".join(pieces) == LONG_ANSWER
    assert len(pieces) == len(LONG_ANSWER.split())


def test_tool_call_arguments_sent_as_an_object_are_read_as_their_json(fake_openai):
    call = tool_call("get_order", {}, call_id="call_object")
    call["function"]["arguments"] = {"order_id": MUG}
    fake_openai.enqueue(tool_reply(call))

    reply = ask()

    assert reply.tool_calls[0]["function"]["arguments"] == '{"order_id": "202610110087"}'


@pytest.mark.parametrize(
    ("call", "reason"),
    [
        (
            {"type": "function", "function": {"name": "get_order", "arguments": "{}"}},
            "a tool call without an id or a function name",
        ),
        (
            {"id": "call_5", "type": "function", "function": {"name": "get_order", "arguments": 5}},
            "tool call arguments that are neither text nor an object",
        ),
    ],
)
def test_a_malformed_tool_call_in_a_stream_is_refused_as_in_one_body(fake_openai, call, reason):
    fake_openai.enqueue(tool_reply(call))

    with pytest.raises(ModelError) as raised:
        ask()

    assert raised.value.message == f"the model returned a malformed response: {reason}"
    assert raised.value.retryable is False


def test_a_stream_cut_mid_way_is_a_retryable_model_error(fake_openai):
    fake_openai.enqueue(Streamed(text_reply(LONG_ANSWER), cut_after=5))
    pieces: list[str] = []

    with pytest.raises(ModelError) as raised:
        ask(pieces.append)

    assert raised.value.retryable is True
    assert raised.value.message == (
        "the model's answer was cut off mid-stream (the connection was lost)"
    )
    assert "".join(pieces) == "The customer paid 129.00 "


def test_an_endpoint_that_does_not_stream_still_answers_a_stream_request(fake_openai):
    # Given an endpoint that answers every request with one JSON body
    fake_openai.streaming = False
    fake_openai.enqueue(two_calls_and_text())
    pieces: list[str] = []

    # When the provider asks for a stream
    reply = ask(pieces.append)

    # Then it reads the body as the unstreamed call would, and the sink got nothing
    assert fake_openai.requests[0]["stream"] is True
    assert [call["id"] for call in reply.tool_calls] == ["call_a", "call_b"]
    assert (reply.content, reply.tokens_in, reply.tokens_out) == ("Let me look that up.", 321, 45)
    assert pieces == []


def test_an_endpoint_that_refuses_stream_requests_is_asked_plainly_from_then_on(fake_openai):
    # Given an endpoint that turns down the stream parameters with a 400
    def answer(request):
        if request.get("stream"):
            return error_body(400, "Unrecognized request argument supplied: stream_options")
        return text_reply("Paid 129.00.")

    fake_openai.respond_with(answer)
    provider = OpenAIProvider()

    # When it is asked twice
    first = provider.complete(messages=[{"role": "user", "content": "Paid?"}], tools=[])
    second = provider.complete(messages=[{"role": "user", "content": "Paid?"}], tools=[])

    # Then the first call was asked again without a stream, and the second asked plainly
    assert (first.content, second.content) == ("Paid 129.00.", "Paid 129.00.")
    assert [bool(request.get("stream")) for request in fake_openai.requests] == [
        True,
        False,
        False,
    ]


def test_a_bad_request_about_the_conversation_is_not_taken_for_a_streaming_refusal(fake_openai):
    fake_openai.enqueue(error_body(400, "messages[1].content must be a string"))

    with pytest.raises(ModelError, match="refused the request"):
        ask()
    assert len(fake_openai.requests) == 1


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"<html><body>502 Bad Gateway</body></html>", "the body is not a chat completion"),
        ((200, {"id": "x", "object": "chat.completion", "choices": []}), "empty choices"),
        ((200, [1, 2, 3]), "no choices"),
    ],
)
def test_garbage_answering_a_stream_request_is_refused_as_without_a_stream(
    fake_openai, body, message
):
    fake_openai.enqueue(body)

    with pytest.raises(ModelError) as raised:
        ask()

    assert raised.value.message == f"the model returned a malformed response: {message}"
    assert raised.value.retryable is False


def test_a_stream_slower_than_the_model_timeout_in_all_is_a_retryable_timeout(
    fake_openai, settings
):
    # Given chunks that each come well within the timeout, but not all of them
    settings.LLM_TIMEOUT_S = 0.5
    fake_openai.enqueue(Streamed(text_reply(LONG_ANSWER), delay=0.1))

    with pytest.raises(ModelError) as raised:
        ask()

    assert raised.value.retryable is True
    assert raised.value.message == "the model did not answer within 0.5s"


# --- the step ---------------------------------------------------------------------------


def test_a_cut_stream_is_retried_by_the_step_and_the_run_completes_with_one_of_each(
    demo, fake_openai, breaker
):
    # Given a model whose tool call and whose answer are each cut off once
    order_call = tool_reply(tool_call("get_order", {"order_id": MUG}, call_id="call_order"))
    fake_openai.enqueue(
        Streamed(order_call, cut_after=4),
        order_call,
        Streamed(text_reply(LONG_ANSWER), cut_after=6),
        text_reply(LONG_ANSWER),
    )
    run = start_run()

    # When the steps run
    drive(run)

    # Then the run completed, asking the model twice for each reply
    assert (run.status, run.final_answer) == ("completed", LONG_ANSWER)
    assert len(fake_openai.requests) == 4
    # and saved one assistant message per reply, ran the tool once, answered it once
    assistant = AgentMessage.objects.filter(run=run, role="assistant").order_by("seq")
    assert [m.content for m in assistant] == ["", LONG_ANSWER]
    assert [c["id"] for c in assistant[0].tool_calls] == ["call_order"]
    assert ToolCallLog.objects.filter(run=run).count() == 1
    assert AgentMessage.objects.filter(run=run, role="tool").count() == 1
    waits = RunEvent.objects.filter(run=run, type="message", data__kind="model.unavailable")
    assert waits.count() == 2


def test_a_slow_stream_makes_far_fewer_delta_events_than_pieces(demo, fake_openai, settings):
    # Given an answer of 30 pieces, one every 40 ms (1.2 s in all)
    settings.LLM_STREAM_FLUSH_S = 0.25
    answer = " ".join(f"word{n}" for n in range(30))
    fake_openai.enqueue(Streamed(text_reply(answer), delay=0.04))
    run = start_run()

    drive(run)

    # Then a few deltas carry the whole text, in order, at contiguous offsets
    sent = deltas(run)
    assert 2 <= len(sent) <= 8, len(sent)
    assert {delta["step"] for delta in sent} == {1}
    assert [delta["offset"] for delta in sent] == [
        sum(len(d["text"]) for d in sent[:n]) for n in range(len(sent))
    ]
    assert text_from(sent) == answer == run.final_answer
    # and the final answer still comes whole with run.completed, after the last delta
    types = list(RunEvent.objects.filter(run=run).order_by("seq").values_list("type", flat=True))
    assert types[-1] == "run.completed"
    assert types.index("model.completed") > max(
        i for i, kind in enumerate(types) if kind == "message.delta"
    )


def test_an_answer_that_arrives_at_once_makes_no_delta_event(demo, fake_openai):
    fake_openai.enqueue(text_reply(LONG_ANSWER))
    run = start_run()

    drive(run)

    assert run.final_answer == LONG_ANSWER
    assert deltas(run) == []


def test_the_deltas_resume_after_last_event_id_without_repeating_any(demo, fake_openai, settings):
    # Given a run whose answer streamed as several deltas
    settings.LLM_STREAM_FLUSH_S = 0.1
    fake_openai.enqueue(Streamed(text_reply(LONG_ANSWER), delay=0.03))
    run = start_run()
    drive(run)
    first, *rest = RunEvent.objects.filter(run=run, type="message.delta").order_by("seq")
    assert rest

    # When a client that saw the first delta reconnects with its id
    api = APIClient()
    api.force_authenticate(get_user_model().objects.get(username="agent"))
    response = api.get(f"/api/runs/{run.pk}/events/stream/", HTTP_LAST_EVENT_ID=str(first.seq))
    body = b"".join(response.streaming_content).decode()

    # Then it gets every later event once, the deltas it missed first, and can rebuild the text
    frames = [
        json.loads(line.removeprefix("data: "))
        for line in body.splitlines()
        if line.startswith("data: ")
    ]
    seqs = [frame["seq"] for frame in frames]
    assert seqs == list(range(first.seq + 1, first.seq + 1 + len(frames)))
    resumed = [frame["data"] for frame in frames if frame["type"] == "message.delta"]
    assert resumed == [event.data for event in rest]
    assert text_from([first.data, *resumed]) == LONG_ANSWER
    assert frames[-1]["type"] == "run.completed"
    assert frames[-1]["data"]["final_answer"] == LONG_ANSWER


# --- the sink ---------------------------------------------------------------------------


def test_the_sink_coalesces_pieces_from_the_model_thread_and_closes_from_another(demo, settings):
    # Given a sink fed on a thread of its own, as a pool thread would run the model call
    settings.LLM_STREAM_FLUSH_S = 0.05
    run = start_run()
    stream = AnswerStream(run=run, step=1)
    pieces = [f"p{n} " for n in range(40)]

    def feed():
        for piece in pieces:
            stream(piece)
            time.sleep(0.005)

    feeder = threading.Thread(target=feed)
    feeder.start()
    feeder.join()
    # When the step closes it from its own thread, and a late piece arrives after that
    stream.close()
    stream("too late")

    # Then the deltas add up to exactly the pieces, in far fewer events
    sent = deltas(run)
    assert text_from(sent) == "".join(pieces)
    assert 1 < len(sent) < len(pieces) // 2
    assert stream.deltas_sent == len(sent)


def test_a_sink_that_cannot_record_does_not_fail_the_model_call(demo, settings):
    # Given a sink whose run is gone, so no event can be appended
    settings.LLM_STREAM_FLUSH_S = 0
    run = start_run()
    stream = AnswerStream(run=run, step=1)
    AgentRun.objects.filter(pk=run.pk).delete()

    # When pieces arrive, then it is closed, nothing is raised
    stream("The ")
    stream("mug.")
    stream.close()

    assert stream.deltas_sent == 0
    assert RunEvent.objects.filter(type="message.delta").count() == 0
