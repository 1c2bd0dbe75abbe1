"""Trace files the slow worker tool leaves, readable by the test process. Kept apart from
worker_tools so importing them does not register the tool in the test process."""

import tempfile
from pathlib import Path


def slow_tool_trace(run_id, stage: str) -> Path:
    return Path(tempfile.gettempdir()) / f"acceptance-slow-lookup-{run_id}-{stage}"
