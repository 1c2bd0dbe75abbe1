# ruff: noqa: RUF001 (Chinese and typographic punctuation is what these texts are written in)
"""How the claim check cuts a text, and a claim as a reader finds it: sentence ends, a
question's end, an order id, and `Statement`, a claim before it is judged.

Apart because both readers, the judge and the runtime's answer guards (agent/runtime/answers.py,
records.py, run_answer.py) read texts by them.
"""

import re
from dataclasses import dataclass

SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])|\n+")
QUESTION_END = re.compile(r"(?:[?？]|吗|呢|か)\W*$")
ORDER_ID = re.compile(r"(?<!\d)\d{8,20}(?!\d)")


@dataclass(frozen=True)
class Statement:
    """A claim found in a text, before it is judged: its kind, the sentence it is in and the
    clause(s) that make it."""

    kind: str
    sentence: str
    clause: str
    # The sentence before, where the recall-first reader found the money a claim is about.
    before: str = ""
