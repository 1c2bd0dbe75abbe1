"""The transcript as the offline planner reads it: the calls made, their results, the
support agent's latest request and the ticket's order.
"""

import json
import re
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

from agent.untrusted import (
    labelled_untrusted_blocks,
    strip_untrusted,
    untrusted_blocks,
)
from agent.vocabulary.requests import ORDER_ID

_TICKET_ORDER = re.compile(r"^[ \t]*Ticket order:[ \t]*(\S+)[ \t]*$", re.IGNORECASE | re.MULTILINE)
_ACTOR_ROLE = re.compile(r"^[ \t]*Actor role:[ \t]*(\w+)", re.IGNORECASE | re.MULTILINE)
# The prompt may instead say "You act for: <user>, role <role>."
_ACTOR_ROLE_PROSE = re.compile(r"\brole[: ]+(intern|agent|supervisor)\b", re.IGNORECASE)
_CENTS = Decimal("0.01")


@dataclass
class Call:
    id: str
    name: str
    arguments: dict | None
    result: dict | None = None

    @property
    def order_id(self) -> str | None:
        value = (self.arguments or {}).get("order_id")
        return str(value) if value is not None else None

    @property
    def ok(self) -> bool:
        return isinstance(self.result, dict) and self.result.get("ok") is True

    @property
    def ok_result(self) -> dict | None:
        """The result of a call that succeeded; None while it has none or after an error."""
        return self.result if self.ok else None


@dataclass
class Transcript:
    request: str = ""
    ticket_order: str | None = None
    ticket_order_conflict: bool = False
    actor_role: str = ""
    calls: list[Call] = field(default_factory=list)
    untrusted_texts: list[tuple[str, str]] = field(default_factory=list)
    total_tool_calls: int = 0
    chars_in: int = 0


def _text(content) -> str:
    """Message content as text; Chat Completions allows a list of typed parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            part.get("text", "") if isinstance(part, dict) else str(part) for part in content
        )
    return str(content)


def _parse_result(content: str) -> dict:
    """A tool message's JSON, also when the runtime wrapped it in an untrusted block."""
    candidates = [*untrusted_blocks(content), content]
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except (TypeError, ValueError):
            continue
        if isinstance(value, dict):
            return value
    return {
        "ok": False,
        "error": {"code": "UNREADABLE_RESULT", "message": "the tool result was not JSON"},
    }


def _parse_arguments(raw) -> dict | None:
    if isinstance(raw, dict):
        return raw
    try:
        value = json.loads(raw or "{}")
    except (TypeError, ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def read_transcript(messages: list[dict]) -> Transcript:
    transcript = Transcript()
    system_lines: list[str] = []
    turn_start = 0
    for index, message in enumerate(messages):
        role = message.get("role")
        content = _text(message.get("content"))
        transcript.chars_in += len(content)
        if role in ("system", "developer"):
            system_lines.append(strip_untrusted(content))
        if role in ("system", "developer", "user"):
            transcript.untrusted_texts += [
                (_place(label), body) for label, body in labelled_untrusted_blocks(content)
            ]
        if role == "user" and strip_untrusted(content).strip():
            transcript.request = " ".join(strip_untrusted(content).split())
            turn_start = index

    system = "\n".join(system_lines)
    orders = {value.lower() for value in _TICKET_ORDER.findall(system)}
    digits = {value for value in orders if ORDER_ID.fullmatch(value)}
    # Two different bound orders mean the prompt was tampered with; bind neither.
    transcript.ticket_order_conflict = len(orders) > 1
    if len(orders) == 1 and digits:
        transcript.ticket_order = digits.pop()
    role_match = _ACTOR_ROLE.search(system) or _ACTOR_ROLE_PROSE.search(system)
    transcript.actor_role = role_match.group(1).lower() if role_match else ""

    by_id: dict[str, Call] = {}
    for index, message in enumerate(messages):
        if message.get("role") == "assistant":
            for tool_call in message.get("tool_calls") or []:
                transcript.total_tool_calls += 1
                if index < turn_start:
                    continue
                function = tool_call.get("function") or {}
                call = Call(
                    id=str(tool_call.get("id", "")),
                    name=function.get("name", ""),
                    arguments=_parse_arguments(function.get("arguments")),
                )
                by_id[call.id] = call
                transcript.calls.append(call)
        elif message.get("role") == "tool" and index > turn_start:
            answered = by_id.get(str(message.get("tool_call_id", "")))
            if answered is not None:
                answered.result = _parse_result(_text(message.get("content")))
    return transcript


def _place(label: str) -> str:
    """ "customer_message_2026-11-29_14_04" -> "customer message": where, not when."""
    prefix = re.match(r"[a-z_]*", label)
    words = prefix.group(0).strip("_") if prefix else ""
    return words.replace("_", " ") or "untrusted text"


def _tool_names(tools: list[dict]) -> set[str]:
    names = set()
    for tool in tools or []:
        function = tool.get("function")
        if not isinstance(function, dict):
            function = tool
        if function.get("name"):
            names.add(function["name"])
    return names


def _money(value) -> Decimal | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        return Decimal(str(value)).quantize(_CENTS)
    except (InvalidOperation, ValueError):
        return None


def _attempted(transcript: Transcript, name: str, order_id: str | None = None) -> Call | None:
    """The latest call of `name` in this turn (for that order), whatever its outcome."""
    for call in reversed(transcript.calls):
        if call.name == name and (order_id is None or call.order_id == order_id):
            return call
    return None


def _error_of(result: dict) -> dict:
    error = result.get("error")
    return error if isinstance(error, dict) else {}


def _outcome_unknown(call: Call) -> bool:
    result = call.result or {}
    error = _error_of(result)
    return result.get("status") == "unknown" or error.get("code") == "TOOL_TIMEOUT"
