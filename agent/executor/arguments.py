"""Parsing the model's argument string, and the canonical, storable form of what it held."""

import hashlib
import json
import math
from datetime import date, datetime
from decimal import Decimal
from uuid import UUID

from config.canonical import canonical_json

TEXT_LIMIT = 100  # tool_name and tool_call_id columns
MAX_ARGUMENT_DEPTH = 20
# The largest schema (create_refund, with a 1,000-character explanation) needs a fraction of
# this; longer arguments are refused before anything parses them.
MAX_ARGUMENTS_CHARS = 16_000


def _reject_duplicate_keys(pairs: list[tuple]) -> dict:
    keys = [key for key, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError("a key appears twice")
    return dict(pairs)


def _parse(raw: str) -> tuple[object, str]:
    """Parse the model's argument string; numbers that are not integers become Decimal (never
    float), NaN and Infinity too, so the schema check can refuse them by field."""
    if not raw.strip():
        return {}, ""
    try:
        parsed = json.loads(
            raw,
            parse_float=Decimal,
            parse_constant=Decimal,
            object_pairs_hook=_reject_duplicate_keys,
        )
    except json.JSONDecodeError as exc:
        return None, f"{exc.msg} at position {exc.pos}"
    except (ValueError, RecursionError):
        return None, "the value cannot be read"
    if _nested_deeper_than(parsed, MAX_ARGUMENT_DEPTH):
        # Everything after parsing walks the value recursively; no tool needs such nesting.
        return None, f"it is nested more than {MAX_ARGUMENT_DEPTH} levels deep"
    return parsed, ""


def _nested_deeper_than(value, limit: int) -> bool:
    if not isinstance(value, dict | list):
        return False
    if limit == 0:
        return True
    children = value.values() if isinstance(value, dict) else value
    return any(_nested_deeper_than(child, limit - 1) for child in children)


def clean_text(text: str) -> str:
    """Text as PostgreSQL and the model can take it: no NUL, no lone surrogates."""
    return text.encode("utf-8", "replace").decode("utf-8").replace("\x00", "\ufffd")


def _jsonable(value):
    """A JSON-safe, storable copy: Decimal as its string (money never becomes float), text
    cleaned for PostgreSQL, anything else JSON cannot hold as its string."""
    if isinstance(value, dict):
        return {clean_text(str(key)): _jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(item) for item in value]
    if isinstance(value, str):
        return clean_text(value)
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    if isinstance(value, datetime | date):
        return value.isoformat()
    return clean_text(str(value))


def _digest(arguments) -> str:
    return hashlib.sha256(canonical_json(arguments).encode()).hexdigest()


def _json_default(value):
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, UUID):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _dumps(value) -> str:
    return json.dumps(
        value, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=_json_default
    )
