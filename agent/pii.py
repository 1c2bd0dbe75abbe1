# ruff: noqa: RUF001, RUF002 (full-width forms and other scripts are what people type)
# Over 400 lines: each finder (addresses, phones, identity and card numbers) needs the folded
# copy and the amount and date checks that keep order numbers, amounts and dates unmasked.
"""Personal data in text as people type it: e-mail addresses, phone numbers, Chinese resident
identity numbers and bank card numbers. agent/privacy.py masks what these finders find.

Text is read through a folded copy (`Folded`): NFKC ("１３８" and "＠" as "138" and "@"), the
digits of every script and Chinese numerals as ASCII digits, every dash as "-", and the
invisible format characters (zero-width space, bidi marks) left out. Each character of the
copy knows where it came from, so what is found in the copy is masked in the text as it was
written.

  * An e-mail address: a local part, "@" (or "(at)", "[at]", " at " with " dot "), a domain.
  * A Chinese resident identity number: 18 characters, a date of birth inside, the ISO 7064
    MOD 11-2 check character last (0-9 or X); grouped or not.
  * A bank card number: 13 to 19 digits, grouped or not, an issuer's first digits (2, 3, 4, 5,
    6) and a valid Luhn check digit; an IBAN with valid check digits.
  * A phone number: 7 to 15 digits written with "+" (international), with a trunk "0" and
    separators (local: "020 7946 0958", "06 12 34 56 78"), with the shape of a Chinese mobile
    number however it is separated ("138/0013/8000", "1 3 8 0 0 ...", "86-138..."), or in a
    form the phonenumbers library holds valid for one of PHONE_REGIONS, national prefix and
    grouping as the region writes them ("(11) 91234-5678", "8 (912) 345-67-89").

What is not: a bare run of digits is an order id far more often than a phone number, so it is
one only with the shape of a Chinese mobile number, or after a trunk "0" or right after a word
for a phone (vocabulary.PHONE_WORDS) in a form valid for a region; and never when it is one of
the customer's order ids. Digits grouped in thousands ("1 299 000") are a phone number only after
such a word or with a "+". Dates, times, amounts (a decimal part, a currency next to it) and
identifiers with letters in them (TCK-1001, rf_..., SF1234567890123) are never read as any of
these.
"""

import re
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache

import phonenumbers
from phonenumbers import Leniency, PhoneNumberMatcher

from agent.vocabulary import CURRENCY_CODE, CURRENCY_WORDS, PHONE_WORDS


class Kind(StrEnum):
    EMAIL = "email"
    PHONE = "phone"
    NATIONAL_ID = "national_id"
    CARD = "card"
    BANK_ACCOUNT = "bank_account"


@dataclass(frozen=True)
class Found:
    """Personal data at text[start:end] (for an address: its local part)."""

    kind: Kind
    start: int
    end: int


@dataclass(frozen=True)
class Folded:
    """A folded copy of a text; origins[i] is where text[i] came from in the text as written."""

    text: str
    origins: Sequence[int]

    def written(self, start: int, end: int) -> tuple[int, int]:
        return self.origins[start], self.origins[end - 1] + 1


# Every dash as "-" (a Japanese input method's "ー" too), and Chinese numerals as digits: a
# number written "幺三八零零幺三八零零零" to slip past a filter is still a number.
PLAIN = str.maketrans(
    dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212\u30fc", "-")
    | dict(zip("〇零一二三四五六七八九幺", "001234567891", strict=True))
)


def fold(text: str) -> Folded:
    if text.isascii():
        return Folded(text, range(len(text)))
    chars: list[str] = []
    origins: list[int] = []
    for position, char in enumerate(text):
        if unicodedata.category(char) == "Cf":
            continue
        for plain in unicodedata.normalize("NFKC", char).translate(PLAIN):
            digit = unicodedata.decimal(plain, None)
            chars.append(str(digit) if digit is not None else plain)
            origins.append(position)
    return Folded("".join(chars), origins)


# --- e-mail addresses ------------------------------------------------------------------------

# Chinese, Japanese and Korean are written without spaces: a local part does not run into them
# ("邮箱li.wei@example.com"), though one may be written in them ("用户@例子.公司").
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_SPELT_DOT = r"\s?[(\[{<]\s?dot\s?[)\]}>]\s?"
_LOCAL_CHAR = rf"(?:[^\W{_CJK}]|[.%+-])"
_LOCAL = (
    rf"(?<![^\W{_CJK}])(?<![.%+-])(?:[^\W{_CJK}]|[%+-]){_LOCAL_CHAR}*"
    rf"(?:{_SPELT_DOT}{_LOCAL_CHAR}+)*"  # li[dot]wei
    rf"|(?<![{_CJK}])[{_CJK}]++"  # 用户@例子.公司 (read once from its first character)
    r'|"[^"\s@]+"'  # "li.wei"@example.com
)
_AT = r"\s?@\s?|\s?[(\[{<]\s?at\s?[)\]}>]\s?"
_DOT = rf"[.。]|{_SPELT_DOT}"
_LABEL = r"[\w-]+"
EMAIL = re.compile(
    rf"(?P<local>{_LOCAL})(?:{_AT})(?:{_LABEL}(?:{_DOT}))+{_LABEL}"
    # "li.wei at example dot com": a spelt-out "at" only with a spelt-out "dot".
    rf"|(?P<spelt>{_LOCAL})\s+at\s+{_LABEL}(?:\s+dot\s+{_LABEL})+",
    re.IGNORECASE,
)


def _emails(text: str) -> Iterator[tuple[Kind, int, int]]:
    for match in EMAIL.finditer(text):
        group = "local" if match.group("local") else "spelt"
        yield Kind.EMAIL, match.start(group), match.end(group)


# --- identity numbers -------------------------------------------------------------------------

# 18 characters, grouped as the writer likes: area, date of birth, sequence, check character.
NATIONAL_ID = re.compile(r"(?<![A-Za-z0-9*])[1-9](?:[ -]?\d){16}[ -]?[\dXx](?![A-Za-z0-9])")
BIRTH_DATE = re.compile(r"(?:18|19|20)\d\d(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])")
ID_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
ID_CHECK = "10X98765432"


def is_national_id(text: str) -> bool:
    """ISO 7064 MOD 11-2, as GB 11643 has it."""
    chars = [char for char in text.upper() if char.isalnum()]
    if not BIRTH_DATE.fullmatch("".join(chars[6:14])):
        return False
    total = sum(int(char) * weight for char, weight in zip(chars[:17], ID_WEIGHTS, strict=True))
    return ID_CHECK[total % 11] == chars[17]


def _national_ids(text: str) -> Iterator[tuple[Kind, int, int]]:
    for match in NATIONAL_ID.finditer(text):
        if is_national_id(match.group(0)):
            yield Kind.NATIONAL_ID, match.start(), match.end()


# An IBAN: country, check digits, account, in groups of four or not (ISO 13616, mod 97).
IBAN = re.compile(
    r"(?<![A-Za-z0-9])[A-Z]{2}\d\d(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?(?![A-Za-z0-9])"
)


def is_iban(text: str) -> bool:
    compact = text.replace(" ", "")
    rearranged = compact[4:] + compact[:4]
    return int("".join(str(int(char, 36)) for char in rearranged)) % 97 == 1


def _bank_accounts(text: str) -> Iterator[tuple[Kind, int, int]]:
    for match in IBAN.finditer(text):
        if is_iban(match.group(0)):
            yield Kind.BANK_ACCOUNT, match.start(), match.end()


# --- what is not personal data ---------------------------------------------------------------

# An identifier with letters and digits in it: TCK-1001, rf_0123..., 1Z999AA10123456784.
WORD = re.compile(r"[A-Za-z0-9_-]+")
GLUED_MOBILE = re.compile(r"([A-Za-z]+[-_]?)(?:\+?0{0,2}86)?1[3-9]\d{9}")
DATE_OR_TIME = re.compile(
    # 2026-10-11, 2026 10 11, 11.10.2026, 10/11/2026, 10/11/26
    r"(?<!\d)(?:19|20)\d\d([-/. ])[01]?\d\1[0-3]?\d(?!\d)"
    r"|(?<!\d)[0-3]?\d([-/.])[0-3]?\d\2(?:19|20)\d\d(?!\d)"
    r"|(?<![\d/])[01]?\d/[0-3]?\d/\d\d(?![\d/])"
    # 14:30, 09:00:00.123, 14h30
    r"|(?<!\d)[0-2]?\d[:h]\d\d(?::\d\d(?:[.,]\d+)?)?(?!\d)"
)


def _not_personal(text: str) -> Iterator[tuple[int, int]]:
    """Identifiers with letters in them, dates and times: digits that are never a number's. A
    word glued to a mobile number ("Tel13800138000", "wx13800138000") is not an identifier."""
    for match in WORD.finditer(text):
        word = match.group(0)
        glued = GLUED_MOBILE.fullmatch(word)
        if glued is not None:
            yield match.start(), match.start() + len(glued.group(1))
        elif any(char.isdigit() for char in word) and any(char.isalpha() for char in word):
            yield match.start(), match.end()
    for match in DATE_OR_TIME.finditer(text):
        yield match.start(), match.end()


THOUSANDS = re.compile(r"\d{1,3}(?:([ .,'])\d{3})(?:\1\d{3})*")
# One point, before the last one or two digits: "1 299.50", not "415.555.0199".
DECIMAL = re.compile(r"[^.]*\d\.\d{1,2}")


def _is_amount(text: str, start: int, end: int) -> bool:
    """A number with a decimal part or a currency next to it ("1 299 000,00 ₽", "¥ 1 299 000")."""
    number, before, after = text[start:end], text[max(0, start - 4) : start], text[end : end + 4]
    # A decimal part ends within three digits: "13800138000,13912345678" is two numbers.
    if re.match(r"[.,]\d{1,3}(?!\d)", text[end : end + 5]) or DECIMAL.fullmatch(number):
        return True
    near_before, near_after = before.rstrip()[-3:], after.lstrip()
    return (
        (near_before[-1:] != "" and unicodedata.category(near_before[-1]) == "Sc")
        or bool(CURRENCY_CODE.fullmatch(near_before))
        or (near_after[:1] != "" and unicodedata.category(near_after[0]) == "Sc")
        or bool(CURRENCY_CODE.fullmatch(near_after[:3]))
        or bool(CURRENCY_WORDS.match(near_after))
    )


# --- numbers: cards and phones ---------------------------------------------------------------

# Digits, and between them at most one separator: a space, - . / _, a parenthesis, " / ".
NUMBER = re.compile(r"(?<![0-9*+])(?:\+\s?|\()?\d(?:(?: {1,2}|[\-./_]|\s?\(|\)\s?|\s/\s)?\d)*\)?")
DIGIT_BY_DIGIT = re.compile(r"\d(?:[ .\-/_]\d)+")
# With or without China's country code before it.
CHINESE_MOBILE = re.compile(r"(?:0{0,2}86)?1[3-9]\d{9}")
PHONE_DIGITS = range(7, 16)
CARD_DIGITS = range(13, 20)
# The regions whose formats a number without "+" is read in: China first, where the desk's
# customers are, then the countries most of the world's customers write from.
PHONE_REGIONS = (
    *("CN", "US", "GB", "DE", "FR", "JP", "KR", "IN", "BR", "ES", "IT", "RU", "AU", "CA"),
    *("MX", "NL", "PL", "TR", "VN", "AE", "SA", "ID", "TH", "HK", "TW", "PH", "MY", "SG"),
    *("PK", "EG", "NG", "ZA", "AR", "CO", "IR", "IL", "UA", "SE", "CH", "AT", "BE", "PT"),
)
# The ways one text's long runs of digits are tried as a card or phone number, at most (some
# 50 µs each). A message with a dozen numbers written one after another tries a few hundred; a
# text made to cost seconds ("0-0-0-…" for pages) has the rest of its runs masked unread.
MOST_SPLITS = 5000
# The window before a bare number in which a word for a phone introduces it.
PHONE_WORD_WINDOW = 24


def luhn_valid(digits: str) -> bool:
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = int(char) * (2 if position % 2 else 1)
        total += value - 9 if value > 9 else value
    return total % 10 == 0


def is_card(number: str, digits: str) -> bool:
    grouped_by = set(re.sub(r"\d", "", number))
    return (
        len(digits) in CARD_DIGITS
        and len(grouped_by) <= 1
        and grouped_by <= {" ", "-", "."}
        and (digits[0] in "3456" or "2200" <= digits[:4] <= "2720")
        and luhn_valid(digits)
    )


@lru_cache(maxsize=1024)
def valid_in_a_region(number: str) -> bool:
    """Whether phonenumbers reads all of `number` as a valid number of one of PHONE_REGIONS,
    written as that region writes it: a national prefix where one is due, digits grouped as
    the region groups them (STRICT_GROUPING: "2026-000123" is not Washington's 202-600-0123)."""
    number = number.replace("_", "-")
    digits = sum(char.isdigit() for char in number)
    return any(
        sum(char.isdigit() for char in match.raw_string) == digits
        for region in PHONE_REGIONS
        if _valid_in(number, region)
        for match in PhoneNumberMatcher(number, region, leniency=Leniency.STRICT_GROUPING)
    )


def _valid_in(number: str, region: str) -> bool:
    """The quick test first: the matcher's own costs twenty times as much."""
    try:
        return phonenumbers.is_valid_number(phonenumbers.parse(number, region))
    except phonenumbers.NumberParseException:
        return False


class Numbers:
    """Reads the runs of digits in a folded text: cards and phone numbers."""

    def __init__(self, text: str, is_order_id: Callable[[str], bool]):
        self.text = text
        self.is_order_id = is_order_id
        # How many more ways of splitting runs of digits this text may have read; past it,
        # a run is masked whole (MOST_SPLITS).
        self.splits_left = MOST_SPLITS

    def find(self, searched: str) -> Iterator[tuple[Kind, int, int]]:
        for match in NUMBER.finditer(searched):
            yield from self._read(match.start(), match.end())

    def _read(self, start: int, end: int) -> Iterator[tuple[Kind, int, int]]:
        kind = self.kind(start, end)
        if kind is not None:
            yield kind, start, end
        elif sum(char.isdigit() for char in self.text[start:end]) > max(PHONE_DIGITS):
            yield from self._split(start, end)

    def _split(self, start: int, end: int) -> Iterator[tuple[Kind, int, int]]:
        """Numbers written one after another ("202610110087 13800138000", "138.../139..."):
        from each group on, the longest run of groups (of at most a card's digits) that is a
        card or a phone number."""
        groups = [
            (start + m.start(), start + m.end()) for m in re.finditer(r"\d+", self.text[start:end])
        ]
        done = start
        for index, (first, _) in enumerate(groups):
            if first < done:
                continue
            runs, digits = [], 0
            for group_start, last in groups[index:]:
                digits += last - group_start
                if digits > max(CARD_DIGITS):
                    break
                if digits >= min(PHONE_DIGITS):  # fewer digits are neither a card nor a phone
                    runs.append(last)
            self.splits_left -= len(runs)
            if self.splits_left < 0:
                # A text of digit runs no person writes ("0-0-0-…" for pages): the rest of the
                # run is masked unread, for reading it would cost seconds.
                yield Kind.PHONE, first, end
                return
            for last in reversed(runs):
                kind = self.kind(first, last)
                if kind is not None:
                    yield kind, first, last
                    done = last
                    break

    def kind(self, start: int, end: int) -> Kind | None:
        number = self.text[start:end]
        digits = re.sub(r"\D", "", number)
        if _is_amount(self.text, start, end):
            return None
        if is_card(number, digits) and not self.is_order_id(digits):
            return Kind.CARD
        if len(digits) in PHONE_DIGITS and self.is_phone(start, number, digits):
            return Kind.PHONE
        return None

    def is_phone(self, start: int, number: str, digits: str) -> bool:
        if number.startswith("+"):
            return True
        if number.isdigit():
            if self.is_order_id(digits):
                return False
            if CHINESE_MOBILE.fullmatch(digits):
                return True
            # An order id is written bare; a phone number bare only after its trunk "0" or a
            # word that says it is one.
            introduced = number.startswith("0") or self.after_phone_word(start)
            return introduced and valid_in_a_region(number)
        if CHINESE_MOBILE.fullmatch(digits):
            return True
        if THOUSANDS.fullmatch(number):
            return self.after_phone_word(start) and valid_in_a_region(number)
        if re.match(r"0[.,]", number):
            return False  # 0.1234567
        if DIGIT_BY_DIGIT.fullmatch(number):
            # "4 1 5 5 5 5 0 1 2 3": no region groups so, but nothing but a number is spelt so.
            return valid_in_a_region(digits)
        return number.lstrip("(").startswith("0") or valid_in_a_region(number)

    def after_phone_word(self, start: int) -> bool:
        before = re.split(r"\d|[.!?。！？\n]", self.text[max(0, start - PHONE_WORD_WINDOW) : start])
        return PHONE_WORDS.search(before[-1]) is not None


# --- all of it ---------------------------------------------------------------------------------


def find(text: str, *, is_order_id: Callable[[str], bool]) -> list[Found]:
    """The personal data in `text`, in the order it is written, as spans of `text` itself.
    `is_order_id(digits)` says whether a run of digits is one of the customer's orders."""
    folded = fold(text)
    searched = folded.text
    spans: list[tuple[Kind, int, int]] = []

    def take(found: Iterator[tuple[Kind, int, int]]) -> None:
        nonlocal searched
        taken = list(found)
        spans.extend(taken)
        searched = _blanked(searched, [(start, end) for _, start, end in taken])

    take(_emails(searched))
    take(_national_ids(searched))
    take(_bank_accounts(searched))
    searched = _blanked(searched, list(_not_personal(searched)))
    take(Numbers(folded.text, is_order_id).find(searched))
    found = [Found(kind, *folded.written(start, end)) for kind, start, end in spans]
    return sorted(found, key=lambda item: item.start)


def _blanked(text: str, spans: list[tuple[int, int]]) -> str:
    """`text` with each text[start:end] made a run of a character no finder reads."""
    chars = list(text)
    for start, end in spans:
        chars[start:end] = "\x00" * (end - start)
    return "".join(chars)
