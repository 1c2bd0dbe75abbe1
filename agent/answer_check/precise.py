# ruff: noqa: RUF001 (Chinese and typographic punctuation is what these texts are written in)
"""The precise reader (`statements_in`): the claims a text makes outright, per language of
agent/vocabulary/claims.py, each taken back by a negation before its verb, a condition, a
question or a habit in its clause (the package's docstring says how).

Apart from the recall-first reader: it reads every text, the other only some, and by other
words.
"""

import re
from dataclasses import dataclass
from functools import cache

from agent.answer_check.text import QUESTION_END, SENTENCE_END, Statement
from agent.vocabulary.claims import (
    APPROVED,
    CLAUSE_BREAK,
    LANGUAGES,
    NOT_A_CONDITION,
    ON_ITS_WAY,
    REFUNDED,
    ClaimWords,
)

CLAUSE_END = re.compile(CLAUSE_BREAK, re.IGNORECASE)
ONLY_AN_OPENER = re.compile(NOT_A_CONDITION, re.IGNORECASE)


@dataclass(frozen=True)
class _Pattern:
    kind: str
    regex: re.Pattern
    needs_money: bool
    # Says how things are now or will be, not what happened: a condition opening the sentence
    # takes it back too.
    open: bool = False


@dataclass(frozen=True)
class _Language:
    words: ClaimWords
    patterns: tuple[_Pattern, ...]
    money: re.Pattern
    # What an approval may be about: money, or a request for it.
    approvable: re.Pattern
    negation: re.Pattern
    condition: re.Pattern
    opening_condition: re.Pattern
    habitual: re.Pattern
    present: re.Pattern


def _w(text: str, spaced: bool) -> str:
    """`text` as whole words where words are spaced, as it is where they are not."""
    return rf"(?<![\w'’])(?:{text})(?![\w'’])" if spaced else f"(?:{text})"


def _compiled(words: ClaimWords) -> _Language:
    sp = words.spaced
    # Where words are not spaced, an auxiliary and its verb stand in one clause.
    gap = rf"(?:\s+\S+){{0,{words.gap}}}?\s+"
    if not sp:
        gap = rf"[^，。；：！？,;:!?\n]{{0,{words.gap}}}?"
    flags = re.IGNORECASE
    perfect = _w(words.perfect, sp)
    if sp:
        # "we've", "it's", "l'a": a contracted auxiliary follows its word directly.
        perfect = rf"(?:{perfect}|['’](?:ve|s|d)(?![\w'’]))"

    not_money = rf"(?!{words.not_money_after})"

    def after_perfect(kind: str, verbs: str, needs_money: bool) -> _Pattern:
        regex = re.compile(perfect + gap + _w(verbs, sp) + not_money, flags)
        return _Pattern(kind, regex, needs_money)

    patterns = [
        after_perfect(REFUNDED, words.self_money, False),
        after_perfect(REFUNDED, words.done, True),
        after_perfect(APPROVED, words.approved, True),
        _Pattern(ON_ITS_WAY, re.compile(_w(words.underway, sp), flags), True, open=True),
    ]
    for kind, text in words.phrases:
        regex = re.compile(text, flags)
        patterns.append(
            _Pattern(kind, regex, "needs_money" in regex.groupindex, "open" in regex.groupindex)
        )
    money = _w(words.money, sp) + not_money
    return _Language(
        words=words,
        patterns=tuple(patterns),
        money=re.compile(f"{money}|{_w(words.self_money, sp)}{not_money}", flags),
        approvable=re.compile(
            f"{_w(words.money, sp)}|{_w(words.self_money, sp)}|{_w(words.request, sp)}", flags
        ),
        # "hasn't", "don't": a contracted negation follows its word directly.
        negation=re.compile(_w(words.negation, sp) + r"|n['’]t(?!\w)", flags),
        condition=re.compile(_w(words.condition, sp), flags),
        opening_condition=re.compile(r"^\W*" + _w(words.condition, sp), flags),
        habitual=re.compile(_w(words.habitual, sp), flags),
        present=re.compile(r"^" + _w(words.present, sp), flags),
    )


@cache
def _languages() -> tuple[_Language, ...]:
    return tuple(_compiled(words) for words in LANGUAGES.values())


def _clause_bounds(sentence: str, start: int, end: int) -> tuple[int, int]:
    """The clause(s) a match from `start` to `end` stands in."""
    left, right = 0, len(sentence)
    for brk in CLAUSE_END.finditer(sentence):
        if brk.end() <= start:
            left = brk.end()
        elif brk.start() >= end:
            right = brk.start()
            break
    return left, right


def _taken_back(
    language: _Language, pattern: _Pattern, sentence: str, match: re.Match, clause: str
) -> bool:
    left, right = _clause_bounds(sentence, match.start(), match.end())
    before = sentence[left : match.end()]
    if language.negation.search(before):
        return True
    if language.condition.search(clause):
        return True
    if QUESTION_END.search(sentence[left:right]):
        return True
    says_now = pattern.open or bool(language.present.match(match.group(0)))
    if says_now and language.habitual.search(clause):
        return True
    if says_now and left > 0:
        opening = sentence[: _clause_bounds(sentence, 0, 0)[1]]
        if language.opening_condition.search(opening) and not ONLY_AN_OPENER.search(opening):
            return True
    return False


def statements_in(text: str) -> list[Statement]:
    """Every claim `text` makes outright, in the order they appear."""
    found: list[Statement] = []
    for sentence in SENTENCE_END.split(text or ""):
        sentence = sentence.strip()
        if not sentence:
            continue
        for language in _languages():
            for pattern in language.patterns:
                for match in pattern.regex.finditer(sentence):
                    left, right = _clause_bounds(sentence, match.start(), match.end())
                    clause = sentence[left:right]
                    about = language.approvable if pattern.kind == APPROVED else language.money
                    if pattern.needs_money and not about.search(clause):
                        continue
                    if _taken_back(language, pattern, sentence, match, clause):
                        continue
                    statement = Statement(pattern.kind, sentence, clause.strip())
                    if statement not in found:
                        found.append(statement)
    return _strongest_per_clause(found)


def _strongest_per_clause(found: list[Statement]) -> list[Statement]:
    """One claim per clause, the strongest: "approved and processed" claims it was refunded."""
    rank = {REFUNDED: 0, ON_ITS_WAY: 1, APPROVED: 2}
    best: dict[tuple[str, str], Statement] = {}
    for statement in found:
        key = (statement.sentence, statement.clause)
        if key not in best or rank[statement.kind] < rank[best[key].kind]:
            best[key] = statement
    return [s for s in found if best[(s.sentence, s.clause)] is s]


def claims_in(answer: str) -> list[str]:
    """The kinds of claim (refunded, approved, on_its_way) the text makes outright."""
    return list(dict.fromkeys(statement.kind for statement in statements_in(answer)))
