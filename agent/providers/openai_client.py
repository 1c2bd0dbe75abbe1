"""Any OpenAI-compatible Chat Completions endpoint, through the official `openai` client."""

import json
import logging
import time
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime

import httpx2
import openai
from django.conf import settings

from agent.providers.answer_format import answer_format, answers_in_json
from agent.providers.llm import ModelError, ModelReply, TextSink
from agent.providers.required_call import call_from_content, required_call_format

logger = logging.getLogger(__name__)

# Error text from the endpoint is shown to staff; keep it short.
DETAIL_CHARS = 200


def _detail(exc: Exception) -> str:
    text = " ".join(str(exc).split())
    return text[:DETAIL_CHARS] + ("…" if len(text) > DETAIL_CHARS else "")


# Statuses whose Retry-After header says when the endpoint will take calls again.
RETRY_AFTER_STATUSES = (429, 503)


def retry_after_s(exc: openai.APIStatusError) -> float | None:
    """Seconds the endpoint asked us to wait (Retry-After as seconds or as an HTTP date, or
    OpenAI's retry-after-ms), or None when it did not say."""
    if exc.status_code not in RETRY_AFTER_STATUSES:
        return None
    headers = exc.response.headers
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(float(millis) / 1000, 0.0)
        except ValueError:
            pass
    value = (headers.get("retry-after") or "").strip()
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - time.time(), 0.0)


def context_too_long(exc: openai.BadRequestError) -> bool:
    """The request was refused because the conversation does not fit the model's window."""
    return exc.code == "context_length_exceeded" or "maximum context length" in str(exc).lower()


def malformed(reason: str) -> ModelError:
    return ModelError(f"the model returned a malformed response: {reason}", retryable=False)


def member(value: object, name: str, default=None):
    """`value[name]` when `value` is a JSON object, else `default`. The endpoint's answer is
    read as JSON, as leniently as the client's own models would read it: a member missing or
    of the wrong kind is the same as one left out."""
    return value.get(name, default) if isinstance(value, dict) else default


class OpenAIProvider:
    name = "openai"

    def __init__(self):
        self.model = settings.AGENT_MODEL
        self.endpoint = settings.OPENAI_BASE_URL or "https://api.openai.com/v1"
        # Retries belong to the step (bounded, jittered, logged, visible in the run and counted
        # by the circuit breaker), not hidden in the client: one layer of retries, ours.
        self.client = openai.OpenAI(
            api_key=settings.OPENAI_API_KEY or "not-needed",
            base_url=settings.OPENAI_BASE_URL or None,
            timeout=settings.LLM_TIMEOUT_S,
            max_retries=0,
        )
        # Cleared when the endpoint turns a stream request down (one client per process and
        # endpoint: agent/providers/__init__.py).
        self.streams = True

    def complete(
        self,
        *,
        messages: list[dict],
        tools: list[dict],
        tool_choice: str = "auto",
        on_text: TextSink | None = None,
    ) -> ModelReply:
        """One model call. With LLM_STREAM (the default) the answer is streamed: its text goes
        to `on_text` as it arrives, and the reply returned is the one the same call without a
        stream gives. A stream cut off before its finish is a retryable ModelError."""
        # Always bounded and always the same sampling, whatever the endpoint's defaults are
        # (DESIGN §16).
        options: dict = {
            "max_tokens": settings.LLM_MAX_TOKENS,
            "temperature": settings.LLM_TEMPERATURE,
        }
        by_schema = (
            tools and tool_choice == "required" and settings.LLM_REQUIRED_CALL == "json_schema"
        )
        if tools:
            options.update(
                tools=tools,
                tool_choice="auto" if by_schema else tool_choice,
                parallel_tool_calls=True,
            )
        if by_schema:
            options["response_format"] = required_call_format(tools)
        elif tool_choice == "none" and answers_in_json():
            # A last call may not use tools: the structured answer can be asked for as a schema.
            options["response_format"] = answer_format()
        try:
            # A schema-bound reply is a call, not text for the panel.
            response = self.call(messages, options, None if by_schema else on_text)
        except openai.APITimeoutError as exc:
            raise ModelError(
                f"the model did not answer within {settings.LLM_TIMEOUT_S:g}s", retryable=True
            ) from exc
        except openai.APIConnectionError as exc:
            raise ModelError("the model endpoint could not be reached", retryable=True) from exc
        except openai.RateLimitError as exc:
            raise ModelError(
                "the model endpoint is rate limiting us (HTTP 429)",
                retryable=True,
                retry_after=retry_after_s(exc),
            ) from exc
        except openai.InternalServerError as exc:
            raise ModelError(
                f"the model endpoint failed (HTTP {exc.status_code})",
                retryable=True,
                retry_after=retry_after_s(exc),
            ) from exc
        except openai.BadRequestError as exc:
            if not context_too_long(exc):
                raise refused(exc) from exc
            raise ModelError(
                "the conversation is longer than the model's context window",
                retryable=False,
                context_too_long=True,
            ) from exc
        except openai.APIStatusError as exc:
            raise refused(exc) from exc
        except (openai.APIResponseValidationError, ValueError) as exc:
            raise malformed(_detail(exc)) from exc
        except openai.OpenAIError as exc:
            raise ModelError(f"the model call failed: {_detail(exc)}", retryable=False) from exc
        reply = parse_completion(response)
        if by_schema and not reply.tool_calls:
            call = call_from_content(reply.content, tools)
            if call is not None:
                reply.tool_calls, reply.content, reply.finish_reason = [call], "", "tool_calls"
        return reply

    def call(self, messages: list[dict], options: dict, on_text: TextSink | None) -> object:
        """The endpoint's answer, streamed unless LLM_STREAM is off or the endpoint turned a
        stream request down (then it is asked plainly, from then on)."""
        if settings.LLM_STREAM and self.streams:
            try:
                return self.streamed_completion(messages, options, on_text)
            except openai.BadRequestError as exc:
                if not refuses_streaming(exc):
                    raise
                logger.warning(
                    "%s refuses stream requests (%s); asking without streaming from now on",
                    self.endpoint,
                    _detail(exc),
                )
                self.streams = False
        return self.post({"messages": messages, **options}, stream=False)

    def post(self, body: dict, *, stream: bool):
        """POST /chat/completions as `client.chat.completions.create` does, with the body as
        it is: the transcript is already plain JSON in Chat Completions shape (llm.py),
        and `create` would walk all of it, and every tool's schema, to transform it against
        its TypedDicts, changing nothing at a cost of milliseconds a step. The answer comes
        back as the JSON it is, too (`object`): building the client's models of it took about
        0.1 ms a chunk, over 1.5 ms for a streamed reply with two tool calls, and only
        parse_completion reads it."""
        return self.client.post(
            "/chat/completions",
            body={"model": self.model, **body, **({"stream": True} if stream else {})},
            cast_to=object,
            options={"security": {"bearer_auth": True}},
            stream=stream,
            stream_cls=openai.Stream[object],
        )

    def streamed_completion(
        self, messages: list[dict], options: dict, on_text: TextSink | None
    ) -> object:
        """The chat completion (or, from an endpoint that answered with something else, what
        the non-streaming call would have read) of one streamed call. Errors of the call
        itself (status, connection) propagate as the client raises them."""
        started = time.monotonic()
        stream: openai.Stream[object] = self.post(
            {"messages": messages, "stream_options": {"include_usage": True}, **options},
            stream=True,
        )
        with stream:
            content_type = stream.response.headers.get("content-type", "").lower()
            if not content_type.startswith("text/event-stream"):
                # An endpoint that does not stream answers with the whole completion; the
                # client would iterate it as an empty stream.
                return unstreamed_body(stream.response, content_type)
            return assemble(stream, on_text=on_text, started=started)


def refuses_streaming(exc: openai.BadRequestError) -> bool:
    """A 400 about the stream parameters themselves (`stream`, `stream_options`), not about
    the conversation."""
    return not context_too_long(exc) and "stream" in str(exc).lower()


def refused(exc: openai.APIStatusError) -> ModelError:
    return ModelError(
        f"the model endpoint refused the request (HTTP {exc.status_code}): {_detail(exc)}",
        retryable=False,
    )


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


def unstreamed_body(response: httpx2.Response, content_type: str) -> object:
    """What the non-streaming call reads from a body that is not a stream: the JSON it holds,
    or its text when it is not JSON."""
    try:
        body = response.read()
    except httpx2.TimeoutException as exc:
        raise openai.APITimeoutError(request=response.request) from exc
    except httpx2.RequestError as exc:
        raise openai.APIConnectionError(request=response.request) from exc
    try:
        data = json.loads(body)
    except ValueError:
        if content_type.split(";")[0].strip().endswith("json"):
            raise
        return response.text
    return data


def cut_off(reason: str) -> ModelError:
    return ModelError(f"the model's answer was cut off mid-stream ({reason})", retryable=True)


def assemble(stream, *, on_text: TextSink | None, started: float) -> dict:
    """Read `stream` to its end into the chat completion it stands for, handing each piece of
    text to `on_text` on the way. The whole call may take LLM_TIMEOUT_S, as an unstreamed one:
    the client's timeout only bounds the wait for each chunk."""
    assembler = StreamAssembler()
    try:
        for chunk in stream:
            text = assembler.add(chunk)
            if text and on_text is not None:
                on_text(text)
            if time.monotonic() - started > settings.LLM_TIMEOUT_S:
                raise ModelError(
                    f"the model did not answer within {settings.LLM_TIMEOUT_S:g}s",
                    retryable=True,
                )
    except openai.APITimeoutError:
        raise
    except openai.APIConnectionError as exc:
        raise cut_off("the connection was lost") from exc
    except openai.APIError as exc:
        # An error event in the stream: the endpoint failed while it answered.
        raise ModelError(
            f"the model endpoint failed mid-answer: {_detail(exc)}", retryable=True
        ) from exc
    if assembler.finish_reason is None:
        raise cut_off("it ended without a finish reason")
    return assembler.completion()


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
