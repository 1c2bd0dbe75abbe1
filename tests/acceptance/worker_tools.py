"""A slow tool for worker subprocesses (`--include tests.acceptance.worker_tools`).

It leaves a trace file when it starts and when it finishes, named after the run, so the test
process can see that the worker ran it and stopped waiting before it finished.
"""

import contextlib
import time

from agent.tools.registry import SUPPORT_ROLES, Tool, ToolKind, registered_tool
from tests.acceptance.traces import slow_tool_trace

SLOW_TOOL_SECONDS = 30
NO_ARGUMENTS = {"type": "object", "properties": {}, "required": [], "additionalProperties": False}


def acceptance_slow_lookup(ctx, args) -> dict:
    slow_tool_trace(ctx.run.pk, "started").touch()
    time.sleep(SLOW_TOOL_SECONDS)
    slow_tool_trace(ctx.run.pk, "finished").touch()
    return {"looked_up": True}


_registrations = contextlib.ExitStack()
_registrations.enter_context(
    registered_tool(
        Tool(
            name="acceptance_slow_lookup",
            description="Test tool that takes 30 seconds.",
            parameters=NO_ARGUMENTS,
            handler=acceptance_slow_lookup,
            kind=ToolKind.READ,
            roles=SUPPORT_ROLES,
        )
    )
)
