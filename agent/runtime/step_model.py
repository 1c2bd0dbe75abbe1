"""The step's model call (DESIGN §7, §16): the context it sends, the call on a call thread with
the lease renewed meanwhile, the circuit breaker, retries with their waits, the shorter
history after "context length exceeded", and the reply saved before any of its tools run.

What the reply leads to is the other parts': its tools (step_tools.py), its answer
(step_answer.py), the run's end (step_endings.py).
"""

import functools
import logging
import random
import time
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from agent import services
from agent.executor.pool import call_threads
from agent.metrics import model_call_observed
from agent.models import AgentMessage, AgentRun, RunEvent
from agent.providers import get_provider
from agent.providers.breaker import ModelBreaker
from agent.providers.llm import ModelError, ModelReply, Provider
from agent.runtime import small_model
from agent.runtime.answers import COULD_NOT_ANSWER
from agent.runtime.offered import offered_tools
from agent.runtime.prompts import HISTORY_CHAR_BUDGET, Context, build_context
from agent.runtime.replies import safe_reply
from agent.runtime.step_answer import StepAnswer
from agent.runtime.step_base import LeaseLost, StepKind, StepOutcome, agent_words
from agent.runtime.step_endings import Ending
from agent.runtime.step_tools import StepTools
from agent.runtime.streaming import AnswerStream
from agent.services import StepInterrupted, StepWrite

logger = logging.getLogger(__name__)

# Model errors that may pass (timeout, 429, 5xx) are retried this many times, then the run fails.
# The waits between them: full jitter (model_retry_delay), within LLM_RETRY_MAX_WAIT_S per step.
MODEL_RETRIES = 3
# After "context length exceeded" the step asks once more with this much history.
TRIMMED_HISTORY_BUDGET = HISTORY_CHAR_BUDGET // 4
SMALL_MODEL_HISTORY_BUDGET = HISTORY_CHAR_BUDGET // 5
# A step waiting for the model says so on the run, as a "message" event of this kind: the
# panel shows a message's content as it is.
MODEL_UNAVAILABLE = "model.unavailable"


def history_budget() -> int:
    """Characters of transcript the model sees: fewer in small-model mode, whose model loses
    the thread in a long context sooner (DESIGN §16)."""
    return SMALL_MODEL_HISTORY_BUDGET if small_model.uses("context") else HISTORY_CHAR_BUDGET


def model_retry_delay(exc: ModelError, attempt: int) -> float:
    """Seconds before retry `attempt` (0-based) of a failed model call: what the endpoint's
    Retry-After asked for, else full jitter, uniform(0, min(cap, base * 2^attempt)), so the
    runs a provider turned away together do not all come back together."""
    if exc.retry_after is not None:
        # A little more than asked, for the same reason.
        return exc.retry_after + random.uniform(0, min(1.0, exc.retry_after / 10))
    ceiling = min(settings.LLM_RETRY_CAP_S, settings.LLM_RETRY_BASE_S * 2**attempt)
    return random.uniform(0, ceiling)


class StepModel(StepTools, StepAnswer):
    """Asking the model, and what its reply leads to."""

    def call_model(self, *, ending: Ending | None, attempt: int) -> StepOutcome:
        final = ending is not None
        context = build_context(
            self.ctx,
            transcript=self.transcript,
            now=timezone.now(),
            final=final,
            history_budget=history_budget(),
            examples=small_model.uses("examples"),
            structured=small_model.uses("did"),
        )
        if context.untrusted_instructions and not self.run.untrusted_instructions:
            self.flags["untrusted_instructions"] = True
        provider = get_provider()
        breaker = ModelBreaker.for_provider(provider)
        paused_for = breaker.wait_s()
        if paused_for > 0:
            # The endpoint keeps failing for every run: wait it out without calling.
            return self.wait_for_model(
                f"the last {breaker.failures()} calls to the model endpoint failed",
                paused_for,
                attempt=attempt,
            )
        started = time.monotonic()
        try:
            reply = self.ask(provider, breaker, context, final=final)
        except ModelError as exc:
            if not exc.context_too_long:
                return self.model_failed(exc, attempt=attempt)
            try:
                reply = self.ask_with_less_history(provider, breaker, final=final)
            except ModelError as again:
                return self.model_failed(again, attempt=attempt, trimmed=True)
        latency_ms = round((time.monotonic() - started) * 1000)
        reply = safe_reply(reply, run=self.run, transcript=self.transcript)
        # The last call may not start more work, whatever the model sent.
        tool_calls = [] if final else reply.tool_calls
        write = self.reply_write(reply, tool_calls, final=final, latency_ms=latency_ms)
        said = reply.content if tool_calls else self.model_answer(reply.content)
        problem = None if tool_calls else self.unpostable(said)
        if ending is not None:
            if problem:
                answer = self.unanswered(context, ending.why)
            else:
                answer = self.completed_answer(said)
            return self.complete(ending.stop_reason, answer, write)
        if problem and not self.asked_again():
            return self.ask_again(write, reply, problem)
        if problem:
            answer = self.unanswered(context, f"{COULD_NOT_ANSWER} ({problem}.)")
            return self.complete(AgentRun.StopReason.FINAL_ANSWER, answer, write)
        if not tool_calls:
            answer = self.completed_answer(said)
            return self.complete(AgentRun.StopReason.FINAL_ANSWER, answer, write)
        try:
            # Once this commits the step never asks the model again for these calls.
            self.save(write)
        except StepInterrupted:
            # Cancelled while the model answered: its calls are logged as cancelled, not run.
            self.checks.is_cancelled = True
            return self.execute_tools(list(enumerate(tool_calls)), announced=True, write=write)
        self.count_reply(reply)
        return self.execute_tools(list(enumerate(tool_calls)), announced=True)

    def reply_write(
        self, reply: ModelReply, tool_calls: list[dict], *, final: bool, latency_ms: int
    ) -> StepWrite:
        """The model's reply as the step saves it: the assistant message with its calls, the
        call and its tokens counted on the run, and the events the panel shows."""
        step = self.run.step_count + 1
        write = StepWrite(
            messages=[
                self.message(
                    AgentMessage.Role.ASSISTANT,
                    content=reply.content or "",
                    tool_calls=tool_calls or None,
                )
            ]
        )
        write.event("model.started", {"step": step, "final": final})
        write.event(
            "model.completed",
            {
                "step": step,
                "finish_reason": reply.finish_reason,
                "tool_calls": [call["function"]["name"] for call in tool_calls],
                "tokens_in": reply.tokens_in,
                "tokens_out": reply.tokens_out,
                "tokens_cached": reply.tokens_cached,
                "latency_ms": latency_ms,
            },
        )
        if reply.content and tool_calls:
            write.event("message", {"role": "assistant", "content": reply.content})
        for call in tool_calls:
            write.event("tool_call.started", self.started_event(call))
        write.counts = {
            "step_count": 1,
            "tokens_in": reply.tokens_in,
            "tokens_out": reply.tokens_out,
        }
        return write

    def ask(
        self, provider: Provider, breaker: ModelBreaker, context: Context, *, final: bool
    ) -> ModelReply:
        """One model call on a call thread, counted by the breaker: a failure a retry may
        cure counts against the endpoint, an answer closes the breaker."""
        stream = AnswerStream(run=self.run, step=self.run.step_count + 1)
        words = agent_words(self.transcript)
        calls = list(self.checks.prior.rows.values())
        planned = small_model.planned_call(context.messages, self.role_tools)
        tools = offered_tools(self.run.actor_role, calls=calls, agent_words=words, planned=planned)
        call = functools.partial(
            provider.complete,
            messages=context.messages,
            tools=tools,
            tool_choice=small_model.tool_choice(
                final=final, calls=calls, agent_words=words, planned=planned
            ),
            on_text=stream,
        )
        try:
            with model_call_observed():
                # The client gives up after LLM_TIMEOUT_S; the margin covers its last read.
                reply = self.heartbeat_wait(call_threads().submit(call), settings.LLM_TIMEOUT_S + 5)
        except TimeoutError:
            breaker.record_failure("no answer")
            raise ModelError(
                f"the model did not answer within {settings.LLM_TIMEOUT_S:g}s", retryable=True
            ) from None
        except ModelError as exc:
            if exc.retryable:
                breaker.record_failure(exc.message)
            raise
        finally:
            stream.close()
        breaker.record_success()
        return reply

    def ask_with_less_history(
        self, provider: Provider, breaker: ModelBreaker, *, final: bool
    ) -> ModelReply:
        """The conversation did not fit the model: ask once more with older exchanges left
        out, cut only between whole exchanges (a tool call keeps its results)."""
        context = build_context(
            self.ctx,
            transcript=self.transcript,
            now=timezone.now(),
            final=final,
            history_budget=TRIMMED_HISTORY_BUDGET,
            examples=small_model.uses("examples"),
            structured=small_model.uses("did"),
        )
        logger.warning(
            "Run %s: the conversation is too long for the model; asking again with %d messages",
            self.run.pk,
            len(context.messages),
        )
        return self.ask(provider, breaker, context, final=final)

    def model_failed(self, exc: ModelError, *, attempt: int, trimmed: bool = False) -> StepOutcome:
        if exc.context_too_long and trimmed:
            return self.fail(
                f"The model call failed: {exc.message}, even with older messages of this run "
                "left out."
            )
        if not exc.retryable:
            return self.fail(f"The model call failed: {exc.message}.")
        return self.wait_for_model(exc.message, model_retry_delay(exc, attempt), attempt=attempt)

    def wait_for_model(self, reason: str, delay: float, *, attempt: int) -> StepOutcome:
        """Ask for this step again in `delay` seconds, saying so on the run; or fail the run
        when the step has been retried enough or would wait past LLM_RETRY_MAX_WAIT_S."""
        if attempt >= MODEL_RETRIES:
            return self.fail(f"The model call failed: {reason} (after {attempt + 1} attempts).")
        waited = self.waited_for_model()
        limit = settings.LLM_RETRY_MAX_WAIT_S
        if waited + delay > limit:
            return self.fail(
                f"The model call failed: {reason}. Retrying would mean waiting {delay:.0f}s "
                f"more, past the {limit:g}s a step may wait for the model."
            )
        logger.warning(
            "Run %s: model unavailable (%s); retry %d of %d in %.1fs",
            self.run.pk,
            reason,
            attempt + 1,
            MODEL_RETRIES,
            delay,
        )
        retry_at = timezone.localtime(timezone.now() + timedelta(seconds=delay))
        self.system_note(
            MODEL_UNAVAILABLE,
            f"Model unavailable ({reason}), retrying at {retry_at:%H:%M:%S} {retry_at.tzname()}.",
            reason=reason,
            step=self.run.step_count + 1,
            wait_s=round(delay, 3),
            retry_at=retry_at.isoformat(),
        )
        version = services.run_release_lease(run=self.run, owner=self.owner)
        if version is None:
            raise LeaseLost
        return StepOutcome(StepKind.RETRY, version=version, retry_in=delay)

    def waited_for_model(self) -> float:
        """Seconds this step has already been told to wait for the model, from its events."""
        step = self.run.step_count + 1
        waits = RunEvent.objects.filter(run=self.run, type="message").values_list("data", flat=True)
        return sum(
            float(data.get("wait_s") or 0)
            for data in waits
            if data.get("kind") == MODEL_UNAVAILABLE and data.get("step") == step
        )
