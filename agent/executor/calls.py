"""Runs one tool call the model asked for and logs it (DESIGN §1 invariants 2, 3, 10; §6).

Pipeline, first failure wins: cancelled run → past the reply's call limit → unknown tool →
role → argument size → JSON → schema → repeated call → handler (scope and business rules)
under a timeout → result cap. Every outcome, success or not, is returned as data and written
as exactly one ToolCallLog row. A result over the cap is sent cut, and kept whole (up to
TOOL_RESULT_STORE_MAX_CHARS) in its row for read_tool_result to page through.

An MCP host's call (DESIGN §12) takes the same path in an McpContext. What only makes sense
for a model loop the desk drives itself (cancellation, the per-reply call limit, repeat
detection) applies to runs only; instead, an MCP call first checks that the user still holds
the role the session started with, then the session's calls per minute, and a call the
session made already is answered from the log (mcp_calls.py, DESIGN §17).
"""

import difflib
import time
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, replace

from django.conf import settings
from django.db import connection

from agent.context import McpContext, RunContext, ToolContext
from agent.errors import ErrorCode, NextAction
from agent.executor.arguments import (
    MAX_ARGUMENTS_CHARS,
    TEXT_LIMIT,
    _digest,
    _jsonable,
    _parse,
    clean_text,
)
from agent.executor.log import _log_row, _logged_call, _record, _replayed
from agent.executor.mcp_calls import answered_before, rate_limited
from agent.executor.outcome import Outcome, Wait, _failure, _handler_outcome
from agent.executor.pool import call_threads
from agent.executor.prior import LogChecks, StepChecks
from agent.metrics import observe_tool_call
from agent.models import ToolCallLog
from agent.tools.registry import Tool, get_tool, tool_names
from agent.tools.validation import json_type_name, validate_arguments
from config.log_context import log_context

# The same call (name + canonical arguments) may run this many times in a run; the next one
# answers REPEATED_CALL, which breaks a model stuck in a loop.
MAX_IDENTICAL_CALLS = 2


def execute_tool_call(
    ctx: ToolContext,
    *,
    tool_call_id: str,
    name: str,
    arguments_raw: str,
    position_in_reply: int = 0,
) -> dict:
    """Run one tool call of `ctx.run` (or of `ctx.mcp_session`) and return the result to send
    back to the model.

    `position_in_reply` is the call's index among the tool calls of its model reply: calls
    from AGENT_MAX_TOOL_CALLS_PER_STEP on are answered TOO_MANY_CALLS and not run.

    Precondition: no transaction is open. The handler runs on a call thread (pool.py)
    with its own database connection, so it could not see uncommitted rows, and the log row
    must commit on its own. The same call (tool and canonical arguments) already logged under
    `tool_call_id` returns the logged result and runs nothing; another call under that id
    raises CallIdReused.
    """
    if connection.in_atomic_block:
        raise RuntimeError("execute_tool_call must be called outside a transaction")
    tool_call_id = clean_text(tool_call_id or "")[:TEXT_LIMIT]
    logged = _logged_call(ctx, tool_call_id)
    if logged is not None:
        return _replayed(logged, name=name, arguments_raw=arguments_raw)
    call = Requested(tool_call_id, name, arguments_raw, position_in_reply)
    row, outcome = _finish(ctx, _start(ctx, call, checks=LogChecks(ctx)), wait=None)
    return _record(ctx, row=row, outcome=outcome)


@dataclass
class ToolRun:
    """A step's tool call: the result for the model, and its log row when the step is to
    save it with its own next write (None: already saved, or an earlier log row answered)."""

    result: dict
    row: ToolCallLog | None = None


@dataclass(frozen=True)
class Requested:
    """A tool call as the model's reply made it: `position_in_reply` is its index among the
    reply's calls."""

    tool_call_id: str
    name: str
    arguments_raw: str
    position_in_reply: int = 0


def run_tool_calls(
    ctx: RunContext,
    calls: Sequence[Requested],
    *,
    checks: StepChecks,
    wait: Wait | None = None,
) -> list[ToolRun]:
    """`execute_tool_call` for a step that saves log rows with its own writes, for calls that
    run at the same time: one call, or quick lookups of one reply (a step checks nothing
    between those). Each call is decided in order, as if the ones before it had run (a repeat
    of an earlier call in `calls` counts), and its handler started; then each is waited for,
    up to TOOL_TIMEOUT_S from its start.

    A read call's row comes back unsaved (the step commits it with the tool message and
    events). A call whose row must exist first (a write tool's hook, a result kept whole under
    a ref naming the row) is saved here.
    """
    started: list[ToolRun | _Started] = []
    for call in calls:
        tool_call_id = clean_text(call.tool_call_id or "")[:TEXT_LIMIT]
        logged = checks.prior.result(tool_call_id)
        if logged is not None:
            started.append(ToolRun(logged))
            continue
        with log_context(tool_call_id=tool_call_id):
            decided = _start(ctx, replace(call, tool_call_id=tool_call_id), checks=checks)
        checks.prior.count(decided.tool_name, decided.args_digest)
        started.append(decided)
    runs = []
    for each in started:
        if isinstance(each, ToolRun):
            runs.append(each)
            continue
        with log_context(tool_call_id=each.call.tool_call_id):
            row, outcome = _finish(ctx, each, wait=wait)
            runs.append(_step_run(ctx, row, outcome, checks=checks))
    return runs


def _step_run(
    ctx: RunContext, row: ToolCallLog, outcome: Outcome, *, checks: StepChecks
) -> ToolRun:
    """The finished call for its step, its row saved here when it must exist first."""
    checks.prior.add(row, counted=True)
    tool = get_tool(row.tool_name)
    if outcome.full_text or (row.ok and tool is not None and tool.after_logged is not None):
        return ToolRun(_record(ctx, row=row, outcome=outcome))
    return ToolRun(outcome.result, row)


@dataclass(frozen=True)
class Admitted:
    """A call that passed every check before its handler, with its arguments as the schema
    cleaned them."""

    tool: Tool
    clean: dict
    arguments: object
    args_digest: str


@dataclass(frozen=True)
class _Started:
    """A call decided: answered without its handler (`outcome`), or its handler started on a
    call thread (`future`, at `submitted`)."""

    call: Requested
    started: float
    outcome: Outcome | None = None
    admitted: Admitted | None = None
    future: Future | None = None
    submitted: float = 0.0

    @property
    def tool_name(self) -> str:
        """As its log row names it."""
        return clean_text(self.call.name or "")[:TEXT_LIMIT]

    @property
    def args_digest(self) -> str:
        if self.admitted is not None:
            return self.admitted.args_digest
        return self.outcome.args_digest if self.outcome is not None else ""


def _start(ctx: ToolContext, call: Requested, *, checks: "LogChecks | StepChecks") -> _Started:
    """Decide `call` and, when it may run, start its handler."""
    started = time.monotonic()
    decision = _decide(
        ctx,
        name=call.name or "",
        arguments_raw=call.arguments_raw or "",
        position_in_reply=call.position_in_reply,
        checks=checks,
    )
    if isinstance(decision, Outcome):
        return _Started(call, started, outcome=decision)
    future = call_threads().submit(decision.tool.handler, ctx, decision.clean)
    return _Started(call, started, admitted=decision, future=future, submitted=time.monotonic())


def _finish(
    ctx: ToolContext, started: _Started, *, wait: "Wait | None"
) -> tuple[ToolCallLog, Outcome]:
    """The call's outcome, its handler waited for up to TOOL_TIMEOUT_S after it started, and
    its log row, not yet saved."""
    outcome = started.outcome
    if outcome is None:
        admitted, future = started.admitted, started.future
        assert admitted is not None and future is not None
        timeout = max(settings.TOOL_TIMEOUT_S - (time.monotonic() - started.submitted), 0.0)
        outcome = _handler_outcome(ctx, admitted.tool, future, wait=wait, timeout=timeout)
        observe_tool_call(admitted.tool.name, time.monotonic() - started.submitted)
        outcome.arguments = admitted.arguments
        outcome.args_digest = admitted.args_digest
    row = _log_row(
        ctx,
        tool_call_id=started.call.tool_call_id,
        name=started.call.name,
        arguments_raw=started.call.arguments_raw,
        outcome=outcome,
        started=started.started,
    )
    return row, outcome


def _decide(
    ctx: ToolContext,
    *,
    name: str,
    arguments_raw: str,
    position_in_reply: int,
    checks: "LogChecks | StepChecks",
) -> "Outcome | Admitted":
    """The call answered by the first check it fails, or admitted to run."""
    if checks.cancelled():
        return _failure(
            ErrorCode.CANCELLED,
            "The run was cancelled; no tool was executed.",
            next_actions=[NextAction.STOP],
        )
    if isinstance(ctx, McpContext) and not ctx.role_still_held():
        return _failure(
            ErrorCode.PERMISSION_DENIED,
            f"This session started with the {ctx.role} role, which its user no longer "
            "holds; no tool was executed. Start a new session.",
            next_actions=[NextAction.STOP],
        )
    if isinstance(ctx, McpContext):
        limited = rate_limited(ctx, tool_name=name if name in tool_names(ctx.role) else "")
        if limited is not None:
            return limited
    limit = settings.AGENT_MAX_TOOL_CALLS_PER_STEP
    if position_in_reply >= limit:
        return _failure(
            ErrorCode.TOO_MANY_CALLS,
            f"One reply may make at most {limit} tool calls; only the first "
            f"{limit} were run. Make this call again in your next reply if you "
            "still need it.",
            retryable=True,
            # Only a call this role could make is worth making again.
            next_actions=[name] if name in tool_names(ctx.role) else [NextAction.STOP],
        )

    tool = get_tool(name)
    if tool is None:
        similar = difflib.get_close_matches(name, tool_names(ctx.role), n=3, cutoff=0.6)
        shown = clean_text(name)[:TEXT_LIMIT]
        hint = f" Did you mean: {', '.join(similar)}?" if similar else ""
        return _failure(
            ErrorCode.UNKNOWN_TOOL,
            f"There is no tool named {shown!r}.{hint}",
            next_actions=similar or tool_names(ctx.role),
            similar=similar,
            available=tool_names(ctx.role),
        )
    if ctx.role not in tool.roles:
        return _failure(
            ErrorCode.PERMISSION_DENIED,
            f"The {ctx.role} role may not use {tool.name}. Tell the user that a "
            "support agent or supervisor has to do this.",
            next_actions=[NextAction.ESCALATE_TO_SUPERVISOR],
        )

    if len(arguments_raw) > MAX_ARGUMENTS_CHARS:
        return _failure(
            ErrorCode.ARGUMENTS_TOO_LARGE,
            f"The arguments are {len(arguments_raw)} characters long; at most "
            f"{MAX_ARGUMENTS_CHARS} are read. Send only the fields of the "
            f"{tool.name} schema.",
            next_actions=[tool.name],
        )

    parsed, problem = _parse(arguments_raw)
    if problem:
        return _failure(
            ErrorCode.BAD_JSON,
            f"The arguments are not valid JSON: {problem}. Send one JSON object.",
            next_actions=[tool.name],
        )
    arguments = _jsonable(parsed)
    if not isinstance(parsed, dict):
        outcome = _failure(
            ErrorCode.BAD_JSON,
            f"The arguments must be a JSON object, not {json_type_name(parsed)}.",
            next_actions=[tool.name],
        )
        outcome.arguments = arguments
        return outcome

    clean, field_errors = validate_arguments(tool, parsed)
    if field_errors:
        outcome = _failure(
            ErrorCode.INVALID_ARGUMENTS,
            f"The arguments do not fit the {tool.name} schema: "
            + "; ".join(f"{key}: {message}" for key, message in field_errors.items()),
            next_actions=[tool.name],
            field_errors=field_errors,
        )
        outcome.arguments = arguments
        outcome.args_digest = _digest(arguments)
        return outcome

    digest = _digest(_jsonable(clean))
    if isinstance(ctx, McpContext):
        earlier = answered_before(ctx, tool_name=tool.name, args_digest=digest)
        if earlier is not None:
            earlier.arguments = arguments
            earlier.args_digest = digest
            return earlier
    # A host's session is long-lived and the host runs its own loop: asking for an order's
    # refund status again an hour later is not a model stuck in a loop.
    if isinstance(ctx, RunContext) and checks.identical_calls(tool.name, digest) >= (
        MAX_IDENTICAL_CALLS
    ):
        outcome = _failure(
            ErrorCode.REPEATED_CALL,
            f"This exact {tool.name} call was already made "
            f"{MAX_IDENTICAL_CALLS} times in this run; use those results "
            "instead of calling it again.",
            next_actions=[NextAction.USE_EARLIER_RESULT],
        )
        outcome.arguments = arguments
        outcome.args_digest = digest
        return outcome
    return Admitted(tool, clean, arguments, digest)
