"""The JSON-schema subset tool arguments are checked against: types, lengths, patterns,
enums (in any letter case, as the model may capitalise them), money as a decimal string or a
number with at most two decimals (as the read tools give it, never a boolean), and no
argument outside the schema (FORBIDDEN_ARGUMENTS are named as such).
"""

import math
import re
from decimal import Decimal, InvalidOperation

from agent.tools.registry import MAX_AMOUNT, Tool
from config.money import CENT

# Arguments that would let the model pick who acts, whose data it sees or what is approved.
# No schema has them; the validator names them when the model sends them anyway.
FORBIDDEN_ARGUMENTS = frozenset(
    {
        "user_id",
        "customer_id",
        "role",
        "confirmed",
        "approved",
        "request_id",
        "actor",
        "actor_id",
        "ticket",
        "ticket_id",
        "run_id",
        "approve",
        "reviewer",
        "version",
        "fingerprint",
    }
)


MAX_FIELD_ERRORS = 20


def json_type_name(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, int | Decimal | float):
        return "a number"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _check_string(spec: dict, value) -> tuple[str | None, str | None]:
    if not isinstance(value, str):
        return None, f"must be a string, not {json_type_name(value)}"
    if "enum" in spec:
        value = _enum_member(spec["enum"], value)
        if value is None:
            return None, "must be one of: " + ", ".join(spec["enum"])
    if len(value) < spec.get("minLength", 0):
        return None, "must not be empty"
    if "maxLength" in spec and len(value) > spec["maxLength"]:
        return None, f"must be at most {spec['maxLength']} characters"
    if "pattern" in spec and not re.fullmatch(spec["pattern"], value):
        return None, f"must match {spec['pattern']}"
    return value, None


def _enum_member(members: list[str], value: str) -> str | None:
    """The member `value` names: exactly, or in another letter case or with spaces or hyphens
    for underscores ("Damaged", "Not received"); None when it names none."""
    if value in members:
        return value
    spelled = "_".join(value.strip().lower().replace("-", " ").split())
    return next((member for member in members if member.lower() == spelled), None)


# Money as the read tools write it: digits, and at most a point and decimals ("899.00").
_DECIMAL_TEXT = re.compile(r"[0-9]+(?:\.[0-9]+)?")


def _as_finite_number(value) -> Decimal | str:
    """The value as a finite Decimal, or the reason it is not one."""
    if isinstance(value, bool) or not isinstance(value, int | Decimal | float):
        return f"must be a number, not {json_type_name(value)}"
    number = Decimal(value) if isinstance(value, int) else Decimal(str(value))
    if not number.is_finite():
        return "must be a finite number"
    return number


def _check_integer(spec: dict, value) -> tuple[int | None, str | None]:
    number = _as_finite_number(value)
    if isinstance(number, str):
        return None, number.replace("a number", "a whole number", 1)
    if number != number.to_integral_value():
        return None, "must be a whole number"
    if not spec.get("minimum", -math.inf) <= number <= spec.get("maximum", math.inf):
        return None, f"must be between {spec['minimum']} and {spec['maximum']}"
    return int(number), None


def _check_money(spec: dict, value) -> tuple[Decimal | None, str | None]:
    if isinstance(value, str):
        text = value.strip()
        if not _DECIMAL_TEXT.fullmatch(text):
            return None, 'must be a decimal amount such as "129.00" or a number'
        value = Decimal(text)
    number = _as_finite_number(value)
    if isinstance(number, str):
        return None, number
    if number <= 0:
        return None, "must be greater than 0"
    if number > MAX_AMOUNT:
        return None, f"must be at most {MAX_AMOUNT}"
    try:
        cents = number.quantize(CENT)
    except InvalidOperation:
        return None, "must have at most 2 decimal places"
    if cents != number:
        return None, "must have at most 2 decimal places"
    return cents, None


CHECKS = {"string": _check_string, "integer": _check_integer, "number": _check_money}


def _checked_type(spec: dict) -> str:
    """Which check a property gets: its type; money (a string or a number) is a number."""
    types = spec["type"] if isinstance(spec["type"], list) else [spec["type"]]
    return "number" if "number" in types else types[0]


def _field_name(key: str) -> str:
    return key if len(key) <= 64 else key[:61] + "..."


def validate_arguments(tool: Tool, arguments: dict) -> tuple[dict, dict[str, str]]:
    """Check parsed arguments against the tool's schema.

    Returns (clean arguments, field errors). Clean arguments hold every declared property:
    absent optional ones get their schema default or None (an explicit null counts as
    absent), numbers arrive as Decimal quantized to cents, integers as int.
    """
    properties = tool.parameters["properties"]
    required = set(tool.parameters["required"])
    errors: dict[str, str] = {}
    for key in arguments:
        if key in properties:
            continue
        if key in FORBIDDEN_ARGUMENTS:
            errors[_field_name(key)] = (
                "not allowed: identity, scope and approval come from the run, never from arguments"
            )
        else:
            errors[_field_name(key)] = "unknown argument"
    clean: dict = {}
    for key, spec in properties.items():
        value = arguments.get(key)
        if value is None:
            if key in required:
                errors[key] = "is required"
            clean[key] = spec.get("default")
            continue
        clean[key], errors_for_key = CHECKS[_checked_type(spec)](spec, value)
        if errors_for_key:
            errors[key] = errors_for_key
    if len(errors) > MAX_FIELD_ERRORS:
        errors = dict(list(errors.items())[:MAX_FIELD_ERRORS])
    return clean, errors
