"""Whether a model's final answer can be posted (DESIGN §16).

A small model may end with nothing, with chat-template markup (`<tools></tools>`), with a tool
call written out as text instead of made (`<function name=...>`, `{"name": ..., "arguments":
...}`), or with an untrusted block it echoed or made up. None of that is an answer to the
agent: the step asks the model once more (agent/runtime/run_step.py), then says it could not
answer.
"""

import re

from agent.untrusted import carries_untrusted_markers

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
    "with an answer in plain sentences: what you found, what you did, what is left to do. To "
    "use a tool, make a real tool call instead of writing it out."
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
