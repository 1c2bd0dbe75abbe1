"""Any OpenAI-compatible Chat Completions endpoint, through the official `openai` client."""

import json
import logging
import time
from email.utils import parsedate_to_datetime

import httpx2
import openai
from django.conf import settings

from agent.providers.answer_format import answer_format, answers_in_json
from agent.providers.completion import StreamAssembler, malformed, parse_completion
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
