"""How the vocabulary reads text: folding, sentences and clauses, word lists (`Lexicon`)
and the misspellings read as their words."""

import re
import unicodedata
from dataclasses import dataclass
from decimal import Decimal
from functools import cache, lru_cache

CENT = Decimal("0.01")

# Scripts written without spaces between words: their entries match anywhere.
_UNSPACED = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
_HAN = re.compile(r"[\u3400-\u9fff]")
_SENTENCE_END = re.compile(r"(?<=[.!?;。！？；])\s*|\n+|\s+[-–—>]+\s*(?=\S)")
# Clause ends: a comma or colon before a space ("1,299.00" and "14:00" are not), a dash, or a
# word that joins two clauses.
_CLAUSE_BREAK = re.compile(
    r"\s*(?:[,:](?=\s)|[，：、]|\s[-–—]\s|\b(?:and|then|but|so|also|y|pero|und|aber|dann|et"
    r"|mais|ma|maar|och|ale|然后|但是)\b)\s*"
)
_IDENTIFIER = re.compile(r"\b\w+_\w+\b")
_LATIN_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")
_APOSTROPHES = str.maketrans({"’": "'", "‘": "'", "`": "'", "´": "'"})


def fold(text: str) -> str:
    """Text as the vocabulary reads it: full-width forms made plain, lower case, Latin letters
    without accents, one kind of apostrophe. Scripts other than Latin keep their marks."""
    plain = unicodedata.normalize("NFKC", text or "").casefold().translate(_APOSTROPHES)
    kept: list[str] = []
    for char in unicodedata.normalize("NFD", plain):
        if unicodedata.combining(char) and kept and kept[-1] < "\u0250":
            continue
        kept.append(char)
    return unicodedata.normalize("NFC", "".join(kept))


def sentences(text: str) -> list[str]:
    return [part.strip() for part in _SENTENCE_END.split(text or "") if part and part.strip()]


def clauses(sentence: str) -> list[str]:
    return [part for part in _CLAUSE_BREAK.split(sentence) if part and part.strip()]


def has_han(text: str) -> bool:
    """Whether the text has Chinese characters (Chinese, or Japanese kanji)."""
    return bool(_HAN.search(text or ""))


def _words(text: str) -> frozenset[str]:
    """A list of single words, separated by spaces or line breaks."""
    return frozenset(text.split())


class Lexicon:
    """Words of one meaning in many languages, read in folded text.

    An entry is plain words: a word matches whole; `*` at its end lets it go on ("refund*":
    refunds, refunded); `~` stands for up to three words between ("pay ~ back"); `#` for an
    amount ("退#", "# back"). Entries in Chinese, Japanese or Korean match anywhere.
    """

    def __init__(self, *parts: str):
        # Entries are separated by commas; a part may hold many, one line of a language each.
        self.entries = tuple(
            entry.strip() for part in parts for entry in part.split(",") if entry.strip()
        )
        self.pattern = re.compile("|".join(_entry_pattern(entry) for entry in self.entries))

    def search(self, text: str) -> re.Match | None:
        return self.pattern.search(prepare(text))

    def finditer(self, text: str):
        return self.pattern.finditer(prepare(text))

    def starts(self, text: str) -> re.Match | None:
        """A match at the start of already prepared text."""
        return self._anchored()[0].match(text.lstrip(" ¿¡\"'(*-"))

    def ends(self, text: str) -> re.Match | None:
        """A match at the end of already prepared text."""
        return self._anchored()[1].search(text.rstrip())

    @cache  # noqa: B019 (lexicons live as long as the module)
    def _anchored(self) -> tuple[re.Pattern, re.Pattern]:
        return re.compile(rf"(?:{self.pattern.pattern})"), re.compile(
            rf"(?:{self.pattern.pattern})$"
        )

    def words(self) -> set[str]:
        """The entries' Latin words of five letters or more: what a misspelling is read as."""
        found = set()
        for entry in self.entries:
            for word in fold(entry).split():
                word = word.rstrip("*")
                if len(word) >= 5 and word.isalpha() and not _UNSPACED.search(word):
                    found.add(word)
        return found


_AMOUNT_IN_ENTRY = r"\s*(?:[¥$€£]\s?)?\d+(?:[.,]\d{1,2})?(?:\s?(?:元|块|円|yuan|cny|rmb))?"
_GAP = r"(?:\s+\S+){0,3}?\s+"
_BETWEEN_WORDS = r"[\s\-:=\"']+"


def _word_pattern(word: str) -> str:
    if "#" in word:
        return "".join(
            _AMOUNT_IN_ENTRY if part == "#" else re.escape(part)
            for part in re.split("(#)", word)
            if part
        )
    if _UNSPACED.search(word):
        return re.escape(word.rstrip("*"))
    if word.endswith("*"):
        return rf"(?<!\w){re.escape(word[:-1])}\w*"
    return rf"(?<!\w){re.escape(word)}(?!\w)"


def _entry_pattern(entry: str) -> str:
    pattern, gap, previous = "", False, ""
    for word in fold(entry).split():
        if word == "~":
            gap = True
            continue
        if pattern and gap:
            pattern += _GAP
        elif pattern and _UNSPACED.match(previous[-1:]) and _UNSPACED.match(word[:1]):
            pattern += r"\s*"
        elif pattern:
            pattern += _BETWEEN_WORDS
        pattern += _word_pattern(word)
        gap, previous = False, word
    return f"(?:{pattern})"


# "hasn't", "dont", "won't": English negations written one way, so that lists say "not" once.
_NOT_CONTRACTED = re.compile(
    r"\b(?:(do|does|did|has|have|had|is|are|was|were|should|would|could|must|need)n'?t"
    r"|(wo)n't|(ca)n'?t|(can)not)\b"
)


@lru_cache(maxsize=4096)
def prepare(text: str) -> str:
    """Folded text with misspellings read as the vocabulary's words, English negations spelt
    out ("hasn't" as "has not") and identifiers (table names such as refunds_refundrequest)
    left out; the reasons' names keep their meaning."""
    folded = fold(text).replace("not_received", "not received").replace("wrong_item", "wrong item")
    folded = _NOT_CONTRACTED.sub(_spelt_out_not, _IDENTIFIER.sub(" ", folded))
    return _correct_spelling(folded)


def _spelt_out_not(match: re.Match) -> str:
    verb = next(group for group in match.groups() if group)
    return {"wo": "will", "ca": "can"}.get(verb, verb) + " not"


def _correct_spelling(text: str) -> str:
    known = _known_words()
    return _LATIN_WORD.sub(lambda match: _spelt(match.group(0), known), text)


def _spelt(word: str, known: dict) -> str:
    """The vocabulary's word that `word` is a slip of (a letter missing, one too many, or two
    swapped), when exactly one fits; otherwise `word` as it is."""
    if len(word) < 5 or word in known["words"] or word.startswith(known["stems"]):
        return word
    candidates = set(known["slips"].get(word, ()))
    # A letter too many inside the word; one at its end is an ending ("proposed", "cracks").
    inner = {word[:i] + word[i + 1 :] for i in range(len(word) - 1)}
    candidates |= inner & known["words"]
    if not candidates:
        candidates = _stem_slips(word, known["long_stems"])
    return candidates.pop() if len(candidates) == 1 else word


def _stem_slips(word: str, stems: tuple[str, ...]) -> set[str]:
    """A long stem's inflected word with a slip inside the stem ("erstaten", "zerbrochn"): a
    letter missing or two swapped, the ending kept."""
    found = set()
    for stem in stems:
        # Two swapped before one missing ("aterbetlaa" is "aterbetala"); a letter too many is
        # not read here: "terugbetaald" is spelt right.
        for typed in (word[: len(stem)], word[: len(stem) - 1]):
            if typed[:1] != stem[:1] or typed == stem or edit_distance(typed, stem) != 1:
                continue
            if len(typed) == len(stem) and sorted(typed) != sorted(stem):
                continue  # a letter swapped for another is not a slip read here
            found.add(stem + word[len(typed) :])
            break
    return found


def _deletions(word: str) -> set[str]:
    return {word[:i] + word[i + 1 :] for i in range(len(word))}


def _swaps(word: str) -> set[str]:
    return {word[:i] + word[i + 1] + word[i] + word[i + 2 :] for i in range(len(word) - 1)}


@dataclass(frozen=True)
class SpellingLists:
    """The lists a misspelling is read by (agent/vocabulary/spelling.py gives them): `read_as`,
    whose words a slip is read as; `kept`, whose words are never read as another's slip;
    `product_names`, the names of products, which a slip is read as too."""

    read_as: tuple[Lexicon, ...]
    kept: tuple[Lexicon, ...]
    product_names: tuple[tuple[str, ...], ...]


# Set once, when the package is imported: the lists are written with this module's Lexicon,
# so this module cannot import them.
_SPELLING: SpellingLists | None = None


def read_misspellings_by(lists: SpellingLists) -> None:
    """Read misspellings by `lists` from now on."""
    global _SPELLING
    _SPELLING = lists
    _known_words.cache_clear()
    prepare.cache_clear()


@cache
def _known_words() -> dict:
    if _SPELLING is None:
        raise RuntimeError("import agent.vocabulary: its lists are not known yet")
    words: set[str] = set()
    stems: set[str] = set()
    for lexicon in _SPELLING.read_as:
        words |= lexicon.words()
        stems |= {
            fold(word[:-1])
            for entry in lexicon.entries
            for word in entry.split()
            if word.endswith("*") and len(word) > 5
        }
    for names in _SPELLING.product_names:
        words |= {fold(name) for name in names if len(name) >= 5 and name.isalpha()}
    # A known word typed with a letter missing, or with two letters swapped.
    slips: dict[str, set[str]] = {}
    for word in words:
        for slip in _deletions(word) | _swaps(word):
            if slip != word:
                slips.setdefault(slip, set()).add(word)
    # Words spelt right that are a slip away from one above ("quanto", "quantos"): kept.
    for lexicon in _SPELLING.kept:
        words |= lexicon.words()
    long_stems = tuple(sorted(stem for stem in stems if len(stem) >= 7 and stem.isalpha()))
    return {"words": words, "stems": tuple(sorted(stems)), "slips": slips, "long_stems": long_stems}


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance with adjacent transpositions (typed characters swap places)."""
    rows = [list(range(len(b) + 1))]
    for i, char_a in enumerate(a, start=1):
        row = [i]
        for j, char_b in enumerate(b, start=1):
            cost = 0 if char_a == char_b else 1
            value = min(rows[-1][j] + 1, row[j - 1] + 1, rows[-1][j - 1] + cost)
            if i > 1 and j > 1 and char_a == b[j - 2] and a[i - 2] == char_b:
                value = min(value, rows[-2][j - 2] + 1)
            row.append(value)
        rows.append(row)
    return rows[-1][-1]
