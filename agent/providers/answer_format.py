"""The JSON a model in small-model mode answers the agent in (the "did" piece, DESIGN §16):
`{"answer": "...", "did": [{"action", "order_id"}]}`. Its schema lives here, with the model
client that sends it as a `response_format`; agent/runtime/structured_answer.py reads and
checks the answer."""

from django.conf import settings

ACTIONS = ("looked_up_order", "listed_orders", "read_policy", "checked_refund", "proposed_refund")
SCHEMA_NAME = "answer"
ANSWER_SCHEMA = {
    "type": "object",
    "properties": {
        "answer": {"type": "string"},
        "did": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "action": {"type": "string", "enum": list(ACTIONS)},
                    "order_id": {"type": "string"},
                },
                "required": ["action", "order_id"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["answer", "did"],
    "additionalProperties": False,
}


def answers_in_json() -> bool:
    """Whether small-model mode's "did" piece is on: the model answers in this JSON."""
    return settings.AGENT_SMALL_MODEL and "did" in settings.AGENT_SMALL_MODEL_PIECES


def answer_format() -> dict:
    """The response_format asking for the structured answer."""
    return {
        "type": "json_schema",
        "json_schema": {"name": SCHEMA_NAME, "strict": True, "schema": ANSWER_SCHEMA},
    }
