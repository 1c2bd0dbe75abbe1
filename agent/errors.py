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
    RATE_LIMITED = "RATE_LIMITED"
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
    ErrorCode.RATE_LIMITED: (NextAction.STOP,),
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


# --- The same errors in words, for the people at the desk -------------------------------------

# What the desk user reads where a tool refused: the ticket page's progress lines and tool-call
# trail, the offline planner's note, the summary of a run that ended without an answer. The
# codes and the `message` are written for the model ("Send one JSON object", "Call
# get_refund_status"); these say what happened to the person. One sentence each.
ERROR_WORDS: dict[ErrorCode, str] = {
    ErrorCode.UNKNOWN_TOOL: "The assistant asked for a tool the desk does not have.",
    ErrorCode.PERMISSION_DENIED: "Your role may not do this; a support agent or supervisor can.",
    ErrorCode.BAD_JSON: "The assistant's request could not be read, so nothing was done.",
    ErrorCode.ARGUMENTS_TOO_LARGE: "The assistant's request was too long, so nothing was done.",
    ErrorCode.TOO_MANY_CALLS: "The assistant asked for too much at once; this part waited.",
    ErrorCode.INVALID_ARGUMENTS: "The assistant's request was incomplete or wrong, so nothing "
    "was done.",
    ErrorCode.NOT_FOUND: "Not found among this customer's orders and records.",
    ErrorCode.POLICY_DENIED: "The refund policy does not allow this refund.",
    ErrorCode.AMOUNT_OVER_ROLE_LIMIT: "The amount is over what your role may propose.",
    ErrorCode.CURRENCY_NOT_SUPPORTED: "The refund policy sets no limits for this order's "
    "currency, so the desk cannot refund it.",
    ErrorCode.REFUND_ALREADY_DECIDED: "A reviewer has already decided this refund; it can no "
    "longer change.",
    ErrorCode.TOOL_TIMEOUT: "It did not answer in time.",
    ErrorCode.REPEATED_CALL: "The assistant already asked exactly this; the earlier answer stands.",
    ErrorCode.CANCELLED: "The run was cancelled, so this was not done.",
    ErrorCode.INTERNAL_ERROR: "Something went wrong inside the desk.",
    ErrorCode.LOOKUP_REQUIRED: "The assistant had not looked this order up yet, so nothing was "
    "proposed.",
    ErrorCode.AGENT_REQUEST_REQUIRED: "Only you can ask for a refund (the customer's words are "
    "not enough), so nothing was proposed.",
    ErrorCode.AMOUNT_UNCLEAR: "The amount was not one you gave, so nothing was proposed.",
    ErrorCode.REASON_UNCLEAR: "The reason was not the one you gave, so nothing was proposed.",
    ErrorCode.RATE_LIMITED: "Too many calls in a short time; try again in a minute.",
}

# Codes whose error carries the policy's verdicts: the failing clauses are the facts to show.
_VERDICT_CODES = {
    ErrorCode.POLICY_DENIED,
    ErrorCode.AMOUNT_OVER_ROLE_LIMIT,
    ErrorCode.CURRENCY_NOT_SUPPORTED,
}


def error_in_words(error: dict) -> str:
    """A tool's error (`result["error"]`) as the desk user reads it: the code's sentence, then
    the facts behind it (the failing policy clauses, the fields that were wrong), each sentence
    once and no code in sight."""
    try:
        code: ErrorCode | None = ErrorCode(error.get("code", ""))
    except ValueError:
        code = None
    sentences = [ERROR_WORDS[code] if code else "The tool refused."]
    if code in _VERDICT_CODES:
        sentences += [
            f"{verdict['clause']}: {verdict['detail']}."
            for verdict in error.get("verdicts") or []
            if isinstance(verdict, dict) and verdict.get("clause") and verdict.get("detail")
        ]
    if code is ErrorCode.INVALID_ARGUMENTS:
        fields = error.get("field_errors") or {}
        if isinstance(fields, dict):
            sentences += [f"{name}: {problem}." for name, problem in fields.items()]
    if code is ErrorCode.TOOL_TIMEOUT and not error.get("retryable", True):
        sentences.append("Whether it was recorded is not known yet; check before trying again.")
    return " ".join(_each_once(sentences))


def logged_error_in_words(result, code: str) -> str:
    """A logged call's error in words: from the result it returned, or from its code alone."""
    error = result.get("error") if isinstance(result, dict) else None
    return error_in_words(error if isinstance(error, dict) else {"code": code})


def _each_once(sentences: Iterable[str]) -> list[str]:
    """The sentences without any said before (ignoring case, spacing and the final stop)."""
    said: set[str] = set()
    kept = []
    for sentence in sentences:
        sentence = sentence.replace("..", ".").strip()
        key = " ".join(sentence.lower().rstrip(".").split())
        if key and key not in said:
            said.add(key)
            kept.append(sentence)
    return kept


def codes_in_words(text: str) -> str:
    """`text` with any error code in it replaced by its sentence's words: what a model wrote
    may quote one ("failed with AMOUNT_OVER_ROLE_LIMIT"), and the desk user must not meet it."""
    for code, words in ERROR_WORDS.items():
        if code.value in text:
            text = text.replace(code.value, f"“{words.rstrip('.')}”")
    return text
