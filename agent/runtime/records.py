"""The records a small model's answer leaves out (DESIGN §16, small-model mode's "records"
piece).

A model of a billion parameters looks the right things up and then answers without the facts
it found: "I checked the order" without its number, "I proposed the refund" without saying it
waits for a reviewer, "the policy does not allow it" without the clause. The desk adds those
facts under the answer, from the run's own tool results and in the desk's words, each only
when the answer does not already name it: an order by its number, a proposal by its request
id, the policy by any clause. Nothing here comes from text a customer wrote (item names and
clauses are the shop's and the policy's), and nothing claims more than the records say. An
answer to a refund request that left the amount open, which proposed nothing and asks nothing,
gets the desk's question first (agent/runtime/answers.py: open_refund_question).

The lines are worded for people, in the language of the agent's own request (English when the
desk has no words for it: agent/runtime/record_words.py): "Looked up order #…", "Proposed a
refund of 129.00 CNY for …: waiting for a reviewer". No tool's name nor error code is in them;
the tool-call trail and the audit keep those.
"""

import json
from collections.abc import Iterable

from agent.answer_check import ORDER_ID, SENTENCE_END
from agent.drafts import detect_language
from agent.errors import logged_error_in_words
from agent.runtime.answers import open_refund_question
from agent.runtime.record_words import DEFAULT_LANGUAGE, RECORD_WORDS, words_for
from agent.vocabulary import CLAUSE_REF

HEADING = RECORD_WORDS[DEFAULT_LANGUAGE]["heading"]
# The heading in every language the record is written in.
HEADINGS = tuple(words["heading"] for words in RECORD_WORDS.values())
_MOST_ORDERS = 5  # of a listing: more is a list the agent can open, not an answer


def record_language(agent_words: str) -> str:
    """The language the record speaks to the agent in: that of their own request."""
    return detect_language(agent_words) if agent_words.strip() else DEFAULT_LANGUAGE


def with_records(answer: str, calls: Iterable[dict], agent_words: str) -> str:
    """`answer`, then the question an open refund request needs when it asks none, then the
    records it leaves out. `calls`: the run's logged calls; `agent_words`: what the support
    agent typed (the record speaks their language)."""
    calls = list(calls)
    asks = "?" in answer or "？" in answer  # noqa: RUF001 (the Chinese question mark)
    question = "" if asks else open_refund_question(agent_words, calls)
    records = records_left_out(answer, calls, language=record_language(agent_words))
    return "\n\n".join(part for part in (answer, question, records) if part)


def records_left_out(
    answer: str, calls: Iterable[dict], *, language: str = DEFAULT_LANGUAGE
) -> str:
    """The block to put under `answer` ("" when it names everything): one line per order shown,
    proposal made and the policy read that the answer does not name. `calls`: the run's logged
    calls (rows with tool_name, ok, result)."""
    words = words_for(language)
    calls = [call for call in calls if isinstance(call["result"], dict)]
    named_orders = set(ORDER_ID.findall(answer))
    orders = _orders_shown(calls)
    lines = [
        _order_line(order, words)
        for order in orders.values()
        if order["order_id"] not in named_orders
    ]
    lines += [
        _proposal_line(call, orders, words)
        for call in calls
        if call["ok"] and call["tool_name"] == "create_refund"
        if _proposal(call["result"]).get("request_id")
        and _proposal(call["result"])["request_id"] not in answer
    ]
    clauses = _clauses_read(calls)
    if clauses and not CLAUSE_REF.search(answer):
        lines.append(_policy_line(clauses, words))
    lines = [line for line in lines if not said_in(line, answer)]
    return "\n".join([words["heading"], *(f"- {line}" for line in lines)]) if lines else ""


def run_record(calls: Iterable[dict], *, language: str = DEFAULT_LANGUAGE) -> list[str]:
    """What a run did, in the desk's words and from its tool log alone, never from the model's
    prose (DESIGN §18): each order its lookups showed, each proposal made (pending a reviewer),
    each call refused and why, the clauses it read. `calls`: the run's logged calls, oldest
    first (rows with tool_name, ok, error_code, result, and arguments when logged)."""
    words = words_for(language)
    calls = [call for call in calls if isinstance(call["result"], dict)]
    orders = _orders_shown(calls)
    lines = [_order_line(order, words) for order in orders.values()]
    refused = []
    for call in calls:
        proposal = _proposal(call["result"])
        if call["ok"] and call["tool_name"] == "create_refund" and proposal.get("request_id"):
            lines.append(_proposal_line(call, orders, words))
        elif not call["ok"]:
            refused.append(_refused_line(call, words, language))
            lines.append(refused[-1])
    # A clause a refusal's reason already states ("R-5: requested 899.00 …") is not said again.
    clauses = [
        clause
        for clause in _clauses_read(calls)
        if not any(clause.replace(" ", ": ", 1) in line for line in refused)
    ]
    if clauses:
        lines.append(_policy_line(clauses, words))
    return list(dict.fromkeys(lines))


def said_in(line: str, text: str) -> bool:
    """Whether `text` already says `line`: one of its sentences is the line's, or one of its
    lines is (ignoring case, spacing, list marks and the final stop)."""
    said = {_sentence_key(part) for part in SENTENCE_END.split(text) + text.splitlines()}
    return _sentence_key(line) in said - {""}


def _sentence_key(sentence: str) -> str:
    return " ".join(sentence.strip().lstrip("-•* ").rstrip(".。!！ ").lower().split())  # noqa: RUF001


def _proposal(result: dict) -> dict:
    """create_refund's proposal: the result itself, or its `refund`."""
    body = result.get("refund")
    return body if isinstance(body, dict) else result


def _orders_shown(calls: list[dict]) -> dict[str, dict]:
    """The orders the run's successful lookups showed, the latest reading of each, in the order
    they were first shown, by order id."""
    orders: dict[str, dict] = {}
    for call in calls:
        if not call["ok"]:
            continue
        if call["tool_name"] == "get_order":
            shown = [call["result"]]
        elif call["tool_name"] == "list_customer_orders":
            shown = call["result"].get("orders", [])[:_MOST_ORDERS]
        else:
            continue
        for order in shown:
            if isinstance(order, dict) and order.get("order_id"):
                orders[str(order["order_id"])] = {**orders.get(str(order["order_id"]), {}), **order}
    return orders


def _items(order: dict, words: dict) -> str:
    names = order.get("items") or [line.get("name") for line in order.get("lines") or []]
    what = ", ".join(str(name) for name in names if name)
    return words["what"].format(items=what) if what else ""


def _order_line(order: dict, words: dict) -> str:
    currency = order.get("currency", "")
    status = str(order.get("status", ""))
    if status == "delivered" and order.get("days_since_delivery") is not None:
        status = words["delivered_days"].format(days=order["days_since_delivery"])
    else:
        status = words["status"].get(status, status)
    facts = [words["paid"].format(amount=order.get("amount_paid"), currency=currency), status]
    if order.get("refundable_balance") is not None:
        facts.append(words["left"].format(amount=order["refundable_balance"], currency=currency))
    facts_said = words["join"].join(fact for fact in facts if fact.strip())
    return words["order"].format(
        order_id=order["order_id"], what=_items(order, words), facts=facts_said
    )


def _proposal_line(call: dict, orders: dict[str, dict], words: dict) -> str:
    """A proposal the run made: its order is the one the call named."""
    proposal = _proposal(call["result"])
    order_id = str(proposal.get("order_id") or _order_argument(call.get("arguments_raw")))
    return words["proposal"].format(
        amount=proposal.get("amount"),
        currency=proposal.get("currency", ""),
        order_id=order_id or "?",
        what=_items(orders[order_id], words) if order_id in orders else "",
        request_id=proposal["request_id"],
    )


def _refused_line(call: dict, words: dict, language: str) -> str:
    """A call that did not go through, as what it tried to do and, in English, why."""
    order_id = _order_argument(call.get("arguments_raw"))
    name = call["tool_name"]
    if name == "get_order" and not order_id:
        name = "get_order_unnamed"
    action = words["actions"].get(name, words["actions"]["other"]).format(order_id=order_id)
    # The reasons are the desk's error sentences (agent/errors.py), written in English.
    why = logged_error_in_words(call["result"], call.get("error_code") or "")
    if language != DEFAULT_LANGUAGE or not why:
        return words["refused_bare"].format(action=action)
    return words["refused"].format(action=action, why=why)


def _order_argument(arguments_raw: object) -> str:
    """The order a call named in its arguments (as logged, JSON text), "" if none is readable."""
    try:
        arguments = json.loads(arguments_raw) if isinstance(arguments_raw, str) else None
    except ValueError:
        return ""
    order_id = arguments.get("order_id") if isinstance(arguments, dict) else None
    return str(order_id) if isinstance(order_id, str | int) and str(order_id).strip() else ""


def _policy_line(clauses: list[str], words: dict) -> str:
    return words["policy"].format(clauses=words["clauses_join"].join(clauses))


def _clauses_read(calls: list[dict]) -> list[str]:
    """The clauses the run's policy searches returned and its refusals named, each once."""
    clauses: dict[str, str] = {}
    for call in calls:
        result = call["result"]
        if call["ok"] and call["tool_name"] == "search_policies":
            for clause in result.get("clauses", []):
                if isinstance(clause, dict) and clause.get("ref"):
                    clauses.setdefault(clause["ref"], f"{clause['ref']} {clause.get('title', '')}")
        error = result.get("error")
        if not call["ok"] and isinstance(error, dict):
            for verdict in error.get("verdicts", []):
                if isinstance(verdict, dict) and verdict.get("clause"):
                    ref = verdict["clause"]
                    clauses.setdefault(ref, f"{ref} {verdict.get('detail', '')}")
    return [text.strip() for text in clauses.values()]
