"""A call's ToolCallLog row: written once, and the logged result when a call id comes again."""

import time
from dataclasses import dataclass

from django.conf import settings
from django.db import IntegrityError, transaction

from agent.context import RunContext, ToolContext
from agent.executor.arguments import (
    MAX_ARGUMENTS_CHARS,
    TEXT_LIMIT,
    _digest,
    _jsonable,
    _parse,
    clean_text,
)
from agent.executor.outcome import Outcome, truncated
from agent.models import ToolCallLog
from agent.tools.paging import result_ref
from agent.tools.registry import get_tool
from config.canonical import canonical_json


class CallIdReused(Exception):
    """A call id its run or session logged for another call (another tool, other arguments):
    the earlier call's result is not this one's. Nothing was run and no row written (the id
    has its row already)."""

    def __init__(self, tool_call_id: str):
        self.message = (
            f"The call id {tool_call_id} was already used for another call; nothing was run. "
            "Send each call with an id of its own."
        )
        super().__init__(self.message)


@dataclass(frozen=True)
class _LoggedCall:
    tool_call_id: str
    tool_name: str
    arguments_raw: str
    result: dict


def _logged_call(ctx: ToolContext, tool_call_id: str) -> _LoggedCall | None:
    if isinstance(ctx, RunContext):
        calls = ToolCallLog.objects.filter(run=ctx.run, tool_call_id=tool_call_id)
    else:
        calls = ToolCallLog.objects.filter(mcp_session=ctx.mcp_session, tool_call_id=tool_call_id)
    row = calls.values_list("tool_name", "arguments_raw", "result").first()
    return None if row is None else _LoggedCall(tool_call_id, *row)


def _replayed(logged: _LoggedCall, *, name: str, arguments_raw: str) -> dict:
    """The logged result, when the call asked for again is the logged one."""
    if _call_digest(name, arguments_raw) != _call_digest(logged.tool_name, logged.arguments_raw):
        raise CallIdReused(logged.tool_call_id)
    return logged.result


def _call_digest(name: str, arguments_raw: str) -> str:
    """A call as its log row names it: the tool, and the arguments in canonical form (the
    text itself when it is not JSON), so the same call sent again with other spacing or key
    order is the same call."""
    text = clean_text(arguments_raw or "")
    parsed, problem = _parse(text) if len(text) <= MAX_ARGUMENTS_CHARS else (None, "too long")
    arguments = text if problem else canonical_json(_jsonable(parsed))
    return _digest([clean_text(name or "")[:TEXT_LIMIT], arguments])


def _log_row(
    ctx: ToolContext,
    *,
    tool_call_id: str,
    name: str,
    arguments_raw: str,
    outcome: Outcome,
    started: float,
) -> ToolCallLog:
    """The call's log row, not yet saved."""
    row = ToolCallLog(
        run=ctx.run,
        mcp_session=ctx.mcp_session,
        ticket=ctx.ticket,
        tool_call_id=tool_call_id,
        tool_name=clean_text(name or "")[:TEXT_LIMIT],
        arguments=outcome.arguments,
        arguments_raw=clean_text(arguments_raw or ""),
        args_digest=outcome.args_digest,
        ok=outcome.result["ok"],
        result=outcome.result,
        error_code=outcome.error_code,
        retryable=outcome.retryable,
        actor=ctx.actor,
        actor_role=ctx.role,
        elapsed_ms=round((time.monotonic() - started) * 1000),
        answered_from_id=outcome.answered_from,
    )
    if outcome.full_text:
        row.full_result = outcome.full_text[: settings.TOOL_RESULT_STORE_MAX_CHARS]
    return row


def _record(ctx: ToolContext, *, row: ToolCallLog, outcome: Outcome) -> dict:
    """Save `row` on its own and return the result the model gets."""
    tool = get_tool(row.tool_name)
    try:
        with transaction.atomic():
            row.save()
            if row.full_result:
                # The ref names the row, so the answer is final only once the row exists.
                row.result = outcome.result = truncated(
                    outcome.full_text, ref=result_ref(row), stored=len(row.full_result)
                )
                row.save(update_fields=["result"])
            if (
                row.ok
                and row.answered_from_id is None
                and tool is not None
                and tool.after_logged is not None
            ):
                tool.after_logged(row)
    except IntegrityError:
        # Another execution under the same id logged first: its answer is the answer, if it
        # was the same call.
        winner = _logged_call(ctx, row.tool_call_id)
        if winner is None:
            raise
        return _replayed(winner, name=row.tool_name, arguments_raw=row.arguments_raw)
    return outcome.result
