"""What a model provider is: Chat Completions message shapes in, a ModelReply out.

The implementations (openai_client.py, offline/) import this module; the one a
run uses is chosen in agent/providers/__init__.py.
"""

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

# Receives the answer's text as it arrives, piece by piece, from a provider that streams. It
# may be called on any thread and must never raise into the provider.
TextSink = Callable[[str], None]


@dataclass
class ModelReply:
    """One complete model response. `tool_calls` are in Chat Completions shape:
    [{"id": "call_1", "type": "function", "function": {"name": ..., "arguments": "<json>"}}]
    with `arguments` still the raw string the model produced (parsed later by the executor).
    """

    content: str = ""
    tool_calls: list[dict] = field(default_factory=list)
    finish_reason: str = "stop"
    tokens_in: int = 0
    tokens_out: int = 0
    # Of tokens_in, those the endpoint read from its prompt cache (0 when it does not say).
    tokens_cached: int = 0


class ModelError(Exception):
    """The model call failed. `retryable` errors (timeout, 429, 5xx) are retried by the step,
    not before `retry_after` seconds when the endpoint said how long to wait. A
    `context_too_long` error is retried once with a shorter history
    (agent/runtime/step_model.py)."""

    def __init__(
        self,
        message: str,
        *,
        retryable: bool,
        retry_after: float | None = None,
        context_too_long: bool = False,
    ):
        super().__init__(message)
        self.message = message
        self.retryable = retryable
        self.retry_after = retry_after
        self.context_too_long = context_too_long


class Provider(Protocol):
    name: str
    model: str

    def complete(
        self,
        *,
        messages: list[dict],
        tools: list[dict],
        tool_choice: str = "auto",
        on_text: TextSink | None = None,
    ) -> ModelReply: ...
