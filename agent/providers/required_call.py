"""A step that must call a tool (agent/runtime/small_model.py, "must_call"), on an endpoint
that constrains output to a JSON schema but does not enforce `tool_choice: "required"`.

OpenAI and llama.cpp's llama-server (with --jinja) enforce `"required"` themselves: that is
LLM_REQUIRED_CALL=tool_choice, the default. Other servers (the prebuilt llama.cpp wheel of
shared/tools/local-llm among them) ignore it but honour `response_format: {"type":
"json_schema"}` with a grammar: with LLM_REQUIRED_CALL=json_schema the call asks for
`{"tool": {"name": ..., "arguments": {...}}}`, one of the offered tools with its own
parameters' schema, and the reply's JSON is read back as that tool call.
"""

import json
import uuid

REQUIRED_CALL_SCHEMA_NAME = "tool_call"


def required_call_format(tools: list[dict]) -> dict:
    """The response_format that lets the model write only a call of one of `tools`."""
    choices = [
        {
            "type": "object",
            "properties": {
                "name": {"type": "string", "enum": [tool["function"]["name"]]},
                "arguments": tool["function"]["parameters"],
            },
            "required": ["name", "arguments"],
            "additionalProperties": False,
        }
        for tool in tools
    ]
    return {
        "type": "json_schema",
        "json_schema": {
            "name": REQUIRED_CALL_SCHEMA_NAME,
            "strict": True,
            "schema": {
                "type": "object",
                "properties": {"tool": {"anyOf": choices}},
                "required": ["tool"],
                "additionalProperties": False,
            },
        },
    }


def call_from_content(content: str, tools: list[dict]) -> dict | None:
    """The tool call a schema-constrained reply wrote, in Chat Completions shape, or None when
    the content is not such a call of one of `tools` (the executor then sees no call, and the
    step treats the content as an answer)."""
    try:
        data = json.loads(content or "")
    except ValueError:
        return None
    call = data.get("tool") if isinstance(data, dict) else None
    if isinstance(data, dict) and "name" in data and call is None:
        call = data  # a server that unwrapped it already
    names = {tool["function"]["name"] for tool in tools}
    if not isinstance(call, dict) or call.get("name") not in names:
        return None
    arguments = call.get("arguments", {})
    return {
        "id": f"call_{uuid.uuid4().hex[:24]}",
        "type": "function",
        "function": {
            "name": call["name"],
            "arguments": json.dumps(arguments, ensure_ascii=False)
            if not isinstance(arguments, str)
            else arguments,
        },
    }
