"""The desk's step benchmark (bench/agent_overhead.py) done with LangGraph and its PostgreSQL
checkpointer, for a side-by-side comparison (bench/peers/compare.py).

The same scripted work: a model that answers instantly over HTTP (a small OpenAI-compatible
server in this process, as the desk's bench runs the tests' fake in its process) asks for
`get_order` and `search_policies` in each of three steps, then answers. The tools make the
desk's database reads on the same seeded database: the ticket customer's order, its lines and
its refunded total (twice, as the desk's order summary does), and a ranked full-text search of
the published policy clauses. One step = the model node, the tools node running both calls
(at the same time, on a thread pool whose threads keep a connection each, as LangGraph's
ToolNode runs calls and the desk its quick lookups; `--tools in-turn`: one after the other),
and the checkpoints of both written to PostgreSQL before the graph goes on
(`durability="sync"`). A step is timed from one model node's start to the next's.

This is LangGraph at its leanest: plain OpenAI message dicts in the state and the official
`openai` client (the desk's), no LangChain message classes or ToolNode, one graph invocation
per run on one process, so that nothing but the framework and its checkpointer is measured.

Run it from its own venv (bench/peers/README.md), on a database the desk's migrations and
`seed_demo` made (compare.py makes one):

    bench/peers/.venv/bin/python bench/peers/langgraph_step.py \
        --database-url postgres://postgres@127.0.0.1:5432/test_refund_desk_bench_peer --runs 20 \
        [--tools together|in-turn]

It prints {"median_ms", "p95_ms", "steps", "timings_ms"} as JSON. The checkpointer's tables
(`checkpoints`, `checkpoint_blobs`, `checkpoint_writes`, `checkpoint_migrations`) are made
in that database.
"""

import argparse
import itertools
import json
import operator
import statistics
import threading
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import UTC, datetime
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Annotated, Any, TypedDict

import openai
import psycopg
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.graph import END, START, StateGraph

STEPS_PER_RUN = 3
TICKET = "TCK-1001"
LI_WEI_ORDERS = ["202610110087", "202610150012", "202609020031"]
REFUND_COMMITTED_STATUSES = (
    "approved",
    "executing",
    "provider_pending",
    "succeeded",
    "outcome_unknown",
)
SYSTEM_PROMPT = "You help support agents with refunds. Use the tools; never guess order data."
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_order",
            "description": "One order of the ticket's customer: items, paid, refunded, dates.",
            "parameters": {
                "type": "object",
                "properties": {"order_id": {"type": "string", "pattern": "^[0-9]{8,20}$"}},
                "required": ["order_id"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "search_policies",
            "description": "Clauses of the published refund policies that match a query.",
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {"type": "string"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 5},
                },
                "required": ["query"],
                "additionalProperties": False,
            },
        },
    },
]


# --- A zero-latency OpenAI-compatible model -------------------------------------------------

_ids = itertools.count(1)


def completion(message: dict, finish_reason: str) -> dict:
    return {
        "id": f"chatcmpl-peer{next(_ids)}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": "gpt-4o-mini",
        "choices": [
            {"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason}
        ],
        "usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150},
    }


def scripted_reply(request: dict) -> dict:
    """bench/agent_overhead.py's script: two tool calls per step, then "Done."."""
    step = sum(1 for message in request["messages"] if message["role"] == "assistant")
    if step >= STEPS_PER_RUN:
        return completion({"role": "assistant", "content": "Done.", "refusal": None}, "stop")
    calls = [
        ("get_order", {"order_id": LI_WEI_ORDERS[step]}),
        ("search_policies", {"query": f"refund window damaged item {step}"}),
    ]
    tool_calls = [
        {
            "id": f"call_{next(_ids)}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)},
        }
        for name, arguments in calls
    ]
    message = {"role": "assistant", "content": None, "refusal": None, "tool_calls": tool_calls}
    return completion(message, "tool_calls")


class FakeModelHandler(BaseHTTPRequestHandler):
    """Answers at once: TCP_NODELAY, so the body is not held back behind the headers."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        body = json.dumps(scripted_reply(request)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def start_fake_model() -> ThreadingHTTPServer:
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeModelHandler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="fake-model", daemon=True).start()
    return server


# --- The desk's two read tools, as SQL on the desk's tables ------------------------------------


def money(value: Decimal | None) -> str:
    return f"{(value or Decimal('0')).quantize(Decimal('0.01'))}"


def iso(moment: datetime | None) -> str | None:
    return moment.astimezone(UTC).isoformat(timespec="seconds") if moment else None


def refunded_total(db: psycopg.Connection, order_pk: int) -> Decimal:
    row = db.execute(
        "SELECT SUM(amount) FROM refunds_refundrequest WHERE order_id = %s AND status = ANY(%s)",
        (order_pk, list(REFUND_COMMITTED_STATUSES)),
    ).fetchone()
    return (row[0] if row else None) or Decimal("0")


def get_order(db: psycopg.Connection, customer_id: int, args: dict) -> dict:
    order = db.execute(
        "SELECT id, order_id, status, currency, amount_paid, placed_at, shipped_at, delivered_at,"
        " note FROM orders_order WHERE customer_id = %s AND order_id = %s"
        " ORDER BY placed_at DESC LIMIT 1",
        (customer_id, args["order_id"]),
    ).fetchone()
    if order is None:
        return {"ok": False, "error": {"code": "NOT_FOUND"}}
    pk, *fields = order
    lines = db.execute(
        "SELECT sku, name, category, quantity, unit_price FROM orders_orderline"
        " WHERE order_id = %s ORDER BY id",
        (pk,),
    ).fetchall()
    return order_result(fields, refunded_total(db, pk), lines)


def order_result(order: Sequence, refunded: Decimal, lines: Iterable[Sequence]) -> dict:
    """get_order's answer: `order` is (order_id, status, currency, amount_paid, placed_at,
    shipped_at, delivered_at, note), each of `lines` (sku, name, category, quantity,
    unit_price)."""
    order_id, status, currency, paid, placed, shipped, delivered, note = order
    return {
        "order_id": order_id,
        "status": status,
        "currency": currency,
        "amount_paid": money(paid),
        "refunded": money(refunded),
        "refundable_balance": money(max(paid - refunded, Decimal("0"))),
        "placed_at": iso(placed),
        "shipped_at": iso(shipped),
        "delivered_at": iso(delivered),
        "days_since_delivery": (datetime.now(UTC) - delivered).days if delivered else None,
        "lines": [
            {
                "sku": sku,
                "name": name,
                "category": category,
                "quantity": quantity,
                "unit_price": money(price),
            }
            for sku, name, category, quantity, price in lines
        ],
        "note": {"untrusted_customer_text": note} if note else None,
    }


# The desk's ranking (policies/selectors.py): weighted title and text, any query word matches,
# a bonus when every word does. The desk also drops stop words; this bench's queries have none.
SEARCH_SQL = """
WITH q AS (SELECT {any_word} AS any_word, websearch_to_tsquery('english', %s) AS every_word),
docs AS MATERIALIZED (
  SELECT c.ref, c.title, c.text, v.version, v.effective_from, p.slug, p.title AS policy_title,
         setweight(to_tsvector('english', COALESCE(c.title, '')), 'A')
         || setweight(to_tsvector('english', COALESCE(c.text, '')), 'B') AS document
  FROM policies_clause c
  JOIN policies_policyversion v ON c.policy_version_id = v.id
  JOIN policies_policy p ON v.policy_id = p.id
  WHERE v.status = 'published'
)
SELECT ref, title, text, slug, policy_title, version, effective_from,
       ts_rank(document, q.any_word)
       + CASE WHEN document @@ q.every_word THEN 10.0 ELSE 0.0 END AS score
FROM docs, q WHERE document @@ q.any_word
ORDER BY score DESC, slug, ref LIMIT %s
"""


def search_policies(db: psycopg.Connection, args: dict) -> dict:
    words = [word for word in args["query"].lower().split() if word.isalnum()]
    if not words:
        return {"query": args["query"], "clauses": []}
    any_word = " || ".join(["websearch_to_tsquery('english', %s)"] * len(words))
    rows = db.execute(
        SEARCH_SQL.format(any_word=any_word),  # only placeholders are formatted in
        (*words, args["query"], args.get("limit", 5)),
    ).fetchall()
    clauses = [
        {
            "ref": ref,
            "title": title,
            "text": text,
            "policy": slug,
            "policy_title": policy_title,
            "version": version,
            "effective_from": effective_from.isoformat(),
        }
        for ref, title, text, slug, policy_title, version, effective_from, _ in rows
    ]
    return {"query": args["query"], "clauses": clauses}


def tool_message(db: psycopg.Connection, customer_id: int, call: dict, *, order=None) -> dict:
    """The tool message that answers `call`, its tool run on `db`; `order`: the get_order to
    run (this one by default)."""
    arguments = json.loads(call["function"]["arguments"])
    if call["function"]["name"] == "get_order":
        result = (order or get_order)(db, customer_id, arguments)
    else:
        result = search_policies(db, arguments)
    return {"role": "tool", "tool_call_id": call["id"], "content": json.dumps(result)}


# --- The graph --------------------------------------------------------------------------------


class RunState(TypedDict):
    customer_id: int
    messages: Annotated[list[dict], operator.add]


class ToolConnections:
    """The tools' database connections: the run's own when tools run in turn, or one per
    thread of a small pool when a step's calls run at the same time (as LangGraph's prebuilt
    ToolNode runs them, and as the desk runs its quick lookups)."""

    def __init__(self, database_url: str, db: psycopg.Connection, *, together: bool):
        self.database_url = database_url
        self.db = db
        self.pool = ThreadPoolExecutor(max_workers=4) if together else None
        self.local = threading.local()
        self.opened: list[psycopg.Connection] = []
        self.lock = threading.Lock()

    def connection(self) -> psycopg.Connection:
        if self.pool is None:
            return self.db
        db = getattr(self.local, "db", None)
        if db is None:
            db = self.local.db = psycopg.connect(self.database_url, autocommit=True)
            with self.lock:
                self.opened.append(db)
        return db

    def map(self, work, items: list) -> list:
        if self.pool is None:
            return [work(item) for item in items]
        return list(self.pool.map(work, items))

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown()
        for db in self.opened:
            db.close()


def build_graph(
    model: openai.OpenAI,
    tools_db: ToolConnections,
    checkpointer: PostgresSaver,
    step_starts: list,
):
    def call_model(state: RunState) -> dict:
        step_starts.append(time.perf_counter())
        # Plain dicts in the state, as the model is sent them.
        messages: list[Any] = [{"role": "system", "content": SYSTEM_PROMPT}, *state["messages"]]
        tools: list[Any] = TOOLS
        reply = model.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=tools)
        message = reply.choices[0].message
        assistant: dict = {"role": "assistant", "content": message.content}
        if message.tool_calls:
            assistant["tool_calls"] = [call.model_dump() for call in message.tool_calls]
        return {"messages": [assistant]}

    def run_tools(state: RunState) -> dict:
        def run_one(call: dict) -> dict:
            return tool_message(tools_db.connection(), state["customer_id"], call)

        return {"messages": tools_db.map(run_one, state["messages"][-1]["tool_calls"])}

    def next_node(state: RunState) -> str:
        return "tools" if state["messages"][-1].get("tool_calls") else END

    graph = StateGraph(RunState)
    graph.add_node("model", call_model)
    graph.add_node("tools", run_tools)
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", next_node, ["tools", END])
    graph.add_edge("tools", "model")
    return graph.compile(checkpointer=checkpointer)


@contextmanager
def fake_model_and_database(
    database_url: str,
) -> Iterator[tuple[openai.OpenAI, psycopg.Connection, int]]:
    """A client of a zero-latency fake model started for the measurement, a connection to
    `database_url` (autocommit), and the id of the ticket's customer."""
    server = start_fake_model()
    model = openai.OpenAI(
        api_key="not-needed",
        base_url=f"http://127.0.0.1:{server.server_port}/v1",
        timeout=60,
        max_retries=0,
    )
    try:
        with psycopg.connect(database_url, autocommit=True) as db:
            customer = db.execute(
                "SELECT customer_id FROM tickets_ticket WHERE reference = %s", (TICKET,)
            ).fetchone()
            if customer is None:
                raise SystemExit(f"{TICKET} is not in that database: run seed_demo first")
            yield model, db, customer[0]
    finally:
        server.shutdown()
        server.server_close()


def figures(timings: list[float], **about: str) -> dict:
    """What a measurement prints: `about` it, and its steps' median, p95 and times."""
    return {
        **about,
        "steps": len(timings),
        "median_ms": statistics.median(timings),
        "p95_ms": statistics.quantiles(timings, n=20)[18],
        "timings_ms": [round(value, 3) for value in timings],
    }


def measure(database_url: str, runs: int, *, tools_together: bool = True) -> dict:
    timings: list[float] = []
    with (
        fake_model_and_database(database_url) as (model, db, customer_id),
        PostgresSaver.from_conn_string(database_url) as checkpointer,
    ):
        checkpointer.setup()
        step_starts: list[float] = []
        tools_db = ToolConnections(database_url, db, together=tools_together)
        graph = build_graph(model, tools_db, checkpointer, step_starts)

        def one_run() -> None:
            step_starts.clear()
            graph.invoke(
                {
                    "customer_id": customer_id,
                    "messages": [{"role": "user", "content": "Check the orders."}],
                },
                {"configurable": {"thread_id": str(uuid.uuid4())}},
                durability="sync",
            )
            assert len(step_starts) == STEPS_PER_RUN + 1, step_starts

        try:
            one_run()  # warm-up, not counted: the tool threads' connections
            for _ in range(runs):
                one_run()
                timings += [(b - a) * 1000 for a, b in itertools.pairwise(step_starts)]
        finally:
            tools_db.close()
    return figures(
        timings,
        framework="langgraph + PostgresSaver (durability=sync)",
        tools="together" if tools_together else "in turn",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", required=True, help="a database seed_demo filled")
    parser.add_argument("--runs", type=int, default=20, help=f"runs of {STEPS_PER_RUN} steps")
    parser.add_argument(
        "--tools",
        choices=("together", "in-turn"),
        default="together",
        help="a step's two calls at the same time (default, as the desk), or one after the other",
    )
    args = parser.parse_args()
    together = args.tools == "together"
    print(json.dumps(measure(args.database_url, args.runs, tools_together=together)))


if __name__ == "__main__":
    main()
