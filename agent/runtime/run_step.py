"""One step of an assistant run (DESIGN §7): hold the run → pending tools or one model call →
tools → hand the run to the next step, or finish.

A step is safe to run twice. It holds the run by its lease: taken with a conditional UPDATE
by the first step and by any step the sweep re-enqueues, and otherwise handed over by the
step before it, in that step's last write, to the owner named in the next task. Each write
of a step is one transaction that first checks, in one conditional UPDATE, that the step
still holds the run at the version it last wrote and that no cancel was asked for: a second
delivery of a step, or a step whose lease expired, saves nothing and runs no tool.

On the path where the model only reads, a step commits twice: the model's reply with its
calls, before any tool runs, and then the results with their log rows, events and the hand-
over. A tool's result is saved before the next tool starts (on PostgreSQL without waiting
for the disk: the last write is the durable one), so a worker killed mid-step repeats at
most the call it was in. Quick lookups in the desk's database (Tool.quick) next to each other
in a reply are the exception: they run at the same time, after one check of the cancel flag
(a read, when no write comes before them), and a worker killed meanwhile repeats them all.
Model and tool calls run on the process's call threads (agent/executor/pool.py), which keep their
database connections; while one is in flight the step renews its lease every third of
AGENT_LEASE_SECONDS.

The step is one class in parts, each a module of its own: step_base.py (the run it holds,
its writes, its lease), step_endings.py (limits and endings), step_tools.py (tool calls),
step_answer.py (the final answer), step_model.py (the model call); `Step` here puts them
together and `perform` chooses between them."""

import logging
import uuid

from django.conf import settings
from django.db import close_old_connections

from agent import services
from agent.models import AgentRun
from agent.runtime import handover
from agent.runtime.calls import pending_tool_calls, summary_from_tool_log
from agent.runtime.step_answer import ASK_AGAIN_HEAD
from agent.runtime.step_base import LeaseLost, StepKind, StepOutcome, new_lease_owner
from agent.runtime.step_model import (
    MODEL_RETRIES,
    MODEL_UNAVAILABLE,
    StepModel,
    model_retry_delay,
)
from agent.services import StepWrite
from config.connections import DISCONNECTS

# Names the step's callers read here (agent/tasks.py, evals, benches, tests).
__all__ = [
    "ASK_AGAIN_HEAD",
    "DATABASE_RETRY_BACKOFF_S",
    "MODEL_RETRIES",
    "MODEL_UNAVAILABLE",
    "LeaseLost",
    "Step",
    "StepKind",
    "StepOutcome",
    "advance",
    "model_retry_delay",
]

logger = logging.getLogger(__name__)

# A dropped database connection (failover, restart, an idle connection killed) is not the
# run's fault: the step is retried on a new connection after this long, within the same
# bounded retry budget as model errors (config.connections.DISCONNECTS).
DATABASE_RETRY_BACKOFF_S = (1, 3, 10)


def advance(
    *,
    run_id: uuid.UUID | str,
    expected_version: int | None = None,
    attempt: int = 0,
    owner: str | None = None,
) -> StepOutcome:
    """Run one step of `run_id`: as `owner` when the step before handed the run over (with
    the version it left), else taking the lease. Precondition: not inside a transaction (tools
    run here)."""
    carried = None
    if owner and expected_version is not None:
        run = services.run_held(run_id=run_id, owner=owner, version=expected_version)
        carried = handover.take(run_id=run_id, owner=owner, version=expected_version)
    else:
        owner = new_lease_owner()
        run = services.run_acquire_lease(
            run_id=run_id, owner=owner, expected_version=expected_version
        )
    if run is None:
        return StepOutcome(StepKind.SKIPPED)
    try:
        return Step(run=run, owner=owner, carried=carried).perform(attempt=attempt)
    except LeaseLost:
        logger.warning("Run %s: lease lost mid-step; the newer step carries on", run_id)
        return StepOutcome(StepKind.SKIPPED)
    except DISCONNECTS as exc:
        logger.warning(
            "Run %s: database connection lost mid-step (%s); retrying the step",
            run_id,
            " ".join(str(exc).split())[:200],
        )
        return database_retry(run=run, owner=owner, attempt=attempt)
    except Exception:
        # A bug must not leave the run bouncing between workers forever.
        logger.exception("Run %s: step crashed", run_id)
        services.run_finish(
            run=run,
            owner=owner,
            stop_reason=AgentRun.StopReason.ERROR,
            error="The assistant hit an internal error and stopped.",
        )
        return StepOutcome(StepKind.FINISHED)


def database_retry(*, run: AgentRun, owner: str, attempt: int) -> StepOutcome:
    """Hand the lease back on a fresh connection and ask for the step to be retried.

    Everything the step committed stays: the retry re-reads the transcript, never asks the
    model again for tool calls it already saved, and the executor replays logged tool calls.
    If the database is still unreachable the lease stays until it expires, and the retry (or
    resume_stalled_runs) takes the run over then.
    """
    close_old_connections()
    try:
        version = services.run_release_lease(run=run, owner=owner)
    except DISCONNECTS:
        close_old_connections()
        version = None
    delay = DATABASE_RETRY_BACKOFF_S[min(attempt, len(DATABASE_RETRY_BACKOFF_S) - 1)]
    return StepOutcome(StepKind.RETRY, version=version, retry_in=delay)


class Step(StepModel):
    """One step of a run, all its parts together."""

    def perform(self, *, attempt: int) -> StepOutcome:
        if self.run.cancel_requested:
            return self.stop_cancelled(StepWrite())
        pending = pending_tool_calls(self.transcript)
        if pending:
            # The model already answered in a step that died: never ask it again.
            return self.execute_tools(pending, announced=False)
        if self.run.tokens_in + self.run.tokens_out >= settings.AGENT_TOKEN_BUDGET:
            return self.complete(
                AgentRun.StopReason.BUDGET,
                summary_from_tool_log(
                    self.run, "I stopped because this run used up its token budget."
                ),
            )
        ending = self.forced_ending()
        if ending is not None and attempt == 0:
            self.announce(ending)
        return self.call_model(ending=ending, attempt=attempt)
