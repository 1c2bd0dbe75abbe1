"""Admin for assistant runs, the tool-call audit trail and MCP sessions and tokens. Runs,
calls and sessions are read-only: these rows are evidence of what happened, written only by
the runtime, the executor and the MCP server. Importing the modules registers them."""

from agent.admin import calls, mcp, runs

__all__ = ["calls", "mcp", "runs"]
