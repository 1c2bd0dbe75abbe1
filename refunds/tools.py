"""The body of the `create_refund` tool: a proposal only, never an execution."""

from agent.context import RunContext
from agent.errors import ToolError


def create_refund(ctx: RunContext, args: dict) -> dict:
    raise ToolError("INTERNAL_ERROR", "create_refund is not available yet.")
