"""Errors given to the model are data (DESIGN §1, invariant 10), never tracebacks.

An error tells the model what to do next in `next_actions`, drawn from one vocabulary so a
model, the offline planner and the panel can act on it without reading prose: a registered
tool's name (call it next) or a `NextAction` (something the desk does outside the tools).
The prose guidance stays in `message`.
"""

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum


class ErrorCode(StrEnum):
    UNKNOWN_TOOL = "UNKNOWN_TOOL"
    PERMISSION_DENIED = "PERMISSION_DENIED"
    BAD_JSON = "BAD_JSON"
    ARGUMENTS_TOO_LARGE = "ARGUMENTS_TOO_LARGE"
    TOO_MANY_CALLS = "TOO_MANY_CALLS"
    INVALID_ARGUMENTS = "INVALID_ARGUMENTS"
    NOT_FOUND = "NOT_FOUND"
    POLICY_DENIED = "POLICY_DENIED"
    AMOUNT_OVER_ROLE_LIMIT = "AMOUNT_OVER_ROLE_LIMIT"
    CURRENCY_NOT_SUPPORTED = "CURRENCY_NOT_SUPPORTED"
    REFUND_ALREADY_DECIDED = "REFUND_ALREADY_DECIDED"
    # create_refund's guards (DESIGN §16, agent/tools/guards.py): nothing was proposed.
    LOOKUP_REQUIRED = "LOOKUP_REQUIRED"
    AGENT_REQUEST_REQUIRED = "AGENT_REQUEST_REQUIRED"
    AMOUNT_UNCLEAR = "AMOUNT_UNCLEAR"
    REASON_UNCLEAR = "REASON_UNCLEAR"
    TOOL_TIMEOUT = "TOOL_TIMEOUT"
    REPEATED_CALL = "REPEATED_CALL"
    CANCELLED = "CANCELLED"
    INTERNAL_ERROR = "INTERNAL_ERROR"


class NextAction(StrEnum):
    """What the model should do next when it is not calling a tool (docs/tools.md)."""

    # The ticket needs a supervisor: say so, so the desk user can escalate it.
    ESCALATE_TO_SUPERVISOR = "escalate_to_supervisor"
    # Propose again with a smaller amount, only if the case justifies a partial refund.
    PROPOSE_SMALLER_AMOUNT = "propose_smaller_amount"
    # Tell the desk user which policy clause stops this, citing its ref.
    EXPLAIN_POLICY = "explain_policy"
    # Something only the customer knows is missing (e.g. the order number): say what to ask.
    ASK_CUSTOMER = "ask_customer"
    # Hand back to the desk user running the assistant: say what failed or is missing.
    ASK_AGENT = "ask_agent"
    # The answer is already in this conversation: use the earlier result.
    USE_EARLIER_RESULT = "use_earlier_result"
    # Make no more tool calls: end with what is known.
    STOP = "stop"


DESK_ACTIONS = frozenset(action.value for action in NextAction)

# What an error answers when whoever raises it names nothing more specific, so every code has
# at least one action. Paths that know better (the tool to call again, a tool that resolves
# the doubt) pass their own; docs/tools.md lists them per path.
DEFAULT_NEXT_ACTIONS: dict[ErrorCode, tuple[str, ...]] = {
    ErrorCode.UNKNOWN_TOOL: (NextAction.ASK_AGENT,),
    ErrorCode.PERMISSION_DENIED: (NextAction.ESCALATE_TO_SUPERVISOR,),
    ErrorCode.BAD_JSON: (NextAction.ASK_AGENT,),
    ErrorCode.ARGUMENTS_TOO_LARGE: (NextAction.ASK_AGENT,),
    ErrorCode.TOO_MANY_CALLS: (NextAction.STOP,),
    ErrorCode.INVALID_ARGUMENTS: (NextAction.ASK_AGENT,),
    ErrorCode.NOT_FOUND: (NextAction.ASK_CUSTOMER,),
    ErrorCode.POLICY_DENIED: (NextAction.EXPLAIN_POLICY,),
    ErrorCode.AMOUNT_OVER_ROLE_LIMIT: (
        NextAction.ESCALATE_TO_SUPERVISOR,
        NextAction.PROPOSE_SMALLER_AMOUNT,
    ),
    ErrorCode.CURRENCY_NOT_SUPPORTED: (NextAction.EXPLAIN_POLICY,),
    ErrorCode.REFUND_ALREADY_DECIDED: (NextAction.ASK_AGENT,),
    ErrorCode.LOOKUP_REQUIRED: ("get_order",),
    ErrorCode.AGENT_REQUEST_REQUIRED: (NextAction.ASK_AGENT,),
    ErrorCode.AMOUNT_UNCLEAR: (NextAction.ASK_AGENT,),
    ErrorCode.REASON_UNCLEAR: (NextAction.ASK_AGENT,),
    ErrorCode.TOOL_TIMEOUT: (NextAction.ASK_AGENT,),
    ErrorCode.REPEATED_CALL: (NextAction.USE_EARLIER_RESULT,),
    ErrorCode.CANCELLED: (NextAction.STOP,),
    ErrorCode.INTERNAL_ERROR: (NextAction.ASK_AGENT,),
}


# The registered tools' names, kept in step by agent.tools as it registers them (the registry's
# handlers raise ToolError, so agent.tools imports this module and not the other way round).
TOOL_NAMES: set[str] = set()


def is_next_action(value: str) -> bool:
    """Whether `value` belongs to the vocabulary: a NextAction or a registered tool's name."""
    return value in DESK_ACTIONS or value in TOOL_NAMES


def next_actions_for(code: str, actions: Iterable[str] = ()) -> list[str]:
    """`actions` (or the code's defaults when there are none) as plain strings, refusing any
    value outside the vocabulary: prose there is a bug, not something to send the model."""
    chosen = [str(action) for action in actions] or [
        str(action) for action in DEFAULT_NEXT_ACTIONS[ErrorCode(code)]
    ]
    outside = [action for action in chosen if not is_next_action(action)]
    if outside:
        raise ValueError(f"next_actions outside the vocabulary: {outside!r}")
    return chosen


@dataclass
class ToolError(Exception):
    """Raised by a tool handler to refuse; the executor turns it into the error result."""

    code: str
    message: str
    retryable: bool = False
    next_actions: list[str] = field(default_factory=list)
    extra: dict = field(default_factory=dict)

    def __post_init__(self):
        super().__init__(self.message)
        self.code = str(ErrorCode(self.code))
        self.next_actions = next_actions_for(self.code, self.next_actions)

    def as_result(self) -> dict:
        error = {
            "code": self.code,
            "message": self.message,
            "retryable": self.retryable,
            "next_actions": list(self.next_actions),
        }
        error.update(self.extra)
        return {"ok": False, "error": error}
