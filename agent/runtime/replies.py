"""What one model reply may put into a run, before anything of it is saved (DESIGN §7).

A reply is written by the model, so it is as untrusted as anything the model reads. Before the
assistant message is saved:
  * its text, tool names and arguments lose what PostgreSQL refuses to store (NUL, lone
    surrogates), and tool names are cut to their column;
  * every tool-call id is one the run can store and answer exactly once: an id that is empty,
    too long, not a plain token, or already used in this run (twice in the reply, or in an
    earlier step) is replaced by a stable one derived from the run, the step, the call's
    position and the id sent.
The saved message is what the model is sent back, and every tool message answers an id saved
in it, so the transcript stays consistent with itself under the Chat Completions rules.
"""

import hashlib
import re
from dataclasses import replace

from agent.executor.arguments import TEXT_LIMIT, clean_text
from agent.models import AgentMessage, AgentRun
from agent.providers.llm import ModelReply

# Ids kept as the model sent them: plain tokens such as OpenAI's "call_…", "toolu_…",
# "chatcmpl-tool-…" or a UUID. The column holds 100 characters; derived ids hold 29.
KEPT_ID = re.compile(r"[A-Za-z0-9_.:-]{1,64}")


def call_ids_in(transcript: list[AgentMessage]) -> set[str]:
    """Every tool-call id the run has used so far."""
    ids = set()
    for message in transcript:
        if message.tool_call_id:
            ids.add(message.tool_call_id)
        ids.update(str(call.get("id", "")) for call in message.tool_calls or [])
    return ids


def derived_call_id(*, run: AgentRun, step: int, position: int, sent: str, taken: set[str]) -> str:
    salt = 0
    while True:
        seed = f"{run.pk}|{step}|{position}|{sent}|{salt}".encode("utf-8", "replace")
        call_id = f"call_{hashlib.sha256(seed).hexdigest()[:24]}"
        if call_id not in taken:
            return call_id
        salt += 1


def safe_reply(reply: ModelReply, *, run: AgentRun, transcript: list[AgentMessage]) -> ModelReply:
    """`reply` as the run may save it; `transcript` is the run's transcript before it."""
    taken = call_ids_in(transcript)
    step = run.step_count + 1
    calls = []
    for position, call in enumerate(reply.tool_calls):
        sent = str(call.get("id") or "")
        call_id = sent
        if not KEPT_ID.fullmatch(sent) or sent in taken:
            call_id = derived_call_id(run=run, step=step, position=position, sent=sent, taken=taken)
        taken.add(call_id)
        function = call["function"]
        calls.append(
            {
                "id": call_id,
                "type": "function",
                "function": {
                    "name": clean_text(function["name"])[:TEXT_LIMIT],
                    "arguments": clean_text(function["arguments"]),
                },
            }
        )
    return replace(reply, content=clean_text(reply.content), tool_calls=calls)
