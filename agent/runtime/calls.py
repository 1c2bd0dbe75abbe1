"""The tool calls of a step as the step reads and reports them: which are pending, which run
together, how each is described in the run's events.
"""

import json
from decimal import Decimal, InvalidOperation

from agent import run_selectors
from agent.errors import error_in_words
from agent.executor import loops
from agent.executor.arguments import MAX_ARGUMENTS_CHARS
from agent.executor.pool import IDLE_THREADS
from agent.executor.prior import PriorCalls
from agent.models import AgentMessage, AgentRun
from agent.runtime.records import run_record
from agent.runtime.run_answer import run_language
from agent.tools.registry import ToolKind, get_tool
from config.money import money_str


def pending_tool_calls(transcript: list[AgentMessage]) -> list[tuple[int, dict]]:
    """Tool calls of the last assistant message that have no tool result yet, each with its
    position among that message's calls."""
    for index in range(len(transcript) - 1, -1, -1):
        message = transcript[index]
        if message.role == AgentMessage.Role.ASSISTANT:
            answered = {
                m.tool_call_id for m in transcript[index + 1 :] if m.role == AgentMessage.Role.TOOL
            }
            return [
                (position, call)
                for position, call in enumerate(message.tool_calls or [])
                if call["id"] not in answered
            ]
    return []


# At most this many quick lookups of a reply run at the same time: as many as the process
# keeps call threads (and their connections) for.
LOOKUPS_TOGETHER = IDLE_THREADS


def together(calls: list[tuple[int, dict]]) -> list[list[tuple[int, dict]]]:
    """`calls` in the groups that run at the same time: quick lookups next to each other (at
    most LOOKUPS_TOGETHER, each id once), and every other call alone."""
    groups: list[list[tuple[int, dict]]] = []
    for position, call in calls:
        group = groups[-1] if groups else []
        if (
            is_quick(call)
            and group
            and is_quick(group[0][1])
            and len(group) < LOOKUPS_TOGETHER
            and call["id"] not in {other["id"] for _, other in group}
        ):
            group.append((position, call))
        else:
            groups.append([(position, call)])
    return groups


def is_quick(call: dict) -> bool:
    tool = get_tool(call["function"]["name"])
    return tool is not None and tool.quick


def _arguments(call: dict) -> dict:
    raw = call["function"]["arguments"] or "{}"
    if len(raw) > MAX_ARGUMENTS_CHARS:
        return {}
    try:
        parsed = json.loads(raw)
    except (ValueError, RecursionError):
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _amount(value) -> str:
    try:
        return money_str(Decimal(str(value)))
    except (InvalidOperation, ValueError):
        return "?"


def describe_call(call: dict) -> str:
    """What the agent reads in the panel while a tool runs."""
    name, args = call["function"]["name"], _arguments(call)
    order_id = str(args.get("order_id", "")).strip()
    if name == "get_order":
        return f"Looking up order {order_id}…" if order_id else "Looking up an order…"
    if name == "list_customer_orders":
        return "Listing the customer's orders…"
    if name == "search_policies":
        query = str(args.get("query", "")).strip()
        return f"Checking policy: “{query}”…" if query else "Checking policy…"
    if name == "get_refund_status":
        return f"Checking refunds for order {order_id}…" if order_id else "Checking refunds…"
    if name == "create_refund":
        return f"Proposing a refund of {_amount(args.get('amount'))} for order {order_id}…"
    return f"Calling {name}…"


def describe_result(call: dict, result: dict) -> str:
    label = describe_call(call).rstrip("…")
    if result.get("ok", True):
        return f"{label}: done"
    return f"{label}: {error_in_words(result.get('error') or {})}"


def approval_details(result: dict) -> dict | None:
    """create_refund's proposal waiting for a reviewer, as the approval.required event."""
    body = result.get("refund")
    if not isinstance(body, dict):
        body = result
    if not result.get("ok", True) or body.get("status") != "pending_approval":
        return None
    keys = ("request_id", "version", "order_id", "amount", "currency", "reason", "expires_at")
    return {key: body[key] for key in keys if key in body}


def summary_from_tool_log(run: AgentRun, why: str) -> str:
    """A final answer composed from the tool log when the model gives none: what the run did in
    the desk's words (agent/runtime/records.py), in the language of the agent's request."""
    lines = [why]
    calls = [
        {
            "tool_name": log.tool_name,
            "ok": log.ok,
            "error_code": log.error_code,
            "result": log.result,
            "arguments_raw": log.arguments_raw,
        }
        for log in run_selectors.run_tool_calls(run=run)
    ]
    did = run_record(calls, language=run_language(run))
    if did:
        lines.append("What I did:")
        lines += [f"- {line}" for line in did]
    else:
        lines.append("I did not look anything up.")
    lines.append(
        "What I did not do: I did not reach a conclusion. Please review the results "
        "above, or ask me again with a narrower question."
    )
    return "\n".join(lines)


def logged_calls(prior: PriorCalls, transcript: list[AgentMessage]) -> list[loops.LoggedCall]:
    """The run's tool calls in the order its model replies made them, with their outcomes."""
    replies = [
        [call["id"] for call in message.tool_calls]
        for message in transcript
        if message.role == AgentMessage.Role.ASSISTANT and message.tool_calls
    ]
    names = {row["tool_name"] for row in prior.rows.values()}
    writes = {name for name in names if (tool := get_tool(name)) and tool.kind == ToolKind.WRITE}
    return loops.calls_by_step(replies, prior.rows, write_tools=writes)
