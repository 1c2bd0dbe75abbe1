"""The held-out masking cases (`evals/heldout/masking.jsonl`): personal identifiers typed the way
customers and agents type them never reach a model, and order numbers, amounts and dates stay
as they were written.

The cases were written apart from the masker; never tune the masker against them (see
`evals/heldout/README.md`). One test per case, named by its id, so a failure says which form
leaked.
"""

import json
import unicodedata
from pathlib import Path

import pytest

from agent.privacy import mask_for_model

CASES_FILE = Path(__file__).resolve().parents[2] / "evals" / "heldout" / "masking.jsonl"
CASES = [json.loads(line) for line in CASES_FILE.read_text(encoding="utf-8").splitlines() if line]
# A masker may leave the last two characters of a number visible.
VISIBLE_TAIL = 2
# Cases the masker gets wrong today, recorded (not tuned away) when it was measured: both mask
# a number that is not personal data (over-masking, no leak). Strict: one that starts passing
# fails here, to be taken off the list.
KNOWN_MISSES = {"mask-109", "mask-113"}


def normalised(text: str) -> str:
    """`text` reduced to its letters and ASCII digits, so a separator, a fullwidth form or a
    zero-width character cannot hide an identifier from the comparison."""
    kept = []
    for character in unicodedata.normalize("NFKC", text):
        if unicodedata.category(character) == "Cf" or not character.isalnum():
            continue
        digit = unicodedata.decimal(character, None)
        kept.append(str(digit) if digit is not None else character)
    return "".join(kept)


def email_local_part(address: str) -> str:
    # NFKC turns the fullwidth at sign (U+FF20) into an ASCII one.
    return unicodedata.normalize("NFKC", address).split("@", 1)[0]


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(
            case,
            marks=pytest.mark.xfail(strict=True, reason="known miss, see KNOWN_MISSES")
            if case["id"] in KNOWN_MISSES
            else (),
        )
        for case in CASES
    ],
    ids=[case["id"] for case in CASES],
)
def test_it_keeps_identifiers_from_the_model_and_leaves_the_rest_as_written(case):
    masked = mask_for_model(case["text"])
    seen = normalised(masked)

    for identifier in case["hide"]:
        assert normalised(identifier)[:-VISIBLE_TAIL] not in seen, (
            f"{identifier!r} reached the model: {masked!r}"
        )
        if case["kind"] == "email":
            local = normalised(email_local_part(identifier))
            # The masker keeps the local part's first character.
            if len(local) > 1:
                assert local[1:] not in seen, (
                    f"the local part of {identifier!r} reached the model: {masked!r}"
                )

    for written in case["keep"]:
        assert written in masked, f"{written!r} was changed: {masked!r}"
