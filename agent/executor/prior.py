"""What a run has called already: the step's PriorCalls, read once per step, and the same
questions asked of the database for a call outside a step (LogChecks).
"""

from collections import Counter
from dataclasses import dataclass

from agent.context import RunContext, ToolContext
from agent.executor import loops
from agent.models import AgentMessage, AgentRun, ToolCallLog


class PriorCalls:
    """The tool calls a run has logged, read once per step: a step asks these, not the
    database, whether a call was logged already and how often the same call was made."""

    def __init__(self, rows: list[dict]):
        self.rows = {row["tool_call_id"]: self._keyed(row) for row in rows}
        self._made = Counter((row["tool_name"], row["args_digest"]) for row in rows)

    FIELDS = (
        "tool_call_id",
        "tool_name",
        "args_digest",
        "arguments_raw",
        "ok",
        "error_code",
        "retryable",
        "result",
    )

    @classmethod
    def load(cls, run: AgentRun, transcript: list[AgentMessage]) -> "PriorCalls":
        """The calls `run` logged, whose replies are in `transcript`. A call is logged only
        once the reply that made it is saved (before it runs, or in the same write when a
        cancel stopped it), so a transcript without tool calls has none to read."""
        if not any(message.tool_calls for message in transcript):
            return cls([])
        rows = ToolCallLog.objects.filter(run_id=run.pk).order_by("id").values(*cls.FIELDS)
        return cls(list(rows))

    def result(self, tool_call_id: str) -> dict | None:
        row = self.rows.get(tool_call_id)
        return None if row is None else row["result"]

    def identical_calls(self, name: str, digest: str) -> int:
        return self._made[(name, digest)]

    def count(self, name: str, digest: str) -> None:
        """A call of `name` with arguments `digest` is being made (its row comes later)."""
        self._made[(name, digest)] += 1

    def add(self, row: ToolCallLog, *, counted: bool = False) -> None:
        """`row` was logged; `counted`: its call was counted already."""
        self.rows[row.tool_call_id] = self._keyed(
            {field: getattr(row, field) for field in self.FIELDS}
        )
        if not counted:
            self.count(row.tool_name, row.args_digest)

    @staticmethod
    def _keyed(row: dict) -> dict:
        """`row` with what loop detection compares (loops.calls_by_step), worked out once per
        call: a step looks for loops over all of its run's calls before every model call."""
        row["call_key"] = loops.call_key(row["tool_name"], row["arguments_raw"])
        row["result_key"] = loops.result_key(row["result"])
        return row


class LogChecks:
    """The same questions asked of the database, for a call outside a step (MCP, tests)."""

    def __init__(self, ctx: ToolContext):
        self.ctx = ctx

    def cancelled(self) -> bool:
        return isinstance(self.ctx, RunContext) and _cancelled(self.ctx.run)

    def identical_calls(self, name: str, digest: str) -> int:
        if not isinstance(self.ctx, RunContext):
            return 0
        return _identical_calls(self.ctx.run, name, digest)


@dataclass
class StepChecks:
    """A step's answers: it saw the cancel flag in its last write (`cancelled`), and knows its
    run's earlier calls (`prior`)."""

    prior: PriorCalls
    is_cancelled: bool = False

    def cancelled(self) -> bool:
        return self.is_cancelled

    def identical_calls(self, name: str, digest: str) -> int:
        return self.prior.identical_calls(name, digest)


def _cancelled(run: AgentRun) -> bool:
    state = AgentRun.objects.filter(pk=run.pk).values_list("cancel_requested", "status").first()
    return state is None or state[0] or state[1] == AgentRun.Status.CANCELLED


def _identical_calls(run: AgentRun, name: str, digest: str) -> int:
    return ToolCallLog.objects.filter(run=run, tool_name=name, args_digest=digest).count()
