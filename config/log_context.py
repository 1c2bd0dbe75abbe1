"""The context every log line carries: which request, run, refund and tool call it belongs to.

One refund is traced across the web and the worker by four fields, kept in a context variable
(so each thread, asyncio task and Celery task has its own) and copied onto every log record by
LogContextFilter (ops/logs.py, which the settings' LOGGING names):

* request_id         the HTTP request's X-Request-ID (ops.middleware.RequestId); a Celery
                     task inherits the id of whoever enqueued it (ops/worker.py), so a
                     reviewer's approval and the execution it enqueued share it
* run_id             the assistant run a step works on (agent/tasks.py)
* refund_request_id  the refund's own request_id, "rf_…" (refunds/tasks.py, and web pages
                     whose URL names it)
* tool_call_id       the tool call being executed (agent/executor/calls.py)

The format shows the ones that are set after the message: `… [req=… run=… refund=… call=…]`.
"""

import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar, Token
from types import MappingProxyType

# Record attribute -> the short name the log line shows.
FIELDS = {
    "request_id": "req",
    "run_id": "run",
    "refund_request_id": "refund",
    "tool_call_id": "call",
}

_context: ContextVar[Mapping[str, str]] = ContextVar("log_context", default=MappingProxyType({}))

# What may go into a log line from outside (a client's X-Request-ID, a URL): ids, not text
# that could forge a line or smuggle control characters.
MAX_ID_LENGTH = 128
SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}", re.ASCII)
UNSAFE_CHARACTER = re.compile(r"[^A-Za-z0-9._:-]", re.ASCII)


def is_safe_id(value: str) -> bool:
    return bool(SAFE_ID.fullmatch(value))


def current_log_context() -> Mapping[str, str]:
    return _context.get()


def loggable_id(value: object) -> str:
    """`value` as it may appear in a log line: a model's tool call id, for one, is whatever
    the model sent."""
    text = str(value)
    return text if is_safe_id(text) else UNSAFE_CHARACTER.sub("?", text)[:MAX_ID_LENGTH]


def _fields(fields: Mapping[str, object]) -> dict[str, str]:
    unknown = set(fields) - set(FIELDS)
    if unknown:
        raise ValueError(f"not log context fields: {sorted(unknown)}")
    return {name: loggable_id(value) for name, value in fields.items() if value not in (None, "")}


def _merged(fields: Mapping[str, object]) -> Mapping[str, str]:
    return MappingProxyType({**_context.get(), **_fields(fields)})


def bind_log_context(**fields: object) -> Token:
    """Add `fields` to the context until reset_log_context(token); for a start and an end
    that are two separate calls (Celery's task_prerun / task_postrun)."""
    return _context.set(_merged(fields))


def reset_log_context(token: Token) -> None:
    _context.reset(token)


def replace_log_context(**fields: object) -> None:
    """Start a fresh context with only `fields` (a new HTTP request on a reused thread)."""
    _context.set(MappingProxyType(_fields(fields)))


@contextmanager
def log_context(**fields: object) -> Iterator[None]:
    """Within the block, every log line also names `fields` (None or "" leaves one out)."""
    token = bind_log_context(**fields)
    try:
        yield
    finally:
        _context.reset(token)
