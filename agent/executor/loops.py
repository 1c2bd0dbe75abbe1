"""Loop detection over a run's tool calls, step by step (DESIGN §7).

The executor refuses a third identical call (REPEATED_CALL); a model can still go round in
circles without ever repeating one call three times. Before each model call the step asks
`detect_loop` whether the calls so far look like a loop, and if so forces the final answer.

Pure functions: the caller reads the transcript and the tool log, these only look at them.
Every rule looks only at patterns that end in the latest step, so a pattern that did not stop
the run when it appeared does not stop it later either.
"""

import json
import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from enum import StrEnum

from agent.errors import error_in_words
from config.canonical import canonical_json


class LoopRule(StrEnum):
    REPEAT = "repeat"  # the same call twice in a row
    OSCILLATION = "oscillation"  # A, B, A, B
    REPEATED_ERROR = "repeated_error"  # the same tool failing with the same code twice in a row
    STALL = "stall"  # k steps without a successful result not seen before


@dataclass(frozen=True)
class LoggedCall:
    """One tool call as the log holds it; `step` is the model reply that made it (0-based)."""

    step: int
    tool: str
    arguments_raw: str
    ok: bool
    error_code: str = ""
    retryable: bool = False
    result: object = None
    # A write tool (create_refund) answers a repeat with the same proposal, by design.
    write: bool = False
    # What the rules compare, `call_key` and `result_key`: given when known already (a step
    # keeps them with its run's tool-call log, prior.py), else worked out here.
    key: str = ""
    result_key: str = ""

    def __post_init__(self) -> None:
        if not self.key:
            object.__setattr__(self, "key", call_key(self.tool, self.arguments_raw))
        if not self.result_key:
            object.__setattr__(self, "result_key", result_key(self.result))


@dataclass(frozen=True)
class Loop:
    rule: LoopRule
    description: str


# --- Normalisation -----------------------------------------------------------------------------


def is_amount_field(name: str) -> bool:
    return name == "amount" or name.endswith("_amount")


def _decimal_text(value: Decimal) -> str:
    """One text per numeric value: 129, 129.0 and 129.00 all give "129"."""
    return format(value.normalize(), "f")


def _as_decimal(value) -> Decimal | None:
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal | str):
        return None
    try:
        number = Decimal(value.strip() if isinstance(value, str) else str(value))
    except InvalidOperation:
        return None
    return number if number.is_finite() else None


def normalise(value, *, field: str = ""):
    """A copy of parsed arguments in which only differences that cannot change what a tool
    does are gone: surrounding whitespace of strings, and how a number is written. JSON has
    one number type, so 129 and 129.0 are one value anywhere; a string is a number only in an
    amount field, where the schema takes "129.00" for 129 (an id like "0087" stays text).
    Case is kept: ids may be case-sensitive. Key order is left to the canonical text."""
    if isinstance(value, Mapping):
        return {str(key): normalise(item, field=str(key)) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [normalise(item, field=field) for item in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int | float | Decimal):
        if isinstance(value, float) and not math.isfinite(value):
            return str(value)
        number = _as_decimal(value)
        return {"#number": _decimal_text(number)} if number is not None else str(value)
    if isinstance(value, str):
        text = value.strip()
        if is_amount_field(field):
            number = _as_decimal(text)
            if number is not None:
                return {"#number": _decimal_text(number)}
        return text
    return str(value)


def parse_arguments(arguments_raw: str):
    """The model's argument text as a value, numbers kept exact; text that is not JSON stands
    for itself (a model sending the same broken text twice repeats itself too)."""
    raw = (arguments_raw or "").strip() or "{}"
    try:
        return json.loads(raw, parse_float=Decimal, parse_int=Decimal)
    except (ValueError, RecursionError):
        return {"#unparsed": raw}


def call_key(tool: str, arguments_raw: str) -> str:
    """Equal for two calls that ask the same tool the same thing."""
    return canonical_json([tool, normalise(parse_arguments(arguments_raw))])


def result_key(result) -> str:
    return canonical_json(result)


# --- Rules -------------------------------------------------------------------------------------


def _latest_indexes(calls: Sequence[LoggedCall]) -> range:
    """Positions of the latest step's calls in `calls`."""
    if not calls:
        return range(0)
    last = calls[-1].step
    first = next(i for i, call in enumerate(calls) if call.step == last)
    return range(first, len(calls))


def _describe(call: LoggedCall) -> str:
    arguments = " ".join((call.arguments_raw or "{}").split())
    return f"{call.tool} {arguments[:120]}"


def repeated_call(calls: Sequence[LoggedCall]) -> Loop | None:
    """The latest step made the call just made before it in an earlier step. Not a loop: a
    retry after a failure that said a retry may succeed (a timeout), and a write repeated once,
    which is how a model confirms its proposal (the tool answers with the same one); failing
    again is `repeated_error`'s business, and the executor refuses a third identical call."""
    for index in _latest_indexes(calls):
        if index == 0:
            continue
        before, call = calls[index - 1], calls[index]
        if before.step == call.step or before.key != call.key:
            continue
        if call.write or (not before.ok and before.retryable):
            continue
        return Loop(LoopRule.REPEAT, f"the same call twice in a row: {_describe(call)}")
    return None


def oscillation(calls: Sequence[LoggedCall]) -> Loop | None:
    """The last four calls alternate between two different calls, over more than one step."""
    for end in _latest_indexes(calls):
        if end < 3:
            continue
        window = calls[end - 3 : end + 1]
        a, b, c, d = (call.key for call in window)
        if a != b and a == c and b == d and window[0].step != window[-1].step:
            return Loop(
                LoopRule.OSCILLATION,
                f"alternating between {_describe(window[0])} and {_describe(window[1])}",
            )
    return None


def repeated_error(calls: Sequence[LoggedCall]) -> Loop | None:
    """The same tool failed with the same error code on two calls in a row, the second made
    after the model had seen the first failure."""
    for index in _latest_indexes(calls):
        if index == 0:
            continue
        before, call = calls[index - 1], calls[index]
        if before.step == call.step or before.ok or call.ok:
            continue
        if (before.tool, before.error_code) == (call.tool, call.error_code):
            return Loop(
                LoopRule.REPEATED_ERROR,
                # Read by the desk user in the run's summary: the error in words, not its code.
                f"{call.tool} did not go through twice in a row "
                f"({error_in_words({'code': call.error_code}).rstrip('.')})",
            )
    return None


def stalled(calls: Sequence[LoggedCall], *, steps: int) -> Loop | None:
    """The last `steps` steps with tool calls brought no successful result not seen before in
    the run. `steps` <= 0 turns the rule off."""
    if steps <= 0 or not calls:
        return None
    seen: set[str] = set()
    progress_by_step: dict[int, bool] = {}
    for call in calls:
        new = call.ok and call.result_key not in seen
        if call.ok:
            seen.add(call.result_key)
        progress_by_step[call.step] = progress_by_step.get(call.step, False) or new
    recent = [progress_by_step[step] for step in sorted(progress_by_step)][-steps:]
    if len(recent) < steps or any(recent):
        return None
    return Loop(LoopRule.STALL, f"{steps} steps in a row without a new result")


def detect_loop(calls: Sequence[LoggedCall], *, stall_steps: int) -> Loop | None:
    """The first rule the calls (in the order they were made) break, or None."""
    return (
        repeated_call(calls)
        or oscillation(calls)
        or repeated_error(calls)
        or stalled(calls, steps=stall_steps)
    )


def calls_by_step(
    replies: Iterable[Sequence[str]],
    logs: Mapping[str, Mapping],
    *,
    write_tools: Collection[str] = (),
) -> list[LoggedCall]:
    """The run's calls in order: `replies` are the tool call ids of each model reply that made
    calls, in order; `logs` maps a tool call id to its log row's fields (tool_name,
    arguments_raw, ok, error_code, retryable, result); `write_tools` names the tools that
    change something; a row may hold its call's `call_key` and `result_key` already. A call
    without a log row (not run yet) is left out."""
    calls = []
    for step, call_ids in enumerate(replies):
        for call_id in call_ids:
            row = logs.get(call_id)
            if row is None:
                continue
            calls.append(
                LoggedCall(
                    step=step,
                    tool=row["tool_name"],
                    arguments_raw=row["arguments_raw"],
                    ok=bool(row["ok"]),
                    error_code=row["error_code"] or "",
                    retryable=bool(row["retryable"]),
                    result=row["result"],
                    write=row["tool_name"] in write_tools,
                    key=row.get("call_key", ""),
                    result_key=row.get("result_key", ""),
                )
            )
    return calls
