"""The model's final answer as a step posts it (DESIGN §16): whether it can be posted, asking
the model once more when it cannot, what is posted when it still cannot, and what small-model
mode adds to an answer (what the model said it did, the records).

Apart from the model call, which hands it the reply's text: the guards themselves are in
answers.py, structured_answer.py and records.py.
"""

import logging

from django.conf import settings

from agent.models import AgentMessage
from agent.providers.llm import ModelReply
from agent.runtime import handover, small_model
from agent.runtime.answers import (
    ASK_AGAIN_NOTE,
    contradicted_answer,
    open_refund_question,
    unfounded_answer,
    unusable_answer,
)
from agent.runtime.calls import summary_from_tool_log
from agent.runtime.prompts import Context
from agent.runtime.records import record_language, with_records
from agent.runtime.step_base import StepKind, StepOutcome, agent_words, new_lease_owner
from agent.runtime.step_endings import StepEndings
from agent.runtime.structured_answer import read_structured, unfounded_lines
from agent.services import StepInterrupted, StepWrite

logger = logging.getLogger(__name__)

# How the note asking the model again begins, to find it in the transcript.
ASK_AGAIN_HEAD = ASK_AGAIN_NOTE.split("{", 1)[0]


class StepAnswer(StepEndings):
    """Judging the model's answer before it is posted, and what is posted instead."""

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
