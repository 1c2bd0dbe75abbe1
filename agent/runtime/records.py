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
"""

from collections.abc import Iterable

from agent.answer_check import ORDER_ID
from agent.runtime.answers import open_refund_question
from agent.vocabulary import CLAUSE_REF

HEADING = "From the records of this run:"
_MOST_ORDERS = 5  # of a listing: more is a list the agent can open, not an answer


def with_records(answer: str, calls: Iterable[dict], agent_words: str) -> str:
    """`answer`, then the question an open refund request needs when it asks none, then the
    records it leaves out. `calls`: the run's logged calls; `agent_words`: what the support
    agent typed."""
    calls = list(calls)
    asks = "?" in answer or "？" in answer  # noqa: RUF001 (the Chinese question mark)
    question = "" if asks else open_refund_question(agent_words, calls)
    return "\n\n".join(part for part in (answer, question, records_left_out(answer, calls)) if part)


def records_left_out(answer: str, calls: Iterable[dict]) -> str:
    """The block to put under `answer` ("" when it names everything): one line per order shown,
    proposal made and the policy read that the answer does not name. `calls`: the run's logged
    calls (rows with tool_name, ok, result)."""
    calls = [call for call in calls if isinstance(call["result"], dict)]
    named_orders = set(ORDER_ID.findall(answer))
    lines = [
        _order_line(order)
        for order in _orders_shown(calls)
        if order["order_id"] not in named_orders
    ]
    lines += [
        _proposal_line(call["result"])
        for call in calls
        if call["ok"] and call["tool_name"] == "create_refund"
        if call["result"].get("request_id") and call["result"]["request_id"] not in answer
    ]
    clauses = _clauses_read(calls)
    if clauses and not CLAUSE_REF.search(answer):
        lines.append("Policy: " + "; ".join(clauses) + ".")
    return "\n".join([HEADING, *(f"- {line}" for line in lines)]) if lines else ""


def run_record(calls: Iterable[dict]) -> list[str]:
    """What a run did, in the desk's words and from its tool log alone, never from the model's
    prose (DESIGN §18): each order its lookups showed, each proposal made (pending a reviewer),
    each call refused and why, the clauses it read. `calls`: the run's logged calls, oldest
    first (rows with tool_name, ok, error_code, result)."""
    calls = [call for call in calls if isinstance(call["result"], dict)]
    lines = [_order_line(order) for order in _orders_shown(calls)]
    for call in calls:
        if call["ok"] and call["tool_name"] == "create_refund" and call["result"].get("request_id"):
            lines.append(_proposal_line(call["result"]))
        elif not call["ok"]:
            lines.append(f"{call['tool_name']} refused ({call.get('error_code') or 'error'}).")
    clauses = _clauses_read(calls)
    if clauses:
        lines.append("Policy read: " + "; ".join(clauses) + ".")
    return lines


def _orders_shown(calls: list[dict]) -> list[dict]:
    """The orders the run's successful lookups showed, the latest reading of each, in the order
    they were first shown."""
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
    return list(orders.values())


def _order_line(order: dict) -> str:
    currency = order.get("currency", "")
    names = order.get("items") or [line.get("name") for line in order.get("lines") or []]
    what = ", ".join(str(name) for name in names if name)
    status = str(order.get("status", ""))
    if status == "delivered" and order.get("days_since_delivery") is not None:
        status = f"delivered {order['days_since_delivery']} days ago"
    facts = [f"{order.get('amount_paid')} {currency} paid", status]
    if order.get("refundable_balance") is not None:
        facts.append(f"{order['refundable_balance']} {currency} left to refund")
    label = f"Order {order['order_id']}" + (f" ({what})" if what else "")
    return f"{label}: " + ", ".join(fact for fact in facts if fact.strip()) + "."


def _proposal_line(result: dict) -> str:
    return (
        f"Proposal {result['request_id']}: {result.get('amount')} {result.get('currency', '')}, "
        "pending a reviewer's approval. Not refunded yet."
    )


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
