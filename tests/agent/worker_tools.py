"""Probe tools for worker subprocesses (`--include tests.agent.worker_tools`).

They leave their traces in files under $PROBE_DIR, so the test process can count how many
times each tool body ran inside a worker, even one that was killed.
"""

import contextlib
import os
import time
from pathlib import Path

from agent.tools.registry import SUPPORT_ROLES, Tool, ToolKind, registered_tool

NO_ARGUMENTS = {"type": "object", "properties": {}, "required": [], "additionalProperties": False}


def _trace(name: str) -> None:
    with (Path(os.environ["PROBE_DIR"]) / name).open("a") as trace:
        trace.write("x\n")


def counted_probe(ctx, args) -> dict:
    _trace("counted_probe")
    return {"counted": True}


def blocking_probe(ctx, args) -> dict:
    """Blocks while $PROBE_DIR/block exists, so a test can kill the worker mid-tool."""
    _trace("blocking_started")
    while (Path(os.environ["PROBE_DIR"]) / "block").exists():
        time.sleep(0.1)
    _trace("blocking_finished")
    return {"blocked": False}


_registrations = contextlib.ExitStack()
for _handler in (counted_probe, blocking_probe):
    # quick_counted_probe and quick_blocking_probe are the same bodies declared quick lookups
    # (Tool.quick): a step saves their results only with its next write.
    for _quick in (False, True):
        _name = f"quick_{_handler.__name__}" if _quick else _handler.__name__
        _registrations.enter_context(
            registered_tool(
                Tool(
                    name=_name,
                    description=f"Test probe {_name}.",
                    parameters=NO_ARGUMENTS,
                    handler=_handler,
                    kind=ToolKind.READ,
                    roles=SUPPORT_ROLES,
                    quick=_quick,
                )
            )
        )
