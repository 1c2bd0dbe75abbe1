"""The least a durable step of the comparison's script can cost on this machine: the work that
neither the desk nor LangGraph can leave out, done bare, for bench/peers/compare.py.

One step is what langgraph_step.py's step does without the framework, each part done the
cheapest way this repository knows: the model call to the same zero-latency fake over HTTP
through the official `openai` client, its request body posted and its answer read as the JSON
they are (as the desk does; `create` would transform the one and build models of the other),
the assistant message saved in a commit that waits
for the disk before any tool runs, the two tool reads at the same time on the same kind of
thread pool (`get_order` in one query, as the desk's; the policy search as the peer's), and the
two tool messages saved in a second such commit. Each commit is one INSERT of the messages as
JSON into a table of its own (`floor_step_messages`, made in that database), with nothing else:
no run to read or check, no events, no audit rows, no lease. It is timed as the peer is, from
one model call's start to the next's.

    bench/peers/.venv/bin/python bench/peers/floor_step.py \
        --database-url postgres://postgres@127.0.0.1:5432/test_refund_desk_bench_peer --runs 20

It prints {"median_ms", "p95_ms", "steps", "timings_ms"} as JSON.
"""

import argparse
import itertools
import json
import time
import uuid
from decimal import Decimal
from typing import Any

import psycopg
from langgraph_step import (
    REFUND_COMMITTED_STATUSES,
    STEPS_PER_RUN,
    SYSTEM_PROMPT,
    TOOLS,
    ToolConnections,
    fake_model_and_database,
    figures,
    order_result,
    tool_message,
)
from psycopg.types.json import Jsonb

TABLE = """
CREATE TABLE IF NOT EXISTS floor_step_messages (
  run uuid NOT NULL, seq integer NOT NULL, message jsonb NOT NULL, PRIMARY KEY (run, seq)
)
"""


# The order, a row per line, and the refunded total: the desk's one query for get_order
# (orders.selectors.customer_order_summary).
ORDER_SQL = """
SELECT o.order_id, o.status, o.currency, o.amount_paid, o.placed_at, o.shipped_at,
       o.delivered_at, o.note, l.sku, l.name, l.category, l.quantity, l.unit_price,
       (SELECT SUM(r.amount) FROM refunds_refundrequest r
        WHERE r.order_id = o.id AND r.status = ANY(%s))
FROM orders_order o LEFT OUTER JOIN orders_orderline l ON l.order_id = o.id
WHERE o.customer_id = %s AND o.order_id = %s ORDER BY l.id
"""


def get_order(db: psycopg.Connection, customer_id: int, args: dict) -> dict:
    rows = db.execute(
        ORDER_SQL, (list(REFUND_COMMITTED_STATUSES), customer_id, args["order_id"])
    ).fetchall()
    if not rows:
        return {"ok": False, "error": {"code": "NOT_FOUND"}}
    lines = (row[8:13] for row in rows if row[8] is not None)
    return order_result(rows[0][:8], rows[0][-1] or Decimal("0"), lines)


def save(db: psycopg.Connection, run: uuid.UUID, messages: list[dict], first: int) -> None:
    """One INSERT of `messages`, its own commit, which waits for the disk (autocommit)."""
    rows = ", ".join(["(%s, %s, %s)"] * len(messages))
    db.execute(
        f"INSERT INTO floor_step_messages (run, seq, message) VALUES {rows}",
        [
            value
            for index, message in enumerate(messages)
            for value in (run, first + index, Jsonb(message))
        ],
    )


def measure(database_url: str, runs: int) -> dict:
    timings: list[float] = []
    with fake_model_and_database(database_url) as (model, db, customer_id):
        db.execute(TABLE)
        tools_db = ToolConnections(database_url, db, together=True)

        def run_one(call: dict) -> dict:
            return tool_message(tools_db.connection(), customer_id, call, order=get_order)

        def one_run() -> list[float]:
            run = uuid.uuid4()
            messages: list = [{"role": "user", "content": "Check the orders."}]
            starts = []
            while True:
                starts.append(time.perf_counter())
                reply: Any = model.post(
                    "/chat/completions",
                    body={
                        "model": "gpt-4o-mini",
                        "messages": [{"role": "system", "content": SYSTEM_PROMPT}, *messages],
                        "tools": TOOLS,
                    },
                    cast_to=object,  # the answer's JSON as it is, as the desk reads it
                )
                message = reply["choices"][0]["message"]
                assistant: dict = {"role": "assistant", "content": message.get("content")}
                if message.get("tool_calls"):
                    assistant["tool_calls"] = message["tool_calls"]
                save(db, run, [assistant], len(messages))
                messages.append(assistant)
                if not message.get("tool_calls"):
                    break
                results = tools_db.map(run_one, assistant["tool_calls"])
                save(db, run, results, len(messages))
                messages.extend(results)
            assert len(starts) == STEPS_PER_RUN + 1, starts
            return [(b - a) * 1000 for a, b in itertools.pairwise(starts)]

        try:
            one_run()  # warm-up, not counted: the tool threads' connections
            for _ in range(runs):
                timings += one_run()
        finally:
            tools_db.close()
            db.execute("DROP TABLE floor_step_messages")
    return figures(timings, framework="none: the model call, the two reads, two commits")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", required=True, help="a database seed_demo filled")
    parser.add_argument("--runs", type=int, default=20, help=f"runs of {STEPS_PER_RUN} steps")
    args = parser.parse_args()
    print(json.dumps(measure(args.database_url, args.runs)))


if __name__ == "__main__":
    main()
