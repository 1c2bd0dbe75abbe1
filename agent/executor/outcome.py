"""A call's outcome as data, and the outcome of running its handler on a call thread."""

import json
import logging
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass

from django.conf import settings

from agent.context import RunContext, ToolContext
from agent.errors import ErrorCode, NextAction, ToolError
from agent.executor.arguments import _dumps, _jsonable, clean_text
from agent.privacy import mask_result_for_model
from agent.tools.paging import MAX_RESULT_CHARS, longest_page
from agent.tools.registry import Tool, ToolKind

logger = logging.getLogger(__name__)


@dataclass
class Outcome:
    result: dict
    arguments: object = None
    args_digest: str = ""
    retryable: bool = False
    error_code: str = ""
    # The whole JSON text of a success result over the cap; `result` is then its cut form.
    full_text: str = ""
    # The log row whose result this is, when the call was answered from the log, not run.
    answered_from: int | None = None


def _failure(
    code: str,
    message: str,
    *,
    retryable: bool = False,
    next_actions: list[str] | None = None,
    **extra,
) -> Outcome:
    error = ToolError(
        code, message, retryable=retryable, next_actions=next_actions or [], extra=extra
    )
    # Messages may quote what the model sent (a tool name, argument names): clean them too.
    return Outcome(result=_jsonable(error.as_result()), retryable=retryable, error_code=code)


# Waits for a handler's Future for at most `timeout` seconds (raising TimeoutError); a step
# passes one that renews its lease while it waits.
Wait = Callable[[Future, float], object]


def _source(ctx: ToolContext) -> str:
    """Where a call came from, for the server log."""
    if isinstance(ctx, RunContext):
        return f"run {ctx.run.pk}"
    return f"MCP session {ctx.mcp_session.pk}"


def _internal_error(tool: Tool) -> Outcome:
    if tool.kind == ToolKind.WRITE:
        return _failure(
            ErrorCode.INTERNAL_ERROR,
            "The tool failed on our side. Whether anything was recorded is not "
            "known; check with get_refund_status before doing anything else.",
            next_actions=["get_refund_status"],
        )
    return _failure(
        ErrorCode.INTERNAL_ERROR,
        "The tool failed on our side. Continue without it or tell the user.",
        next_actions=[NextAction.ASK_AGENT],
    )


def _wait(future: Future, timeout: float):
    return future.result(timeout)


def _handler_outcome(
    ctx: ToolContext, tool: Tool, future: Future, *, wait: Wait | None, timeout: float
) -> Outcome:
    """The outcome of the handler running on one of the process's call threads
    (pool.py), waited for at most `timeout` seconds.

    A stuck call is abandoned, not killed: its thread finishes on its own, and its result is
    dropped.
    """
    try:
        data = (wait or _wait)(future, timeout)
    except TimeoutError:
        logger.warning(
            "Tool %s timed out after %ss (%s)", tool.name, settings.TOOL_TIMEOUT_S, _source(ctx)
        )
        if tool.kind == ToolKind.WRITE:
            return _failure(
                ErrorCode.TOOL_TIMEOUT,
                f"{tool.name} did not answer in time. Its outcome is unknown: it "
                "may or may not have been recorded. Call get_refund_status; do "
                "not call it again blindly.",
                next_actions=["get_refund_status"],
                status="unknown",
            )
        return _failure(
            ErrorCode.TOOL_TIMEOUT,
            f"{tool.name} did not answer in time.",
            retryable=True,
            next_actions=[tool.name],
        )
    except ToolError as refusal:
        return Outcome(
            result=_jsonable(refusal.as_result()),
            retryable=refusal.retryable,
            error_code=refusal.code,
        )
    except Exception:
        logger.exception("Tool %s failed (%s)", tool.name, _source(ctx))
        return _internal_error(tool)
    if not isinstance(data, dict):
        logger.error("Tool %s returned %s, not a dict", tool.name, type(data).__name__)
        return _internal_error(tool)
    result = {"ok": True, **{key: value for key, value in data.items() if key != "ok"}}
    # Masked here, once: the log row keeps what the model (or MCP host) is sent (DESIGN §17).
    result = mask_result_for_model(result, customer=ctx.customer)
    try:
        text = clean_text(_dumps(result))
    except (TypeError, ValueError):
        logger.exception("Tool %s returned a result that is not JSON", tool.name)
        return _internal_error(tool)
    # Read back from its JSON, cleaned as a whole: what is stored is what the JSON says. A NUL
    # is escaped there, and only then does every string need cleaning once more.
    result = json.loads(text)
    if "\\u0000" in text:
        result = _jsonable(result)
    if len(text) <= MAX_RESULT_CHARS:
        return Outcome(result=result)
    # The text again from the cleaned result: what is stored and paged must be storable.
    text = _dumps(result)
    return Outcome(result=truncated(text), full_text=text)


def truncated(text: str, *, ref: str = "", stored: int = 0) -> dict:
    """The shape of a success result whose JSON is longer than MAX_RESULT_CHARS: the longest
    prefix of that JSON, as a string, that keeps the whole answer within the cap.

    With `ref`, the first `stored` characters of `text` were kept under it, and the answer
    says where read_tool_result continues.
    """
    total = len(text)
    readable = min(stored, total) if ref else 0
    if not readable:
        message = (
            f"The result was longer than {MAX_RESULT_CHARS} characters and was cut. Ask "
            "for less (a smaller limit or a narrower query)."
        )
    else:
        message = (
            f"The result was longer than {MAX_RESULT_CHARS} characters; this is its start. "
            "If you need the rest, call read_tool_result with this result_ref and "
            "offset=next_offset; or ask for less (a smaller limit or a narrower query)."
        )
        if readable < total:
            message += (
                f" Only the first {readable} of {total} characters were kept; the rest "
                "cannot be read."
            )

    def first_part(end: int) -> dict:
        result: dict = {"truncated": True, "total": total}
        if readable:
            result["result_ref"] = ref
            result["offset"] = 0
            result["next_offset"] = end if end < readable else None
            if readable < total:
                result["stored"] = readable
        result["message"] = message
        result["content"] = text[:end]
        return result

    return {"ok": True, **longest_page(text, 0, first_part)}
