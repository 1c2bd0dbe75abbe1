"""Which word lists a misspelling is read as, and which are never read as another's slip."""

from agent.vocabulary.amounts import FULL, REMAINING
from agent.vocabulary.intent import (
    CONDITION,
    CONDITION_OPENING,
    GO_AHEAD,
    HESITATION,
    NEGATION,
    NEGATION_AFTER,
    POLITE_REQUEST,
    QUESTION_WORD,
    READING,
    REFUND,
    REFUND_STATE,
    WAIT,
    WISH,
)
from agent.vocabulary.products import PRODUCT_NAMES
from agent.vocabulary.reading import Lexicon, SpellingLists, read_misspellings_by
from agent.vocabulary.reasons import DAMAGED, FAULTY, NOT_RECEIVED, OTHER, WRONG_ITEM
from agent.vocabulary.topics import BALANCE_QUESTION, DEFERRAL, POLICY_WORDS, STATUS_WORDS


def kept_sources() -> tuple[Lexicon, ...]:
    """Lists whose words are never read as another's misspelling (nor misspellings read as
    them): question words, conditions, waits, negations."""
    return (
        QUESTION_WORD, BALANCE_QUESTION, CONDITION, CONDITION_OPENING, WAIT, NEGATION, GO_AHEAD,
        DEFERRAL, WISH, REFUND_STATE, NEGATION_AFTER, POLITE_REQUEST, READING, HESITATION,
    )  # fmt: skip


def spelling_sources() -> tuple[Lexicon, ...]:
    """The lists whose words a misspelling is read as."""
    return (
        REFUND, NOT_RECEIVED, WRONG_ITEM, DAMAGED, FAULTY, OTHER, FULL, REMAINING, STATUS_WORDS,
        POLICY_WORDS,
    )  # fmt: skip


read_misspellings_by(
    SpellingLists(
        read_as=spelling_sources(),
        kept=kept_sources(),
        product_names=tuple(tuple(names) for names in PRODUCT_NAMES.values()),
    )
)
