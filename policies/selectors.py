import re
from datetime import date, datetime
from decimal import Decimal

from django.db import connection
from django.db.models import QuerySet
from django.utils import timezone

from orders.models import Order
from orders.selectors import refunded_total
from policies.models import Clause, PolicyVersion
from policies.rules import Evaluation, RefundFacts, evaluate_refund
from policies.seed import REFUNDS_SLUG


def published_version(slug: str = REFUNDS_SLUG) -> PolicyVersion:
    """The one published version of a policy. Raises PolicyVersion.DoesNotExist if none."""
    return PolicyVersion.objects.select_related("policy").get(
        policy__slug=slug, status=PolicyVersion.Status.PUBLISHED
    )


def evaluate_refund_for_order(
    *,
    order: Order,
    amount: Decimal,
    reason: str,
    actor_role: str,
    requester_id: int | None = None,
    reviewer_id: int | None = None,
    requester_other_amount: Decimal = Decimal("0.00"),
    now: datetime | None = None,
) -> Evaluation:
    """The published refund policy applied to a refund of `amount` from `order`.

    Refunded-so-far counts committed refunds only, so a request still pending approval does
    not count against itself. `requester_other_amount` is what the requester proposed or had
    refunded on the order in other requests; R-5 limits the total.
    """
    version = published_version(REFUNDS_SLUG)
    categories = tuple(dict.fromkeys(order.lines.values_list("category", flat=True)))
    facts = RefundFacts(
        order_status=order.status,
        delivered_at=order.delivered_at,
        categories=categories,
        amount_paid=order.amount_paid,
        refunded_so_far=refunded_total(order),
        amount=Decimal(amount),
        currency=order.currency,
        reason=reason,
        actor_role=actor_role,
        now=now or timezone.now(),
        requester_id=requester_id,
        reviewer_id=reviewer_id,
        requester_other_amount=requester_other_amount,
    )
    return evaluate_refund(facts, version.rules, policy_version_id=version.pk)


# --- Clause search ----------------------------------------------------------------------

CLAUSE_REF = re.compile(r"\b([a-z]+-\d+)\b", re.IGNORECASE)
WORD = re.compile(r"[a-z0-9]+")
SEARCH_CONFIG = "english"

# Words that say nothing about which clause is meant; dropped before matching.
STOP_WORDS = frozenset(
    {
        "a",
        "about",
        "after",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "been",
        "before",
        "but",
        "by",
        "can",
        "could",
        "do",
        "does",
        "for",
        "from",
        "get",
        "got",
        "has",
        "have",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "long",
        "many",
        "may",
        "me",
        "much",
        "my",
        "no",
        "not",
        "of",
        "on",
        "or",
        "our",
        "should",
        "so",
        "than",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "they",
        "this",
        "to",
        "up",
        "us",
        "was",
        "we",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "within",
        "would",
        "you",
        "your",
    }
)
TITLE_WEIGHT = 3
TEXT_WEIGHT = 1
# A clause matching every query word outranks any clause matching only some of them.
ALL_TERMS_BONUS = 10
REF_MATCH_BONUS = 1000


def _stem(word: str) -> str:
    """A small suffix stripper so "days" finds "day" and "delivered" finds "delivery".

    Applied alike to queries and clauses, so consistent over-stemming does no harm.
    """
    changed = True
    while changed:
        changed = False
        for suffix, replacement, keep in (
            ("ies", "y", 3),
            ("ing", "", 4),
            ("ed", "", 4),
            ("es", "", 4),
            ("s", "", 3),
            ("er", "", 5),
            ("y", "", 5),
        ):
            if word.endswith(suffix) and len(word) - len(suffix) >= keep:
                word = word[: len(word) - len(suffix)] + replacement
                changed = True
                break
    return word


def _terms(text: str) -> set[str]:
    return {_stem(word) for word in WORD.findall(text.lower()) if word not in STOP_WORDS}


def _as_result(
    ref: str,
    title: str,
    text: str,
    policy: str,
    policy_title: str,
    version: int,
    effective_from: date,
) -> dict:
    """A matching clause as search_clauses answers it, from its fields in SEARCH_SQL's order."""
    return {
        "ref": ref,
        "title": title,
        "text": text,
        "policy": policy,
        "policy_title": policy_title,
        "version": version,
        "effective_from": effective_from.isoformat(),
    }


def _clause_fields(clause: Clause) -> tuple:
    version = clause.policy_version
    return (
        clause.ref,
        clause.title,
        clause.text,
        version.policy.slug,
        version.policy.title,
        version.version,
        version.effective_from,
    )


def _published_clauses() -> QuerySet[Clause]:
    return Clause.objects.filter(
        policy_version__status=PolicyVersion.Status.PUBLISHED
    ).select_related("policy_version__policy")


# PostgreSQL's ranking: weighted title (A) and text (B), matching any query word, with bonuses
# when every word matches and for a clause named in the query. Each clause's document is
# built once per query: `docs` is MATERIALIZED, as PostgreSQL would otherwise inline it and
# build the document again for the filter, the rank and the bonus (three times the cost).
# {any_word}: the words' tsqueries OR-ed (placeholders only).
SEARCH_SQL = """
WITH q AS (
    SELECT {any_word} AS any_word,
           websearch_to_tsquery(%(config)s::regconfig, %(query)s) AS every_word
), docs AS MATERIALIZED (
    SELECT c.ref, c.title, c.text, p.slug, p.title AS policy_title, v.version, v.effective_from,
           setweight(to_tsvector(%(config)s::regconfig, COALESCE(c.title, '')), 'A')
           || setweight(to_tsvector(%(config)s::regconfig, COALESCE(c.text, '')), 'B') AS document
    FROM policies_clause c
    JOIN policies_policyversion v ON v.id = c.policy_version_id
    JOIN policies_policy p ON p.id = v.policy_id
    WHERE v.status = %(published)s
)
SELECT ref, title, text, slug, policy_title, version, effective_from,
       ts_rank(document, q.any_word)
       + CASE WHEN document @@ q.every_word THEN %(all_terms_bonus)s ELSE 0.0 END
       + CASE WHEN ref = ANY(%(refs)s) THEN %(ref_match_bonus)s ELSE 0.0 END AS score
FROM docs, q
WHERE document @@ q.any_word OR ref = ANY(%(refs)s)
ORDER BY score DESC, slug, ref
LIMIT %(limit)s
"""


def _search_postgres(query: str, refs: list[str], limit: int) -> list[dict]:
    # websearch ANDs its words; OR-ing them as well keeps recall for chatty questions
    # ("how many days after delivery") whose every word no clause contains.
    words = [word for word in WORD.findall(query.lower()) if word not in STOP_WORDS]
    if not words and not refs:
        return []
    params: dict = {
        "config": SEARCH_CONFIG,
        "query": query,
        "published": PolicyVersion.Status.PUBLISHED.value,
        "all_terms_bonus": float(ALL_TERMS_BONUS),
        "ref_match_bonus": float(REF_MATCH_BONUS),
        "refs": refs,
        "limit": limit,
    }
    terms = []
    for index, word in enumerate(words):
        params[f"word{index}"] = word
        terms.append(f"websearch_to_tsquery(%(config)s::regconfig, %(word{index})s)")
    # No word left: an empty query, which matches nothing (the clauses named still do).
    any_word = " || ".join(terms) or "''::tsquery"
    with connection.cursor() as cursor:
        cursor.execute(SEARCH_SQL.format(any_word=any_word), params)  # placeholders only
        rows = cursor.fetchall()
    return [_as_result(*fields) for *fields, _score in rows]


def _search_portable(query: str, refs: list[str], limit: int) -> list[Clause]:
    wanted = _terms(query)
    scored = []
    for clause in _published_clauses():
        title, text = _terms(clause.title), _terms(clause.text)
        matched = wanted & (title | text)
        score = (
            TITLE_WEIGHT * len(wanted & title)
            + TEXT_WEIGHT * len(wanted & text)
            + (ALL_TERMS_BONUS if wanted and matched == wanted else 0)
            + (REF_MATCH_BONUS if clause.ref in refs else 0)
        )
        if score:
            scored.append((-score, clause.policy_version.policy.slug, clause.ref, clause))
    scored.sort(key=lambda row: row[:3])
    return [row[3] for row in scored[:limit]]


def search_clauses(query: str, limit: int = 5) -> list[dict]:
    """Clauses of published policies that match `query`, best first; [] when nothing does.

    A clause reference in the query ("R-2") puts that clause first. PostgreSQL ranks with
    full-text search; other databases score word overlap, titles counting more than text.
    """
    if limit < 1:
        return []
    refs = [ref.upper() for ref in CLAUSE_REF.findall(query)]
    if connection.vendor == "postgresql":
        return _search_postgres(query, refs, limit)
    return [_as_result(*_clause_fields(clause)) for clause in _search_portable(query, refs, limit)]
