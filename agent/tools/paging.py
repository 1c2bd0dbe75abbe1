"""Results longer than MAX_RESULT_CHARS: the longest page that fits, and read_tool_result,
which pages through a result kept whole in its log row.
"""

import json
import re
from collections.abc import Callable

from agent.context import ToolContext
from agent.errors import ErrorCode, NextAction, ToolError
from agent.models import ToolCallLog

# The most JSON text one tool result may send the model; a longer one is cut and kept for
# read_tool_result (agent/executor/outcome.py).
MAX_RESULT_CHARS = 8000
RESULT_REF_PREFIX = "tc_"
# Far beyond any TOOL_RESULT_STORE_MAX_CHARS; the schema needs a bound to name in its errors.
MAX_RESULT_OFFSET = 1_000_000_000


def compact_json(value) -> str:
    """The JSON text whose length the result cap counts."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def result_ref(row: ToolCallLog) -> str:
    return f"{RESULT_REF_PREFIX}{row.pk}"


def longest_page(text: str, start: int, build: Callable[[int], dict]) -> dict:
    """`build(end)` for the largest end (start ≤ end ≤ len(text)) whose compact JSON, with
    `ok` added as the executor adds it, fits in MAX_RESULT_CHARS.

    Escaping makes the size non-linear in the page's length: search for the longest fit.
    """
    fits, too_long = start, min(len(text), start + MAX_RESULT_CHARS)
    while fits < too_long:
        middle = (fits + too_long + 1) // 2
        if len(compact_json({"ok": True, **build(middle)})) <= MAX_RESULT_CHARS:
            fits = middle
        else:
            too_long = middle - 1
    return build(fits)


def stored_result_not_found() -> ToolError:
    # The same words whether the row is missing, was never cut, or belongs to another run,
    # session, ticket or customer: the answer must not reveal that a ref exists elsewhere.
    return ToolError(
        ErrorCode.NOT_FOUND,
        "There is no stored result with that result_ref here. Use the result_ref of a "
        "truncated result from this conversation.",
        next_actions=[NextAction.USE_EARLIER_RESULT],
    )


def _stored_result(ctx: ToolContext, ref: str) -> ToolCallLog:
    match = re.fullmatch(rf"{RESULT_REF_PREFIX}([0-9]{{1,18}})", ref)
    if match is None:
        raise stored_result_not_found()
    rows = ToolCallLog.objects.filter(pk=int(match[1]), ticket=ctx.ticket).exclude(full_result="")
    if ctx.run is not None:
        rows = rows.filter(run=ctx.run)
    else:
        rows = rows.filter(mcp_session=ctx.mcp_session)
    row = rows.only("pk", "result", "full_result").first()
    if row is None:
        raise stored_result_not_found()
    return row


def read_tool_result(ctx: ToolContext, args: dict) -> dict:
    row = _stored_result(ctx, args["result_ref"])
    stored, offset = row.full_result, args["offset"]
    total = row.result.get("total", len(stored))
    if offset > len(stored):
        raise ToolError(
            ErrorCode.INVALID_ARGUMENTS,
            f"The offset is past the end: the stored result has {len(stored)} characters.",
            next_actions=["read_tool_result"],
            extra={"field_errors": {"offset": f"must be at most {len(stored)}"}},
        )

    def page(end: int) -> dict:
        at_end = end >= len(stored)
        answer = {
            "result_ref": result_ref(row),
            "offset": offset,
            "next_offset": None if at_end else end,
            "total": total,
        }
        if at_end and len(stored) < total:
            answer["stored"] = len(stored)
            answer["message"] = (
                f"This is the end of what was kept: only the first {len(stored)} of {total} "
                "characters were stored, the rest cannot be read. Say so if it matters, or ask "
                "the original tool for less."
            )
        answer["content"] = stored[offset:end]
        return answer

    return longest_page(stored, offset, page)
