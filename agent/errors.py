"""Errors given to the model are data (DESIGN §1, invariant 10), never tracebacks."""

from dataclasses import dataclass, field


class ErrorCode:
    UNKNOWN_TOOL = "UNKNOWN_TOOL"
    PERMISSION_DENIED = "PERMISSION_DENIED"
    BAD_JSON = "BAD_JSON"
    ARGUMENTS_TOO_LARGE = "ARGUMENTS_TOO_LARGE"
    TOO_MANY_CALLS = "TOO_MANY_CALLS"
    INVALID_ARGUMENTS = "INVALID_ARGUMENTS"
    NOT_FOUND = "NOT_FOUND"
    POLICY_DENIED = "POLICY_DENIED"
    AMOUNT_OVER_ROLE_LIMIT = "AMOUNT_OVER_ROLE_LIMIT"
    REFUND_ALREADY_DECIDED = "REFUND_ALREADY_DECIDED"
    TOOL_TIMEOUT = "TOOL_TIMEOUT"
    REPEATED_CALL = "REPEATED_CALL"
    CANCELLED = "CANCELLED"
    INTERNAL_ERROR = "INTERNAL_ERROR"


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

    def as_result(self) -> dict:
        error = {
            "code": self.code,
            "message": self.message,
            "retryable": self.retryable,
            "next_actions": list(self.next_actions),
        }
        error.update(self.extra)
        return {"ok": False, "error": error}
