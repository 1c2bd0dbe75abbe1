"""Adding streamed chunks up to the completion they stand for (agent/providers/completion.py),
for the servers that stream tool calls in ways the fake server does not."""

from agent.providers.completion import StreamAssembler, parse_completion


def _chunk(delta: dict, finish_reason: str | None = None) -> dict:
    return {"id": "c1", "model": "m", "choices": [{"delta": delta, "finish_reason": finish_reason}]}


def test_calls_streamed_without_an_index_are_told_apart_by_their_ids():
    assembler = StreamAssembler()
    for delta in (
        {"tool_calls": [{"id": "a", "function": {"name": "get_order", "arguments": '{"order_'}}]},
        {"tool_calls": [{"function": {"arguments": 'id": "A-1"}'}}]},
        {"tool_calls": [{"id": "b", "function": {"name": "search_policies"}}]},
        {"tool_calls": [{"function": {"arguments": '{"query": "damaged"}'}}]},
    ):
        assembler.add(_chunk(delta))
    assembler.add(_chunk({}, finish_reason="tool_calls"))

    reply = parse_completion(assembler.completion())

    assert [(call["id"], call["function"]) for call in reply.tool_calls] == [
        ("a", {"name": "get_order", "arguments": '{"order_id": "A-1"}'}),
        ("b", {"name": "search_policies", "arguments": '{"query": "damaged"}'}),
    ]


def test_a_call_whose_id_is_repeated_in_every_chunk_stays_one_call():
    assembler = StreamAssembler()
    for fragment in ('{"order_id"', ': "A-1"}'):
        assembler.add(
            _chunk(
                {
                    "tool_calls": [
                        {"id": "a", "function": {"name": "get_order", "arguments": fragment}}
                    ]
                }
            )
        )
    assembler.add(_chunk({}, finish_reason="tool_calls"))

    reply = parse_completion(assembler.completion())

    assert [call["function"]["arguments"] for call in reply.tool_calls] == ['{"order_id": "A-1"}']
