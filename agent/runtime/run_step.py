# Over 400 lines: one Step class whose methods share one run, lease and pending write.
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
AGENT_LEASE_SECONDS."""

import functools
import json
import logging
import random
import time
import uuid
from concurrent.futures import Future
from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum

from django.conf import settings
from django.db import close_old_connections, transaction
from django.utils import timezone

from agent import run_selectors, services
from agent.answer_check import read_for_check
from agent.context import RunContext
from agent.errors import codes_in_words, error_in_words
from agent.executor import loops
from agent.executor.calls import Requested, ToolRun, run_tool_calls
from agent.executor.pool import call_threads
from agent.executor.prior import PriorCalls, StepChecks
from agent.metrics import model_call_observed
from agent.models import AgentMessage, AgentRun, RunEvent
from agent.providers import get_provider
from agent.providers.breaker import ModelBreaker
from agent.providers.llm import ModelError, ModelReply, Provider
from agent.runtime import drafting, handover, small_model
from agent.runtime.answers import (
    ASK_AGAIN_NOTE,
    COULD_NOT_ANSWER,
    contradicted_answer,
    open_refund_question,
    unfounded_answer,
    unusable_answer,
)
from agent.runtime.calls import (
    approval_details,
    describe_call,
    describe_result,
    logged_calls,
    pending_tool_calls,
    summary_from_tool_log,
    together,
)
from agent.runtime.offered import offered_tools
from agent.runtime.prompts import (
    HISTORY_CHAR_BUDGET,
    Context,
    build_context,
    customer_text_in_result,
)
from agent.runtime.records import record_language, with_records
from agent.runtime.replies import safe_reply
from agent.runtime.streaming import AnswerStream
from agent.runtime.structured_answer import Claimed, read_structured, unfounded_lines
from agent.services import StepInterrupted, StepWrite
from agent.tools.registry import ToolKind, get_tool, tools_for_role
from agent.untrusted import looks_like_instructions
from config.connections import DISCONNECTS

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
# A dropped database connection (failover, restart, an idle connection killed) is not the
# run's fault: the step is retried on a new connection after this long, within the same
# bounded retry budget as model errors (config.connections.DISCONNECTS).
DATABASE_RETRY_BACKOFF_S = (1, 3, 10)


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


def history_budget() -> int:
    """Characters of transcript the model sees: fewer in small-model mode, whose model loses
    the thread in a long context sooner (DESIGN §16)."""
    return SMALL_MODEL_HISTORY_BUDGET if small_model.uses("context") else HISTORY_CHAR_BUDGET


# How the note asking the model again begins, to find it in the transcript.
ASK_AGAIN_HEAD = ASK_AGAIN_NOTE.split("{", 1)[0]


def agent_words(transcript: list[AgentMessage]) -> str:
    """What the support agent typed into the run (its user messages)."""
    return "\n".join(m.content for m in transcript if m.role == AgentMessage.Role.USER)


class LeaseLost(Exception):
    """Another step took the run over (our lease expired): stop touching it."""


def new_lease_owner() -> str:
    return uuid.uuid4().hex


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


def model_retry_delay(exc: ModelError, attempt: int) -> float:
    """Seconds before retry `attempt` (0-based) of a failed model call: what the endpoint's
    Retry-After asked for, else full jitter, uniform(0, min(cap, base * 2^attempt)), so the
    runs a provider turned away together do not all come back together."""
    if exc.retry_after is not None:
        # A little more than asked, for the same reason.
        return exc.retry_after + random.uniform(0, min(1.0, exc.retry_after / 10))
    ceiling = min(settings.LLM_RETRY_CAP_S, settings.LLM_RETRY_BASE_S * 2**attempt)
    return random.uniform(0, ceiling)


class Step:
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

    # --- The model ------------------------------------------------------------------------

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

    def unpostable(self, answer: str) -> str | None:
        """Why `answer` cannot be posted as the run's final answer, or None (DESIGN §16)."""
        problem = unusable_answer(answer)
        if problem is None and settings.AGENT_SMALL_MODEL:
            calls = self.checks.prior.rows.values()
            problem = unfounded_answer(answer, calls) or contradicted_answer(answer, self.run)
        return problem

    def unanswered(self, context: Context, why: str) -> str:
        """The run's answer when the model gave none that can be posted: in small-model mode
        the desk's own planner's answer to the same messages, saying so; else what the tool
        log shows, and the question a refund request that left the amount open needs."""
        if small_model.uses("fallback"):
            return small_model.desk_answer(context.messages, self.role_tools)
        answer = summary_from_tool_log(self.run, why)
        question = open_refund_question(
            agent_words(self.transcript), self.checks.prior.rows.values()
        )
        return f"{answer}\n{question}" if question else answer

    def model_answer(self, content: str | None) -> str:
        """The answer in the model's reply: with small-model mode's "did" piece, the "answer"
        of its JSON, keeping what it says it did (`self.claimed`) to check against the tool
        log; a reply that is not that JSON is the answer as it is."""
        self.claimed = ()
        structured = read_structured(content) if small_model.uses("did") else None
        if structured is None:
            return content or ""
        self.claimed = structured.did
        return structured.answer

    def completed_answer(self, answer: str) -> str:
        """The model's answer as posted: in small-model mode with what it said it did and the
        tool log does not show, told as its claim (agent/runtime/structured_answer.py), and
        with what it leaves open or out (agent/runtime/records.py)."""
        answer = answer.strip()
        calls = self.checks.prior.rows.values()
        words = agent_words(self.transcript)
        told = unfounded_lines(self.claimed, calls, record_language(words))
        if told:
            answer = "\n\n".join([answer, "\n".join(told)])
        if not small_model.uses("records"):
            return answer
        return with_records(answer, calls, words)

    @property
    def role_tools(self) -> set[str]:
        """The names of every tool the run's role may use."""
        return {tool["function"]["name"] for tool in tools_for_role(self.run.actor_role)}

    def asked_again(self) -> bool:
        """Whether this run already asked the model for a usable answer once."""
        return any(
            message.role == AgentMessage.Role.SYSTEM and message.content.startswith(ASK_AGAIN_HEAD)
            for message in self.transcript
        )

    def ask_again(self, write: StepWrite, reply: ModelReply, problem: str) -> StepOutcome:
        """The model's reply cannot be posted (DESIGN §16): save it with a note saying why, and
        hand the run to a next step, which asks the model once more."""
        write.messages.append(
            self.message(AgentMessage.Role.SYSTEM, content=ASK_AGAIN_NOTE.format(problem=problem))
        )
        logger.info("Run %s: unusable answer (%s); asking again", self.run.pk, problem)
        next_owner = new_lease_owner()
        try:
            self.save(write, hand_over_to=next_owner)
        except StepInterrupted:
            return self.stop_cancelled(write)
        self.count_reply(reply)
        handover.keep(
            run_id=self.run.pk,
            owner=next_owner,
            version=self.run.version,
            carried=handover.Carried(transcript=self.transcript, prior=self.checks.prior),
        )
        return StepOutcome(StepKind.CONTINUE, version=self.run.version, owner=next_owner)

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

    def count_reply(self, reply: ModelReply) -> None:
        """The run's counters as the saved reply left them."""
        self.run.step_count += 1
        self.run.tokens_in += reply.tokens_in
        self.run.tokens_out += reply.tokens_out

    @staticmethod
    def started_event(call: dict) -> dict:
        return {
            "tool_call_id": call["id"],
            "name": call["function"]["name"],
            "summary": describe_call(call),
        }

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

    # --- Tools ----------------------------------------------------------------------------

    def execute_tools(
        self,
        calls: list[tuple[int, dict]],
        *,
        announced: bool = False,
        write: StepWrite | None = None,
    ) -> StepOutcome:
        """Run every (position in the reply, call), one tool message per call id: in order,
        except that quick lookups (Tool.quick) next to each other run at the same time.
        `announced`: their tool_call.started events are saved already. Before a tool starts,
        the results before it are saved, in a write that also checks the cancel flag, unless
        they and it are quick lookups: then the flag is read. Once it is set, the remaining
        calls are logged as cancelled without running."""
        write = write if write is not None else StepWrite()
        unsaved_are_quick = True
        for batch in together(calls):
            tool = get_tool(batch[0][1]["function"]["name"])
            writes = tool is not None and tool.kind == ToolKind.WRITE
            quick = tool is not None and tool.quick
            if not self.checks.is_cancelled and (write or writes):
                if quick and unsaved_are_quick:
                    self.check_cancel()
                else:
                    # A write tool gets a durable check right before it; results of read
                    # tools only need to outlive the worker until the step's last write.
                    write = self.save_before_tool(write, durable=writes)
                    unsaved_are_quick = True
            unsaved_are_quick = unsaved_are_quick and quick
            if not announced and not self.checks.is_cancelled:
                for _, call in batch:
                    write.event("tool_call.started", self.started_event(call))
            runs = run_tool_calls(
                self.ctx,
                [
                    Requested(
                        call["id"],
                        call["function"]["name"],
                        call["function"]["arguments"],
                        position,
                    )
                    for position, call in batch
                ],
                checks=self.checks,
                wait=self.heartbeat_wait,
            )
            for (_, call), ran in zip(batch, runs, strict=True):
                self.add_result(write, call, ran)
        if self.checks.is_cancelled:
            return self.stop_cancelled(write)
        next_owner = new_lease_owner()
        try:
            self.save(write, hand_over_to=next_owner)
        except StepInterrupted:
            return self.stop_cancelled(write)
        handover.keep(
            run_id=self.run.pk,
            owner=next_owner,
            version=self.run.version,
            carried=handover.Carried(transcript=self.transcript, prior=self.checks.prior),
        )
        return StepOutcome(StepKind.CONTINUE, version=self.run.version, owner=next_owner)

    def check_cancel(self) -> None:
        """Read the cancel flag where no write comes before the next tool (DESIGN §7: it is
        checked before every tool call). Raises LeaseLost when the run is gone."""
        cancelled = services.run_cancel_flag(run=self.run, owner=self.owner)
        if cancelled is None:
            raise LeaseLost
        self.checks.is_cancelled = cancelled

    def save_before_tool(self, write: StepWrite, *, durable: bool) -> StepWrite:
        """Save what the step has before the next tool starts. Returns what it carries on
        with: a new write, or `write` itself when a cancel stopped the save (stop_cancelled
        saves it with the calls logged as cancelled)."""
        try:
            self.save(write, durable=durable)
        except StepInterrupted:
            self.checks.is_cancelled = True
            return write
        return StepWrite()

    def add_result(self, write: StepWrite, call: dict, ran: ToolRun) -> None:
        """The call's result, log row and events, for the step's next write."""
        result = ran.result
        if ran.row is not None:
            write.logs.append(ran.row)
        write.messages.append(
            self.message(
                AgentMessage.Role.TOOL,
                tool_call_id=call["id"],
                content=json.dumps(result, ensure_ascii=False, default=str),
            )
        )
        if self.checks.is_cancelled:
            return
        write.event(
            "tool_call.completed",
            {
                "tool_call_id": call["id"],
                "name": call["function"]["name"],
                "ok": bool(result.get("ok", True)),
                "error_code": (result.get("error") or {}).get("code", ""),
                # What the panel shows the desk user: the error in words, never its code.
                "error_words": ""
                if result.get("ok", True)
                else error_in_words(result.get("error") or {}),
                "summary": describe_result(call, result),
            },
        )
        approval = approval_details(result) if call["function"]["name"] == "create_refund" else None
        if approval:
            write.event("approval.required", approval)
        suspicious = any(looks_like_instructions(text) for text in customer_text_in_result(result))
        if suspicious and not self.run.untrusted_instructions:
            self.flags["untrusted_instructions"] = True
            self.run.untrusted_instructions = True

    # --- Endings --------------------------------------------------------------------------

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
