"""Reading a chat completion's JSON into a ModelReply, and adding a stream's chunks up to the
completion they stand for, so a streamed and an unstreamed answer are validated alike. No I/O
here: the provider (agent/providers/openai_client.py) talks to the endpoint and hands the JSON
over."""

import json
from dataclasses import dataclass, field

from agent.providers.llm import ModelError, ModelReply


def malformed(reason: str) -> ModelError:
    return ModelError(f"the model returned a malformed response: {reason}", retryable=False)


def member(value: object, name: str, default=None):
    """`value[name]` when `value` is a JSON object, else `default`. The endpoint's answer is
    read as JSON, as leniently as the client's own models would read it: a member missing or
    of the wrong kind is the same as one left out."""
    return value.get(name, default) if isinstance(value, dict) else default


def parse_completion(response: object) -> ModelReply:
    """A ModelReply from a chat completion's JSON. Tool-call arguments stay raw strings: the
    executor parses them once the whole response is in."""
    if isinstance(response, str):
        # A body sent as some other content type is still read if it is JSON.
        try:
            response = json.loads(response)
        except ValueError:
            raise malformed("the body is not a chat completion") from None
    choices = member(response, "choices")
    if not isinstance(choices, list):
        raise malformed("no choices")
    if not choices:
        raise malformed("empty choices")
    message = member(choices[0], "message")
    if not isinstance(message, dict):
        raise malformed("the first choice has no message")
    calls = member(message, "tool_calls") or []
    if not isinstance(calls, list):
        raise malformed("a tool call without an id or a function name")
    tool_calls = []
    for call in calls:
        name = member(member(call, "function"), "name")
        if not member(call, "id") or not isinstance(name, str):
            raise malformed("a tool call without an id or a function name")
        arguments = member(call["function"], "arguments") or ""
        if isinstance(arguments, dict):
            # Some compatible servers send the arguments as an object instead of its JSON.
            arguments = json.dumps(arguments, ensure_ascii=False)
        if not isinstance(arguments, str):
            raise malformed("tool call arguments that are neither text nor an object")
        tool_calls.append(
            {
                "id": call["id"],
                "type": "function",
                "function": {"name": name, "arguments": arguments.strip() or "{}"},
            }
        )
    content = member(message, "content")
    if content is not None and not isinstance(content, str):
        raise malformed("message content is not text")
    usage = member(response, "usage")
    return ModelReply(
        content=content or "",
        tool_calls=tool_calls,
        finish_reason=member(choices[0], "finish_reason") or "stop",
        tokens_in=member(usage, "prompt_tokens") or 0,
        tokens_out=member(usage, "completion_tokens") or 0,
        tokens_cached=cached_tokens(usage, member(response, "timings")),
    )


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def cached_tokens(usage: object, timings: object = None) -> int:
    """Prompt tokens the endpoint read from its prompt cache, where it says: OpenAI's
    `usage.prompt_tokens_details.cached_tokens`, or llama.cpp's `timings.prompt_n` (the prompt
    tokens it had to read) short of the prompt; 0 where it says neither."""
    cached = _count(member(member(usage, "prompt_tokens_details"), "cached_tokens"))
    if cached is not None:
        return cached
    prompt, evaluated = _count(member(usage, "prompt_tokens")), _count(member(timings, "prompt_n"))
    if prompt is not None and evaluated is not None:
        return max(prompt - evaluated, 0)
    return 0


@dataclass
class PartialToolCall:
    """One tool call as its chunks arrive: the id and the name once, the arguments in
    fragments (text), or whole (an object, from some compatible servers)."""

    id: str | None = None
    name: str | None = None
    fragments: list = field(default_factory=list)

    def arguments(self):
        if all(isinstance(fragment, str) for fragment in self.fragments):
            return "".join(self.fragments)
        # Not text: parse_completion takes a lone object and refuses anything else.
        return self.fragments[0] if len(self.fragments) == 1 else self.fragments


class StreamAssembler:
    """Chat completion chunks in, the message they add up to out. Only the first choice
    counts, as parse_completion reads only the first choice of an unstreamed reply."""

    def __init__(self):
        self.content: list = []
        self.calls: dict[int, PartialToolCall] = {}
        self.finish_reason: str | None = None
        self.usage: dict | None = None
        self.chunk_id = ""
        self.model = ""

    def add(self, chunk: object) -> str:
        """Take one chunk's JSON; returns the text it adds to the answer ("" if none)."""
        self.chunk_id = self.chunk_id or member(chunk, "id") or ""
        self.model = self.model or member(chunk, "model") or ""
        usage = member(chunk, "usage")
        if usage is not None:
            self.usage = {
                "prompt_tokens": member(usage, "prompt_tokens") or 0,
                "completion_tokens": member(usage, "completion_tokens") or 0,
                "prompt_tokens_details": {
                    "cached_tokens": cached_tokens(usage),
                },
            }
        choices = member(chunk, "choices")
        choices = choices if isinstance(choices, list) else []
        choice = next((c for c in choices if isinstance(c, dict) and c.get("index", 0) == 0), None)
        if choice is None:
            return ""
        if choice.get("finish_reason"):
            self.finish_reason = choice["finish_reason"]
        delta = choice.get("delta")
        tool_calls = member(delta, "tool_calls") or []
        for call in tool_calls if isinstance(tool_calls, list) else []:
            self.add_tool_call(call)
        text = member(delta, "content")
        if text is None or text == "":
            return ""
        self.content.append(text)
        return text if isinstance(text, str) else ""

    def add_tool_call(self, delta: object) -> None:
        index = member(delta, "index")
        call_id = member(delta, "id")
        if not isinstance(index, int):
            # Servers that leave the index out start each call with its id.
            last = max(self.calls, default=-1)
            starts_new = call_id and (last < 0 or self.calls[last].id not in (None, call_id))
            index = last + 1 if starts_new or last < 0 else last
        call = self.calls.setdefault(index, PartialToolCall())
        call.id = call.id or call_id
        function = member(delta, "function")
        call.name = call.name or member(function, "name")
        arguments = member(function, "arguments")
        if arguments is not None and arguments != "":
            call.fragments.append(arguments)

    def completion(self) -> dict:
        """The chat completion an unstreamed call would have returned, for parse_completion
        to validate both alike."""
        content = None
        if self.content:
            texts = all(isinstance(piece, str) for piece in self.content)
            content = "".join(self.content) if texts else self.content[0]
        message: dict = {"role": "assistant", "content": content}
        if self.calls:
            message["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments()},
                }
                for _, call in sorted(self.calls.items())
            ]
        return {
            "id": self.chunk_id,
            "object": "chat.completion",
            "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": self.finish_reason}],
            "usage": self.usage,
        }
