# ruff: noqa: RUF001 (Chinese punctuation is what those answers are written in)
"""Whether a model's final answer can be posted (DESIGN §16).

A small model may end with nothing, with chat-template markup (`<tools></tools>`), with a tool
call written out as text instead of made (`<function name=...>`, `{"name": ..., "arguments":
...}`), or with an untrusted block it echoed or made up. None of that is an answer to the
agent. In small-model mode, nor is an answer that tells of work the run's tool log does not
show: a refund it says it proposed with no create_refund of the run behind it, or the status
or amounts of an order no tool of the run returned (a small model writes "I found the order …
I proposed …" without calling anything); nor one whose claims about refunds the records
contradict (elsewhere such an answer is posted, flagged, with the real status). The step asks
the model once more (agent/runtime/run_step.py), then says it could not answer.
"""

import json
import re
from collections.abc import Iterable

from agent.answer_check import ORDER_ID, SENTENCE_END, check_text
from agent.models import AgentRun
from agent.runtime.small_model import clear_refund_request
from agent.untrusted import carries_untrusted_markers
from agent.vocabulary import asks_for_refund
from agent.vocabulary.answers import NEGATION_WORD, ORDER_FACT, PROPOSED, REFUND_WORD, REPORTED

# A tag, an opening or closing one, as chat templates and tool-call formats write them.
_MARKUP = re.compile(r"</?\s*[A-Za-z_|][\w|:-]*(?:\s[^<>]*)?/?>")
_CALL_AS_TEXT = re.compile(
    r"<\s*/?\s*(?:function|tool_call|tool_calls|tools?|function_call)\b"
    r'|\{\s*"(?:name|function)"\s*:\s*"[^"]*"\s*,\s*"(?:arguments|parameters)"\s*:'
    r'|\{\s*"(?:arguments|parameters)"\s*:\s*\{.*"name"\s*:',
    re.IGNORECASE | re.DOTALL,
)

ASK_AGAIN_NOTE = (
    "Your last reply was not an answer the support agent can read ({problem}). Reply again "
    "with an answer in plain sentences: what the tool results of this run show, what you did, "
    "what is left to do. Nothing is proposed unless a create_refund result says so: if the "
    "agent's request leaves the order, the amount or the reason open, ask them one short "
    "question. To use a tool, make a real tool call now instead of writing it out or writing "
    "about it."
)
COULD_NOT_ANSWER = "I could not put together an answer to this request."


def unusable_answer(text: str) -> str | None:
    """Why `text` cannot be posted as a final answer, or None when it can."""
    if not (text or "").strip():
        return "it was empty"
    if carries_untrusted_markers(text):
        return "it carried the markers of an untrusted block"
    if not _MARKUP.sub("", text).strip():
        return "it was only markup"
    if _CALL_AS_TEXT.search(text):
        return "it was a tool call written as text"
    return None


_QUESTION = re.compile(r"[?？]\W*$")


def contradicted_answer(text: str, run: AgentRun) -> str | None:
    """Why `text` cannot be posted: a claim about a refund (paid, approved, on its way) that
    the refunds of the run's ticket contradict (agent/answer_check/), or None."""
    false_claims = check_text(text=text, ticket=run.ticket, customer=run.customer).false_claims
    if not false_claims:
        return None
    # Named by kind, not quoted: this reason may end up in the answer the desk posts instead.
    claim = false_claims[0]
    return (
        f"its claim about the refund ({claim.claimed}) is not what the records say ({claim.actual})"
    )


# Where the words that may negate a claim stop: "(…, nothing refunded) and proposed a refund"
# claims a proposal.
_CLAUSE_EDGE = re.compile(r"[(),;:，；：（）]")


def _claims_proposal(sentence: str) -> bool:
    """Whether `sentence` says a refund was proposed ("no refund was proposed" does not)."""
    if not REFUND_WORD.search(sentence):
        return False
    return any(
        not NEGATION_WORD.search(_CLAUSE_EDGE.split(sentence[: match.start()])[-1][-30:])
        for match in PROPOSED.finditer(sentence)
    )


def unfounded_answer(text: str, calls: Iterable[dict]) -> str | None:
    """Why `text` tells of work the run's tool log does not show, or None. `calls`: the run's
    logged calls (rows with tool_name, ok, result)."""
    calls = [call for call in calls if call["ok"]]
    proposed = any(call["tool_name"] == "create_refund" for call in calls)
    shown = " ".join(json.dumps(call["result"], default=str) for call in calls)
    for sentence in SENTENCE_END.split(text or ""):
        if not sentence.strip() or _QUESTION.search(sentence):
            continue
        if not proposed and _claims_proposal(sentence):
            return "it says a refund was proposed, but no create_refund call of this run succeeded"
        unseen = [number for number in ORDER_ID.findall(sentence) if number not in shown]
        stated = ORDER_FACT.search(ORDER_ID.sub(" ", sentence))
        if unseen and stated and not REPORTED.search(sentence):
            return (
                f"it states facts about order {unseen[0]}, which no tool result of this run "
                "showed: look it up before you say anything about it"
            )
    return None


OPEN_REFUND_QUESTION = (
    "Nothing was proposed: which order should I refund, how much, and for what reason?"
)


def open_refund_question(agent_words: str, calls: Iterable[dict]) -> str:
    """The question a run that could not answer ends with, whatever the model, when the agent
    asked for a refund without saying how much and nothing was proposed ("" otherwise): the
    desk asks when the model could not (DESIGN §16)."""
    if not asks_for_refund(agent_words) or clear_refund_request(agent_words):
        return ""
    if any(call["ok"] and call["tool_name"] == "create_refund" for call in calls):
        return ""
    return OPEN_REFUND_QUESTION
