"""How a run ends (DESIGN §7): the limits that make a step's model call the last one (the step
limit, the time limit, the loop guard), and the writes that end the run (cancelled, failed,
completed with its answer, customer draft and claim reading).

Apart from the model call and the tools because both of them end runs through it.
"""

import logging
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from agent import services
from agent.answer_check import read_for_check
from agent.errors import codes_in_words
from agent.executor import loops
from agent.executor.pool import call_threads
from agent.models import AgentRun
from agent.providers import get_provider
from agent.runtime import drafting
from agent.runtime.calls import logged_calls
from agent.runtime.step_base import LeaseLost, StepBase, StepKind, StepOutcome
from agent.services import StepWrite

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Ending:
    """Why a run is being stopped before the model chose to answer: the stop reason, the first
    line of a summary from the tool log if the final call gives no answer, and what to record
    about it (e.g. which loop rule fired)."""

    stop_reason: str
    why: str
    detail: dict


STEP_LIMIT = Ending(
    AgentRun.StopReason.MAX_STEPS,
    "I reached the step limit for this request before finishing.",
    {},
)
# The event a forced ending announces itself with (a "message", which the panel shows).
RUN_STOPPING = "run.stopping"


class StepEndings(StepBase):
    """The step's limits and the writes that end its run."""

    def forced_ending(self) -> Ending | None:
        """Whether this step's model call must be the last one (no tools), and why. At the
        step limit the run ends anyway: that is the reason, even if it also looped."""
        if self.run.step_count >= self.run.max_steps:
            return STEP_LIMIT
        elapsed = (timezone.now() - self.run.created_at).total_seconds()
        limit = settings.AGENT_RUN_TIMEOUT_S
        if limit > 0 and elapsed >= limit:
            return Ending(
                AgentRun.StopReason.BUDGET,
                f"I stopped because this run reached its time limit ({limit:g}s).",
                {"budget": "time", "elapsed_s": round(elapsed, 1)},
            )
        loop = loops.detect_loop(
            logged_calls(self.checks.prior, self.transcript),
            stall_steps=settings.AGENT_LOOP_STALL_STEPS,
        )
        if loop is not None:
            return Ending(
                AgentRun.StopReason.LOOP_DETECTED,
                f"I stopped because I was going round in circles ({loop.description}).",
                {"loop": loop.rule.value, "description": loop.description},
            )
        return None

    def announce(self, ending: Ending) -> None:
        """Say on the run, and in the log, why the next answer is forced."""
        logger.info("Run %s: stopping with %s %s", self.run.pk, ending.stop_reason, ending.detail)
        self.system_note(RUN_STOPPING, ending.why, stop_reason=ending.stop_reason, **ending.detail)

    def stop_cancelled(self, write: StepWrite) -> StepOutcome:
        """The cancel flag is set: save what the step has (results of tools that ran, calls
        logged as cancelled) and end the run, in one transaction."""
        with transaction.atomic():
            if write or self.flags:
                self.save(write, cancelled_ok=True)
            if not services.run_finish(
                run=self.run, owner=self.owner, stop_reason=AgentRun.StopReason.CANCELLED
            ):
                raise LeaseLost
        return StepOutcome(StepKind.FINISHED)

    def customer_draft(self):
        """The run's draft for the customer (runtime/drafting.py), a model call waited on as
        the step waits on any: renewing its lease."""
        return drafting.write_draft(
            ticket=self.run.ticket,
            provider=get_provider(),
            ask=lambda call: self.heartbeat_wait(
                call_threads().submit(call), settings.LLM_TIMEOUT_S + 5
            ),
        )

    def fail(self, error: str) -> StepOutcome:
        services.run_finish(
            run=self.run,
            owner=self.owner,
            stop_reason=AgentRun.StopReason.ERROR,
            error=error,
            **self.flags,  # what the step learned before failing (untrusted instructions)
        )
        return StepOutcome(StepKind.FINISHED)

    def complete(
        self, stop_reason: str, answer: str, write: StepWrite | None = None
    ) -> StepOutcome:
        """End the run with `answer` and its customer draft, saved in one transaction with the
        reply it came from. A cancel asked for while the model wrote it does not throw the
        answer away. An error code the model quoted reaches the desk user in words."""
        answer = codes_in_words(answer)
        draft = self.customer_draft()
        # A model call, made before the transaction: run_finish judges it holding the run's row.
        reading = read_for_check(text=answer, ticket=self.run.ticket, customer=self.run.customer)
        with transaction.atomic():
            if write is not None:
                self.save(write, cancelled_ok=True)
            if not services.run_finish(
                run=self.run,
                owner=self.owner,
                stop_reason=stop_reason,
                final_answer=answer,
                claim_reading=reading,
                draft_reply=draft.body,
                draft_language=draft.language,
                draft_state=draft.state,
            ):
                raise LeaseLost
        return StepOutcome(StepKind.FINISHED)
