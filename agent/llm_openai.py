"""Any OpenAI-compatible Chat Completions endpoint, through the official `openai` client."""

import json
import time
from email.utils import parsedate_to_datetime

import openai
from django.conf import settings

from agent.llm import ModelError, ModelReply, TextSink

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

    def complete(
        self,
        *,
        messages: list[dict],
        tools: list[dict],
        tool_choice: str = "auto",
        on_text: TextSink | None = None,
    ) -> ModelReply:
        options: dict = {}
        if tools:
            options = {"tools": tools, "tool_choice": tool_choice, "parallel_tool_calls": True}
        try:
            # The transcript is provider-neutral JSON in Chat Completions shape (agent/llm.py);
            # the SDK types `messages` as a union of per-role TypedDicts that a plain dict
            # cannot match without rebuilding every message.
            response = self.client.chat.completions.create(
                model=self.model,
                messages=messages,  # type: ignore[arg-type]
                **options,
            )
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
        return parse_completion(response)


def refused(exc: openai.APIStatusError) -> ModelError:
    return ModelError(
        f"the model endpoint refused the request (HTTP {exc.status_code}): {_detail(exc)}",
        retryable=False,
    )


def parse_completion(response) -> ModelReply:
    """A ModelReply from a ChatCompletion. Tool-call arguments stay raw strings: the executor
    parses them once the whole response is in."""
    if isinstance(response, str | bytes):
        raise malformed("the body is not a chat completion")
    choices = getattr(response, "choices", None)
    if not isinstance(choices, list):
        raise malformed("no choices")
    if not choices:
        raise malformed("empty choices")
    message = getattr(choices[0], "message", None)
    if message is None:
        raise malformed("the first choice has no message")
    tool_calls = []
    for call in getattr(message, "tool_calls", None) or []:
        function = getattr(call, "function", None)
        name = getattr(function, "name", None)
        if not getattr(call, "id", None) or not isinstance(name, str):
            raise malformed("a tool call without an id or a function name")
        arguments = getattr(function, "arguments", None) or ""
        if isinstance(arguments, dict):
            # Some compatible servers send the arguments as an object instead of its JSON.
            arguments = json.dumps(arguments, ensure_ascii=False)
        if not isinstance(arguments, str):
            raise malformed("tool call arguments that are neither text nor an object")
        tool_calls.append(
            {
                "id": call.id,
                "type": "function",
                "function": {"name": name, "arguments": arguments.strip() or "{}"},
            }
        )
    content = getattr(message, "content", None)
    if content is not None and not isinstance(content, str):
        raise malformed("message content is not text")
    usage = getattr(response, "usage", None)
    return ModelReply(
        content=content or "",
        tool_calls=tool_calls,
        finish_reason=getattr(choices[0], "finish_reason", None) or "stop",
        tokens_in=getattr(usage, "prompt_tokens", 0) or 0,
        tokens_out=getattr(usage, "completion_tokens", 0) or 0,
    )
