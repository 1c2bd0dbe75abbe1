"""Tool arguments checked against the tool's JSON Schema (agent/tools/registry.py) by the
`jsonschema` library, which walks the schema: types, required and undeclared arguments,
lengths, ranges, and any other keyword a schema may use. The desk reads four things its own
way, and words every error for the model, by the field it names:

* enum      in any letter case, with spaces or hyphens for underscores: the model may
            capitalise ("Damaged", "Not received")
* pattern   the whole value must match (re.fullmatch): JSON Schema's search would let
            "202610110087\\n" through "^[0-9]{8,20}$", as $ matches before a final newline
* numbers   as the executor parses them (int, Decimal), finite, never a boolean; an integer
            is any whole one (2 and 2.0)
* money     a property whose type includes "number": a decimal string or a number with at
            most two decimals (as the read tools give it), more than 0 and at most MAX_AMOUNT

A null counts as absent (strict mode's "left out", registry.strict_parameters). Arguments
outside the schema are named, FORBIDDEN_ARGUMENTS as such.
"""

import re
from collections.abc import Iterator
from decimal import Decimal, InvalidOperation

from jsonschema import Draft202012Validator, ValidationError, validators

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

# The keyword added to money properties in the schema the validator runs (never shown to the
# model: registry.Tool.schema).
MONEY = "money"
# Which error a field reports when several keywords fail it: the first one here.
KEYWORD_ORDER = (
    "additionalProperties",
    "required",
    "type",
    "enum",
    "minLength",
    "maxLength",
    "pattern",
    "minimum",
    "maximum",
    MONEY,
)


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


def _types(spec: dict) -> list[str]:
    return spec["type"] if isinstance(spec["type"], list) else [spec["type"]]


def _enum_member(members: list[str], value) -> str | None:
    """The member `value` names: exactly, or in another letter case or with spaces or hyphens
    for underscores ("Damaged", "Not received"); None when it names none."""
    if value in members:
        return value
    if not isinstance(value, str):
        return None
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


def _as_whole_number(value) -> Decimal | str:
    number = _as_finite_number(value)
    if isinstance(number, str):
        return number.replace("a number", "a whole number", 1)
    if number != number.to_integral_value():
        return "must be a whole number"
    return number


def _as_money(value) -> Decimal | str:
    """The amount quantized to cents, or the reason it is not money."""
    if isinstance(value, str):
        text = value.strip()
        if not _DECIMAL_TEXT.fullmatch(text):
            return 'must be a decimal amount such as "129.00" or a number'
        value = Decimal(text)
    number = _as_finite_number(value)
    if isinstance(number, str):
        return number
    if number <= 0:
        return "must be greater than 0"
    if number > MAX_AMOUNT:
        return f"must be at most {MAX_AMOUNT}"
    try:
        cents = number.quantize(CENT)
    except InvalidOperation:
        return "must have at most 2 decimal places"
    if cents != number:
        return "must have at most 2 decimal places"
    return cents


# --- The desk's readings of keywords, for the library ------------------------------------


def _is_number(checker, value) -> bool:
    return not isinstance(_as_finite_number(value), str)


def _is_integer(checker, value) -> bool:
    return not isinstance(_as_whole_number(value), str)


def _enum(validator, members, instance, schema) -> Iterator[ValidationError]:
    if _enum_member(members, instance) is None:
        yield ValidationError("must be one of: " + ", ".join(members))


def _pattern(validator, pattern, instance, schema) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and not re.fullmatch(pattern, instance):
        yield ValidationError(f"must match {pattern}")


def _money(validator, _, instance, schema) -> Iterator[ValidationError]:
    # A value of neither type is the type keyword's to refuse.
    if validator.is_type(instance, "string") or validator.is_type(instance, "number"):
        reason = _as_money(instance)
        if isinstance(reason, str):
            yield ValidationError(reason)


def _required(validator, required, instance, schema) -> Iterator[ValidationError]:
    """One error a missing argument, named by its path (the library's names none)."""
    if not validator.is_type(instance, "object"):
        return
    for key in required:
        if key not in instance:
            yield ValidationError("is required", path=[key])


def _additional_properties(validator, allowed, instance, schema) -> Iterator[ValidationError]:
    """One error an undeclared argument, named by its path (the library's names none)."""
    if allowed is not False:
        yield from Draft202012Validator.VALIDATORS["additionalProperties"](
            validator, allowed, instance, schema
        )
        return
    for key in instance:
        if key in schema["properties"]:
            continue
        if key in FORBIDDEN_ARGUMENTS:
            message = (
                "not allowed: identity, scope and approval come from the run, never from arguments"
            )
        else:
            message = "unknown argument"
        yield ValidationError(message, path=[key])


ArgumentsValidator = validators.extend(
    Draft202012Validator,
    validators={
        "enum": _enum,
        "pattern": _pattern,
        MONEY: _money,
        "required": _required,
        "additionalProperties": _additional_properties,
    },
    type_checker=Draft202012Validator.TYPE_CHECKER.redefine_many(
        {"number": _is_number, "integer": _is_integer}
    ),
)


def _validation_schema(parameters: dict) -> dict:
    """The tool's schema with the money keyword on each property whose type includes
    "number"."""
    properties = {
        key: {**spec, MONEY: True} if "number" in _types(spec) else spec
        for key, spec in parameters["properties"].items()
    }
    return {**parameters, "properties": properties}


# parameters' id -> (parameters, its validator). The dict is kept so that its id is not reused.
_validators: dict[int, tuple[dict, Draft202012Validator]] = {}


def _validator_for(parameters: dict) -> Draft202012Validator:
    known = _validators.get(id(parameters))
    if known is None or known[0] is not parameters:
        Draft202012Validator.check_schema(parameters)
        known = (parameters, ArgumentsValidator(_validation_schema(parameters)))
        _validators[id(parameters)] = known
    return known[1]


# --- What the model is told ---------------------------------------------------------------


def _type_message(spec: dict, value) -> str:
    types = _types(spec)
    if "number" in types:
        return str(_as_finite_number(value))
    if "integer" in types:
        return str(_as_whole_number(value))
    return f"must be {' or '.join(f'a {name}' for name in types)}, not {json_type_name(value)}"


def _message(error: ValidationError) -> str:
    """The error in the model's words; the desk's own keywords already speak them."""
    spec = error.schema
    match error.validator:
        case "type":
            return _type_message(spec, error.instance)
        case "minLength":
            return "must not be empty"
        case "maxLength":
            return f"must be at most {spec['maxLength']} characters"
        case "minimum" | "maximum":
            return f"must be between {spec['minimum']} and {spec['maximum']}"
    return error.message


def _rank(error: ValidationError) -> int:
    keyword = error.validator
    return KEYWORD_ORDER.index(keyword) if keyword in KEYWORD_ORDER else len(KEYWORD_ORDER)


def _field_name(key: str) -> str:
    return key if len(key) <= 64 else key[:61] + "..."


def _clean(spec: dict, value):
    """A valid value in the form handlers take: money as cents, integers as int, an enum as
    its member."""
    types = _types(spec)
    if "number" in types:
        return _as_money(value)
    if "integer" in types:
        return int(_as_whole_number(value))
    if "enum" in spec:
        return _enum_member(spec["enum"], value)
    return value


def validate_arguments(tool: Tool, arguments: dict) -> tuple[dict, dict[str, str]]:
    """Check parsed arguments against the tool's schema.

    Returns (clean arguments, field errors). Field errors come undeclared arguments first, in
    the order sent, then the schema's properties in their order; one message a field.
    Clean arguments hold every declared property: absent optional ones get their schema
    default or None (an explicit null counts as absent), numbers arrive as Decimal quantized
    to cents, integers as int.
    """
    properties = tool.parameters["properties"]
    present = {
        key: value for key, value in arguments.items() if value is not None or key not in properties
    }
    first_errors: dict[str, ValidationError] = {}
    for error in _validator_for(tool.parameters).iter_errors(present):
        key = error.relative_path[0]
        if key not in first_errors or _rank(error) < _rank(first_errors[key]):
            first_errors[key] = error
    errors: dict[str, str] = {}
    for key in [*(key for key in arguments if key not in properties), *properties]:
        if key in first_errors:
            errors[_field_name(key)] = _message(first_errors[key])
    clean: dict = {}
    for key, spec in properties.items():
        if key not in present:
            clean[key] = spec.get("default")
        elif key not in first_errors:
            clean[key] = _clean(spec, present[key])
        else:
            clean[key] = None
    if len(errors) > MAX_FIELD_ERRORS:
        errors = dict(list(errors.items())[:MAX_FIELD_ERRORS])
    return clean, errors
