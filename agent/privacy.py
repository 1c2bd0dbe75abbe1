# ruff: noqa: RUF002 (a full-width at sign is what a Chinese input method types)
"""Personal data kept from the model (DESIGN §17).

Everything a model is sent passes through here first: the prompt a run builds
(agent.runtime.prompts.build_context) and every tool result (the executor masks it before the
result is logged, so ToolCallLog holds what the model was sent; MCP hosts, whose models are
model providers too, get the same masked results and resources).

What is masked (agent/pii.py finds it, in the forms people type: full-width digits and "＠", a
zero-width space, any separator, inside Chinese or Japanese text; the rest of the text is left
as it was written):
  * e-mail addresses, to their first character: li.wei@example.com -> l***@example.com,
    li.wei＠example.com -> l***＠example.com, "li.wei [at] example [dot] com" likewise;
  * phone numbers of any country: international (+86 138 0013 8000, 0044 20 7946 0958), local
    with a trunk prefix (020 7946 0958, 06 12 34 56 78, 8 (912) 345-67-89), in any format the
    phonenumbers library holds valid for a region ((415) 555-0123, (11) 91234-5678), and
    Chinese mobile numbers however separated (13800138000, 138/0013/8000, 手机号13800138000):
    every digit but the last two becomes "*";
  * Chinese resident identity numbers (check character verified): all but the last two;
  * bank card numbers (Luhn-checked) and IBANs (mod 97): all but the last four;
  * the bound customer's name, down to their first name: "Maria Garcia" -> "Maria", and a
    "Garcia" on its own -> "G.".
What is not: order ids, amounts, dates and times, ticket references, request ids. A bare run of
digits is an order id far more often than a phone number, so it is masked only when it has the
shape of a Chinese mobile number, or follows a word for a phone and is valid for a region, and
never when it is one of the customer's order ids. Values under IDENTIFIER_KEYS are never
masked.

Drafts for the customer are written from what the model saw: `fill_customer_details` puts the
real name and address back from the desk's own records, never from the model's text.
"""

import re
import unicodedata
from collections.abc import Callable
from functools import lru_cache, partial

from agent import pii
from agent.pii import Found, Kind
from orders.models import Customer, Order

# Values under these keys are identifiers the desk made, never personal data: an 11-digit
# order id must stay an order id even where it looks like a mobile number.
IDENTIFIER_KEYS = frozenset(
    {
        "order_id",
        "request_id",
        "sku",
        "result_ref",
        "tool_call_id",
        "payment_reference",
        "provider_refund_id",
        "ref",
    }
)

NAME_WORD = re.compile(r"[^\W\d_](?:[^\W\d_]|['.-])*")
MAX_NAME_WORDS = 4
# Characters a masked number keeps at its end: enough to tell two numbers apart, and for a
# card the four digits it is known by.
KEPT_CHARACTERS = {Kind.PHONE: 2, Kind.NATIONAL_ID: 2, Kind.CARD: 4, Kind.BANK_ACCOUNT: 4}


def first_name(customer: Customer) -> str:
    """What the model calls the customer: the first word of their name (all of a one-word
    name)."""
    words = customer.name.split()
    return words[0] if words else ""


def masked(text: str, found: list[Found]) -> str:
    """`text` with what was found masked and everything else as it was written."""
    parts, written = [], 0
    for item in found:
        if item.start < written:
            continue  # two finds in one character that NFKC made several of ("⑴")
        parts.append(text[written : item.start])
        value = text[item.start : item.end]
        if item.kind == Kind.EMAIL:
            parts.append(f"{value[0]}***")
        else:
            parts.append(_masked_characters(value, KEPT_CHARACTERS[item.kind]))
        written = item.end
    parts.append(text[written:])
    return "".join(parts)


def _masked_characters(text: str, kept: int) -> str:
    """Every letter and digit of `text` but the last `kept` as "*"; separators as they are (a
    Japanese "ー" is a modifier letter, Lm, written as a dash)."""
    count = sum(_is_masked(char) for char in text)
    seen, out = 0, []
    for char in text:
        if _is_masked(char):
            seen += 1
            out.append(char if seen > count - kept else "*")
        else:
            out.append(char)
    return "".join(out)


def _is_masked(char: str) -> bool:
    return char.isalnum() and unicodedata.category(char) != "Lm"


class Masker:
    """Masks text for one customer's scope (or none: addresses and numbers only)."""

    def __init__(self, customer: Customer | None = None):
        self.customer = customer
        self._order_ids: frozenset[str] | None = None
        self._name_patterns = _name_patterns(customer.name) if customer is not None else []

    def order_ids(self) -> frozenset[str]:
        """The customer's order ids, read once and only when a bare number needs them."""
        if self._order_ids is None:
            self._order_ids = (
                frozenset(
                    Order.objects.filter(customer=self.customer).values_list("order_id", flat=True)
                )
                if self.customer is not None
                else frozenset()
            )
        return self._order_ids

    def is_order_id(self, digits: str) -> bool:
        return digits in self.order_ids()

    def text(self, text: str) -> str:
        if not text:
            return text
        text = masked(text, pii.find(text, is_order_id=self.is_order_id))
        for pattern, replacement in self._name_patterns:
            text = pattern.sub(replacement, text)
        return text

    def remembered_text(self, text: str) -> str:
        """`text` masked as `text()` masks it, remembered by what the masking depends on (the
        text, the customer's name and order ids): a run's context masks the same rules and
        messages again at every step."""
        name = self.customer.name if self.customer is not None else None
        return _remembered(text, name, self.order_ids())

    def value(self, value: object) -> object:
        """A JSON value with every string masked, identifiers excepted."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.value(item) for item in value]
        if isinstance(value, dict):
            return {
                key: item if key in IDENTIFIER_KEYS and isinstance(item, str) else self.value(item)
                for key, item in value.items()
            }
        return value


def _name_patterns(name: str) -> list[tuple[re.Pattern, Callable[[re.Match], str]]]:
    """The customer's whole name -> first name; each other part of it, written with a capital
    (Garcia, GARCIA) -> its initial."""
    words = name.split()
    if len(words) < 2:
        return []
    first = words[0]
    whole = r"(?<!\w)" + r"\s+".join(re.escape(word) for word in words) + r"(?!\w)"
    patterns: list[tuple[re.Pattern, Callable[[re.Match], str]]] = [
        (re.compile(whole, re.IGNORECASE), lambda match: first)
    ]
    for word in _surnames(words):
        patterns.append(
            (
                re.compile(rf"(?<!\w){re.escape(word)}(?!\w)", re.IGNORECASE),
                partial(_initial, initial=f"{word[0].upper()}."),
            )
        )
    return patterns


def _initial(match: re.Match, *, initial: str) -> str:
    # In lower case it is more likely a word of the sentence ("reed", "young") than the name.
    return initial if match.group(0)[0].isupper() else match.group(0)


def _surnames(words: list[str]) -> set[str]:
    """The parts of a name after the first that are worth masking on their own: a name of a
    few words of letters (one letter is an initial already). A "name" that reads like a
    sentence is masked only as a whole."""
    if len(words) > MAX_NAME_WORDS or not all(NAME_WORD.fullmatch(word) for word in words):
        return set()
    first = words[0].casefold()
    return {word for word in words[1:] if len(word) > 1 and word.casefold() != first}


@lru_cache(maxsize=256)
def _remembered(text: str, name: str | None, order_ids: frozenset[str]) -> str:
    masker = Masker()
    masker._name_patterns = _name_patterns(name) if name is not None else []
    masker._order_ids = order_ids
    return masker.text(text)


def mask_for_model(text: str, *, customer: Customer | None = None) -> str:
    """`text` as a model may see it."""
    return Masker(customer).text(text)


def mask_result_for_model(result: dict, *, customer: Customer | None = None) -> dict:
    """A tool result as a model may see it."""
    masked = Masker(customer).value(result)
    assert isinstance(masked, dict)
    return masked


def masked_email(address: str) -> str:
    """The customer's address as the model sees it."""
    return Masker().text(address)


# Placeholders a draft may carry for the desk to fill, the spelling macros use (DESIGN §15).
PLACEHOLDERS = {
    "{{customer.name}}": lambda customer: customer.name,
    "{{customer.first_name}}": first_name,
    "{{customer.email}}": lambda customer: customer.email,
}


def fill_customer_details(text: str, *, customer: Customer) -> str:
    """A draft written from what the model saw, with the customer's real details put back
    from the desk's records: the placeholders {{customer.name}}, {{customer.first_name}},
    {{customer.email}}, and the masked form of the customer's own address. Anything else the
    model wrote stays as it is: a masked address that is not the customer's is not theirs to
    fill in."""
    for placeholder, value in PLACEHOLDERS.items():
        text = text.replace(placeholder, value(customer))
    masked = masked_email(customer.email)
    if masked != customer.email:
        text = re.sub(rf"(?<![\w.%+-]){re.escape(masked)}(?![\w-])", customer.email, text)
    return text
