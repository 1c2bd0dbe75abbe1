"""What every part of a step stands on (run_step.py): the outcome a step reports, the lease it
holds the run by, and the step's state with its writes.

`StepBase` holds the run for one step: the transcript and tool-call log it carries on with,
the flags its next write sets, how it saves (one conditional write per save, services.
run_step_save) and how it waits on a call thread while renewing its lease. The step's other
parts extend it (step_endings.py, step_tools.py, step_answer.py, step_model.py) and
run_step.Step puts them together; apart so that each part reads only what it needs of the
step.
"""

import time
import uuid
from concurrent.futures import Future
from dataclasses import dataclass
from enum import StrEnum

from django.conf import settings

from agent import run_selectors, services
from agent.context import RunContext
from agent.executor.prior import PriorCalls, StepChecks
from agent.models import AgentMessage, AgentRun
from agent.providers.llm import ModelReply
from agent.runtime import handover
from agent.runtime.structured_answer import Claimed
from agent.services import StepInterrupted, StepWrite
from agent.tools.registry import tools_for_role


class StepKind(StrEnum):
    SKIPPED = "skipped"  # another step holds the run, or it ended: nothing was done
    CONTINUE = "continue"  # enqueue the next step
    RETRY = "retry"  # run this step again after `retry_in` seconds
    FINISHED = "finished"  # the run ended


@dataclass(frozen=True)
class StepOutcome:
    kind: StepKind
    # For CONTINUE and RETRY: the version the next delivery must find.
    version: int | None = None
    retry_in: float | None = None
    # For CONTINUE: the lease owner the run was handed to, for the next delivery to act as.
    owner: str | None = None


def agent_words(transcript: list[AgentMessage]) -> str:
    """What the support agent typed into the run (its user messages)."""
    return "\n".join(m.content for m in transcript if m.role == AgentMessage.Role.USER)


class LeaseLost(Exception):
    """Another step took the run over (our lease expired): stop touching it."""


def new_lease_owner() -> str:
    return uuid.uuid4().hex


class StepBase:
    """One step's hold on its run: what it carries on with and how it writes."""

    def __init__(self, *, run: AgentRun, owner: str, carried: handover.Carried | None = None):
        """`carried`: what the step before left in this process (handover.py), else
        the transcript and tool-call log are read."""
        self.run = run
        self.owner = owner
        self.ctx = RunContext.for_run(run)
        if carried is None:
            transcript = run_selectors.run_transcript(run=run)
            carried = handover.Carried(
                transcript=transcript, prior=PriorCalls.load(run, transcript)
            )
        # What the step saves is added to it, for the next step to carry on with.
        self.transcript = carried.transcript
        # The step is the only writer of its run's transcript: it numbers what it adds.
        self.next_seq = (self.transcript[-1].seq if self.transcript else 0) + 1
        self.checks = StepChecks(prior=carried.prior)
        # Run fields to set with the step's next write (the untrusted-instructions flag).
        self.flags: dict = {}
        # What the model's structured answer says it did (small-model mode's "did" piece).
        self.claimed: tuple[Claimed, ...] = ()

    def system_note(self, kind: str, content: str, **data) -> None:
        """A note from the desk on the run's stream (the panel shows `content`)."""
        services.run_event_append(
            run=self.run,
            type="message",
            data={"role": "system", "kind": kind, "content": content, **data},
        )

    # --- Writing ----------------------------------------------------------------------------

    def save(self, write: StepWrite, **options) -> None:
        """One write of the step (services.run_step_save) with the flags it has gathered.
        Raises StepInterrupted when a cancel was asked for, LeaseLost when the run is gone."""
        try:
            services.run_step_save(
                run=self.run, owner=self.owner, write=write, **options, **self.flags
            )
        except StepInterrupted as stop:
            if not stop.cancelled:
                raise LeaseLost from stop
            raise
        self.transcript.extend(write.messages)
        self.flags.clear()

    def message(self, role: str, **fields) -> AgentMessage:
        message = AgentMessage(run=self.run, seq=self.next_seq, role=role, **fields)
        self.next_seq += 1
        return message

    def count_reply(self, reply: ModelReply) -> None:
        """The run's counters as the saved reply left them."""
        self.run.step_count += 1
        self.run.tokens_in += reply.tokens_in
        self.run.tokens_out += reply.tokens_out

    def heartbeat_wait(self, future: Future, timeout: float):
        """The call's result, waiting at most `timeout` seconds (then TimeoutError) and
        renewing the lease every third of AGENT_LEASE_SECONDS meanwhile."""
        deadline = time.monotonic() + timeout
        beat = max(settings.AGENT_LEASE_SECONDS / 3, 0.1)
        while True:
            left = deadline - time.monotonic()
            if left <= 0 and not future.done():
                raise TimeoutError
            try:
                return future.result(max(min(beat, left), 0))
            except TimeoutError:
                if time.monotonic() >= deadline:
                    raise
                if not services.run_renew_lease(run=self.run, owner=self.owner):
                    raise LeaseLost from None

    @property
    def role_tools(self) -> set[str]:
        """The names of every tool the run's role may use."""
        return {tool["function"]["name"] for tool in tools_for_role(self.run.actor_role)}
