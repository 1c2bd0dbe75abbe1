"""Runs one tool call the model asked for and logs it (DESIGN §1 invariants 2, 3, 10; §6).

Pipeline, first failure wins: cancelled run → past the reply's call limit → unknown tool →
role → argument size → JSON → schema → repeated call → handler (scope and business rules)
under a timeout → result cap. Every outcome, success or not, is returned as data and written
as exactly one ToolCallLog row. A result over the cap is sent cut, and kept whole (up to
TOOL_RESULT_STORE_MAX_CHARS) in its row for read_tool_result to page through.

An MCP host's call (DESIGN §12) takes the same path in an McpContext. What only makes sense
for a model loop the desk drives itself (cancellation, the per-reply call limit, repeat
detection) applies to runs only; instead, an MCP call first checks that the user still holds
the role the session started with.
"""

import difflib
import hashlib
import json
import logging
import math
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, replace
from datetime import date, datetime
from decimal import Decimal
from uuid import UUID

from django.conf import settings
from django.db import IntegrityError, connection, transaction

from agent import loops
from agent.context import McpContext, RunContext, ToolContext
from agent.errors import ErrorCode, NextAction, ToolError
from agent.models import AgentMessage, AgentRun, ToolCallLog
from agent.pool import call_threads
from agent.tools import (
    MAX_RESULT_CHARS,
    Tool,
    ToolKind,
    get_tool,
    json_type_name,
    longest_page,
    result_ref,
    tool_names,
    validate_arguments,
)
from config.canonical import canonical_json
from config.db import select_values
from config.log_context import log_context

logger = logging.getLogger(__name__)

# The same call (name + canonical arguments) may run this many times in a run; the next one
# answers REPEATED_CALL, which breaks a model stuck in a loop.
MAX_IDENTICAL_CALLS = 2
TEXT_LIMIT = 100  # tool_name and tool_call_id columns
MAX_ARGUMENT_DEPTH = 20
# The largest schema (create_refund, with a 1,000-character explanation) needs a fraction of
# this; longer arguments are refused before anything parses them.
MAX_ARGUMENTS_CHARS = 16_000


@dataclass
class Outcome:
    result: dict
    arguments: object = None
    args_digest: str = ""
    retryable: bool = False
    error_code: str = ""
    # The whole JSON text of a success result over the cap; `result` is then its cut form.
    full_text: str = ""


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

    Precondition: no transaction is open. The handler runs on a call thread (agent/pool.py)
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


class PriorCalls:
    """The tool calls a run has logged, read once per step: a step asks these, not the
    database, whether a call was logged already and how often the same call was made."""

    def __init__(self, rows: list[dict]):
        self.rows = {row["tool_call_id"]: self._keyed(row) for row in rows}
        self._made = Counter((row["tool_name"], row["args_digest"]) for row in rows)

    FIELDS = (
        "tool_call_id",
        "tool_name",
        "args_digest",
        "arguments_raw",
        "ok",
        "error_code",
        "retryable",
        "result",
    )

    @classmethod
    def load(cls, run: AgentRun, transcript: list[AgentMessage]) -> "PriorCalls":
        """The calls `run` logged, whose replies are in `transcript`. A call is logged only
        once the reply that made it is saved (before it runs, or in the same write when a
        cancel stopped it), so a transcript without tool calls has none to read."""
        if not any(message.tool_calls for message in transcript):
            return cls([])
        rows = select_values(ToolCallLog, cls.FIELDS, where={"run_id": run.pk}, order_by=("id",))
        return cls([dict(zip(cls.FIELDS, row, strict=True)) for row in rows])

    def result(self, tool_call_id: str) -> dict | None:
        row = self.rows.get(tool_call_id)
        return None if row is None else row["result"]

    def identical_calls(self, name: str, digest: str) -> int:
        return self._made[(name, digest)]

    def count(self, name: str, digest: str) -> None:
        """A call of `name` with arguments `digest` is being made (its row comes later)."""
        self._made[(name, digest)] += 1

    def add(self, row: ToolCallLog, *, counted: bool = False) -> None:
        """`row` was logged; `counted`: its call was counted already."""
        self.rows[row.tool_call_id] = self._keyed(
            {field: getattr(row, field) for field in self.FIELDS}
        )
        if not counted:
            self.count(row.tool_name, row.args_digest)

    @staticmethod
    def _keyed(row: dict) -> dict:
        """`row` with what loop detection compares (loops.calls_by_step), worked out once per
        call: a step looks for loops over all of its run's calls before every model call."""
        row["call_key"] = loops.call_key(row["tool_name"], row["arguments_raw"])
        row["result_key"] = loops.result_key(row["result"])
        return row


class LogChecks:
    """The same questions asked of the database, for a call outside a step (MCP, tests)."""

    def __init__(self, ctx: ToolContext):
        self.ctx = ctx

    def cancelled(self) -> bool:
        return isinstance(self.ctx, RunContext) and _cancelled(self.ctx.run)

    def identical_calls(self, name: str, digest: str) -> int:
        if not isinstance(self.ctx, RunContext):
            return 0
        return _identical_calls(self.ctx.run, name, digest)


@dataclass
class StepChecks:
    """A step's answers: it saw the cancel flag in its last write (`cancelled`), and knows its
    run's earlier calls (`prior`)."""

    prior: PriorCalls
    is_cancelled: bool = False

    def cancelled(self) -> bool:
        return self.is_cancelled

    def identical_calls(self, name: str, digest: str) -> int:
        return self.prior.identical_calls(name, digest)


@dataclass
class ToolRun:
    """A step's tool call: the result for the model, and its log row when the step is to
    save it with its own next write (None: already saved, or an earlier log row answered)."""

    result: dict
    row: ToolCallLog | None = None


# Waits for a handler's Future for at most `timeout` seconds (raising TimeoutError); a step
# passes one that renews its lease while it waits.
Wait = Callable[[Future, float], object]


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


def _cancelled(run: AgentRun) -> bool:
    state = AgentRun.objects.filter(pk=run.pk).values_list("cancel_requested", "status").first()
    return state is None or state[0] or state[1] == AgentRun.Status.CANCELLED


def _identical_calls(run: AgentRun, name: str, digest: str) -> int:
    return ToolCallLog.objects.filter(run=run, tool_name=name, args_digest=digest).count()


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


def _source(ctx: ToolContext) -> str:
    """Where a call came from, for the server log."""
    if isinstance(ctx, RunContext):
        return f"run {ctx.run.pk}"
    return f"MCP session {ctx.mcp_session.pk}"


# --- Parsing and canonical form ---------------------------------------------------------------


def _reject_duplicate_keys(pairs: list[tuple]) -> dict:
    keys = [key for key, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError("a key appears twice")
    return dict(pairs)


def _parse(raw: str) -> tuple[object, str]:
    """Parse the model's argument string; numbers that are not integers become Decimal (never
    float), NaN and Infinity too, so the schema check can refuse them by field."""
    if not raw.strip():
        return {}, ""
    try:
        parsed = json.loads(
            raw,
            parse_float=Decimal,
            parse_constant=Decimal,
            object_pairs_hook=_reject_duplicate_keys,
        )
    except json.JSONDecodeError as exc:
        return None, f"{exc.msg} at position {exc.pos}"
    except (ValueError, RecursionError):
        return None, "the value cannot be read"
    if _nested_deeper_than(parsed, MAX_ARGUMENT_DEPTH):
        # Everything after parsing walks the value recursively; no tool needs such nesting.
        return None, f"it is nested more than {MAX_ARGUMENT_DEPTH} levels deep"
    return parsed, ""


def _nested_deeper_than(value, limit: int) -> bool:
    if not isinstance(value, dict | list):
        return False
    if limit == 0:
        return True
    children = value.values() if isinstance(value, dict) else value
    return any(_nested_deeper_than(child, limit - 1) for child in children)


def clean_text(text: str) -> str:
    """Text as PostgreSQL and the model can take it: no NUL, no lone surrogates."""
    return text.encode("utf-8", "replace").decode("utf-8").replace("\x00", "\ufffd")


def _jsonable(value):
    """A JSON-safe, storable copy: Decimal as its string (money never becomes float), text
    cleaned for PostgreSQL, anything else JSON cannot hold as its string."""
    if isinstance(value, dict):
        return {clean_text(str(key)): _jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(item) for item in value]
    if isinstance(value, str):
        return clean_text(value)
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    if isinstance(value, datetime | date):
        return value.isoformat()
    return clean_text(str(value))


def _digest(arguments) -> str:
    return hashlib.sha256(canonical_json(arguments).encode()).hexdigest()


def _json_default(value):
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, UUID):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _dumps(value) -> str:
    return json.dumps(
        value, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=_json_default
    )


# --- Running the handler ----------------------------------------------------------------------


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
    (agent/pool.py), waited for at most `timeout` seconds.

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


# --- The log ----------------------------------------------------------------------------------


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
            if row.ok and tool is not None and tool.after_logged is not None:
                tool.after_logged(row)
    except IntegrityError:
        # Another execution under the same id logged first: its answer is the answer, if it
        # was the same call.
        winner = _logged_call(ctx, row.tool_call_id)
        if winner is None:
            raise
        return _replayed(winner, name=row.tool_name, arguments_raw=row.arguments_raw)
    return outcome.result
