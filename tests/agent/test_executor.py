"""The tool executor (DESIGN §1 invariants 2, 3, 10; §6).

Transactional: the handler runs on its own thread and database connection, so it only sees
committed rows.
"""

import json
import logging
import threading
import time
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from django.db import connections, transaction

from agent.errors import ErrorCode, ToolError
from agent.executor.calls import execute_tool_call
from agent.models import AgentRun, ToolCallLog
from agent.tools.paging import MAX_RESULT_CHARS
from agent.tools.registry import SUPPORT_ROLES, Tool, ToolKind, registered_tool
from refunds.models import RefundRequest
from tests.agent.runs import call_tool, looked_up, run_context

pytestmark = pytest.mark.django_db(transaction=True)

MUG = "202610110087"  # Li Wei, TCK-1001
LAMP = "202610250777"  # Maria Garcia
EMPTY_SCHEMA = {"type": "object", "properties": {}, "required": [], "additionalProperties": False}


def compact(result: dict) -> str:
    return json.dumps(result, ensure_ascii=False, separators=(",", ":"))


def extra_tool(name: str, handler, *, kind: ToolKind = ToolKind.READ) -> Tool:
    return Tool(
        name=name,
        description="A tool that exists only in this test.",
        parameters=EMPTY_SCHEMA,
        handler=handler,
        kind=kind,
        roles=SUPPORT_ROLES,
    )


def test_it_returns_the_tool_result_and_logs_exactly_one_row(demo):
    ctx = run_context("agent")

    result = call_tool(ctx, "get_order", {"order_id": MUG}, call_id="call_1")

    assert result["ok"] is True
    assert result["order_id"] == MUG
    assert result["amount_paid"] == "129.00"
    row = ToolCallLog.objects.get()
    assert row.run_id == ctx.run.pk
    assert row.ticket.reference == "TCK-1001"
    assert row.tool_call_id == "call_1"
    assert row.tool_name == "get_order"
    assert row.arguments == {"order_id": MUG}
    assert row.arguments_raw == json.dumps({"order_id": MUG})
    assert len(row.args_digest) == 64
    assert row.ok is True
    assert row.result == result
    assert row.error_code == ""
    assert row.retryable is False
    assert row.actor.username == "agent"
    assert row.actor_role == "agent"
    assert row.elapsed_ms >= 0


def test_it_answers_another_customers_order_exactly_like_a_missing_one(demo):
    ctx = run_context("agent")

    foreign = call_tool(ctx, "get_order", {"order_id": LAMP})
    missing = call_tool(ctx, "get_order", {"order_id": "209999999999"})
    foreign_status = call_tool(ctx, "get_refund_status", {"order_id": "202610180099"})

    assert compact(foreign) == compact(missing) == compact(foreign_status)
    assert foreign["error"]["code"] == "NOT_FOUND"
    assert foreign["error"]["next_actions"] == ["list_customer_orders", "ask_customer"]
    logged = json.dumps(list(ToolCallLog.objects.values_list("result", flat=True)))
    for maria_data in ("Maria", "Desk lamp", "249.00", "pi_demo", "200.00", "re_history"):
        assert maria_data not in compact(foreign) + compact(foreign_status) + logged


def test_it_rechecks_the_role_when_an_intern_calls_create_refund(demo):
    ctx = run_context("intern")
    arguments = {"order_id": MUG, "amount": 129, "reason": "damaged", "explanation": "Broken"}

    result = call_tool(ctx, "create_refund", arguments)

    assert result["ok"] is False
    assert result["error"]["code"] == "PERMISSION_DENIED"
    assert result["error"]["retryable"] is False
    assert RefundRequest.objects.filter(ticket__reference="TCK-1001").exists() is False
    row = ToolCallLog.objects.get()
    assert (row.tool_name, row.ok, row.error_code, row.actor_role) == (
        "create_refund",
        False,
        "PERMISSION_DENIED",
        "intern",
    )


def test_it_passes_validated_arguments_with_the_amount_in_cents(demo):
    ctx = run_context("agent")
    call_tool(ctx, "get_order", {"order_id": MUG})

    result = call_tool(
        ctx,
        "create_refund",
        '{"order_id": "202610110087", "amount": 99.5, '
        '"reason": "damaged", "explanation": "Box crushed"}',
    )

    assert (result["ok"], result["status"], result["amount"]) == (True, "pending_approval", "99.50")
    refund = RefundRequest.objects.get(ticket__reference="TCK-1001")
    assert (refund.order.order_id, refund.amount, refund.reason, refund.explanation) == (
        MUG,
        Decimal("99.50"),
        "damaged",
        "Box crushed",
    )
    assert ToolCallLog.objects.get(tool_name="create_refund").arguments["amount"] == "99.5"


def test_it_names_similar_tools_for_an_unknown_one(demo):
    ctx = run_context("agent")

    result = call_tool(ctx, "get_orders", {"order_id": MUG})

    assert result["error"]["code"] == "UNKNOWN_TOOL"
    assert result["error"]["similar"] == ["get_order"]
    assert result["error"]["next_actions"] == ["get_order"]
    row = ToolCallLog.objects.get()
    assert (row.tool_name, row.error_code, row.arguments) == ("get_orders", "UNKNOWN_TOOL", None)


@pytest.mark.parametrize(
    "raw",
    [
        '{"order_id": ',
        "order 202610110087",
        "[1, 2]",
        '"text"',
        "null",
        '{"order_id": "1", "order_id": "202610110087"}',
        '{"x": ' + "[" * 500 + "]" * 500 + "}",
        "[" * 7_000 + "]" * 7_000,
    ],
    ids=[
        "cut",
        "prose",
        "array",
        "string",
        "null",
        "duplicate key",
        "deep",
        "deeper than the parser goes",
    ],
)
def test_it_refuses_arguments_that_are_not_one_json_object(demo, raw):
    ctx = run_context("agent")

    result = call_tool(ctx, "get_order", raw)

    assert result["ok"] is False
    assert result["error"]["code"] == "BAD_JSON"
    assert result["error"]["next_actions"] == ["get_order"]
    row = ToolCallLog.objects.get()
    assert (row.error_code, row.arguments_raw) == ("BAD_JSON", raw)


def test_it_refuses_arguments_over_the_size_cap_before_parsing_them(demo):
    ctx = run_context("agent")
    raw = "[" * 100_000 + "]" * 100_000

    result = call_tool(ctx, "create_refund", raw)

    assert result["error"]["code"] == "ARGUMENTS_TOO_LARGE"
    assert result["error"]["next_actions"] == ["create_refund"]
    row = ToolCallLog.objects.get()
    assert (row.error_code, row.arguments, row.args_digest, row.arguments_raw) == (
        "ARGUMENTS_TOO_LARGE",
        None,
        "",
        raw,
    )
    assert RefundRequest.objects.filter(ticket__reference="TCK-1001").exists() is False


def test_it_answers_a_call_past_the_replys_limit_too_many_calls_without_running_it(demo, settings):
    settings.AGENT_MAX_TOOL_CALLS_PER_STEP = 2
    ctx = run_context("agent")
    arguments = json.dumps(
        {"order_id": MUG, "amount": 10, "reason": "damaged", "explanation": "Broken."}
    )

    result = execute_tool_call(
        ctx,
        tool_call_id="call_third",
        name="create_refund",
        arguments_raw=arguments,
        position_in_reply=2,
    )

    assert result == {
        "ok": False,
        "error": {
            "code": "TOO_MANY_CALLS",
            "message": "One reply may make at most 2 tool calls; only the first 2 were run. Make "
            "this call again in your next reply if you still need it.",
            "retryable": True,
            "next_actions": ["create_refund"],
        },
    }
    row = ToolCallLog.objects.get()
    assert (row.tool_call_id, row.error_code, row.retryable) == (
        "call_third",
        "TOO_MANY_CALLS",
        True,
    )
    assert RefundRequest.objects.filter(ticket__reference="TCK-1001").exists() is False


def test_it_reads_empty_arguments_as_an_empty_object(demo):
    ctx = run_context("agent")

    listed = call_tool(ctx, "list_customer_orders", "")
    fetched = call_tool(ctx, "get_order", "")

    assert listed["ok"] is True
    assert listed["total"] == 3
    assert fetched["error"]["code"] == "INVALID_ARGUMENTS"
    assert fetched["error"]["field_errors"] == {"order_id": "is required"}


@pytest.mark.parametrize(
    ("amount", "message"),
    [
        ("true", "must be a number, not a boolean"),
        ('"129,00"', 'must be a decimal amount such as "129.00" or a number'),
        ('"129 CNY"', 'must be a decimal amount such as "129.00" or a number'),
        ("129.001", "must have at most 2 decimal places"),
        ("0.001", "must have at most 2 decimal places"),
        ("NaN", "must be a finite number"),
        ("Infinity", "must be a finite number"),
        ("-Infinity", "must be a finite number"),
        ("0", "must be greater than 0"),
        ("-5", "must be greater than 0"),
        ("1e20", "must be at most 9999999999.99"),
        ("[129]", "must be a number, not an array"),
    ],
)
def test_it_refuses_amounts_that_are_not_money(demo, amount, message):
    ctx = run_context("agent")
    raw = (
        '{"order_id": "202610110087", "reason": "damaged", "explanation": "x", '
        f'"amount": {amount}}}'
    )

    result = call_tool(ctx, "create_refund", raw)

    assert result["error"]["code"] == "INVALID_ARGUMENTS"
    assert result["error"]["field_errors"] == {"amount": message}
    assert RefundRequest.objects.filter(ticket__reference="TCK-1001").exists() is False
    assert ToolCallLog.objects.get().error_code == "INVALID_ARGUMENTS"


@pytest.mark.parametrize(
    "name", ["customer_id", "approved", "request_id", "role", "confirmed", "user_id"]
)
def test_it_rejects_identity_and_approval_arguments_by_name(demo, name):
    ctx = run_context("supervisor")
    arguments = {
        "order_id": MUG,
        "amount": 129,
        "reason": "damaged",
        "explanation": "x",
        name: True,
    }

    result = call_tool(ctx, "create_refund", arguments)

    assert result["error"]["code"] == "INVALID_ARGUMENTS"
    assert result["error"]["field_errors"] == {
        name: "not allowed: identity, scope and approval come from the run, never from arguments"
    }
    assert name in result["error"]["message"]
    assert RefundRequest.objects.filter(ticket__reference="TCK-1001").exists() is False


@pytest.mark.parametrize(
    ("order_id", "message"),
    [
        (202610110087, "must be a string, not a number"),
        ("1234567", "must match ^[0-9]{8,20}$"),
        ("202610110087000000000", "must match ^[0-9]{8,20}$"),
        (
            "".join(chr(0xFF10 + int(digit)) for digit in MUG),
            "must match ^[0-9]{8,20}$",
        ),  # full width
        ("202610110087\n", "must match ^[0-9]{8,20}$"),
        ("202610110087 OR 1=1", "must match ^[0-9]{8,20}$"),
    ],
)
def test_it_refuses_order_ids_outside_the_pattern(demo, order_id, message):
    ctx = run_context("agent")

    result = call_tool(ctx, "get_order", {"order_id": order_id})

    assert result["error"]["code"] == "INVALID_ARGUMENTS"
    assert result["error"]["field_errors"] == {"order_id": message}


@pytest.mark.parametrize(
    ("tool", "arguments", "errors"),
    [
        ("list_customer_orders", {"limit": 21}, {"limit": "must be between 1 and 20"}),
        (
            "list_customer_orders",
            {"limit": True},
            {"limit": "must be a whole number, not a boolean"},
        ),
        ("list_customer_orders", {"limit": 2.5}, {"limit": "must be a whole number"}),
        (
            "list_customer_orders",
            {"status": "lost"},
            {"status": "must be one of: paid, shipped, delivered, cancelled"},
        ),
        ("search_policies", {"query": "window", "limit": 6}, {"limit": "must be between 1 and 5"}),
        ("search_policies", {"query": ""}, {"query": "must not be empty"}),
        ("search_policies", {"q": "window"}, {"q": "unknown argument", "query": "is required"}),
    ],
)
def test_it_refuses_arguments_outside_the_schema(demo, tool, arguments, errors):
    ctx = run_context("agent")

    result = call_tool(ctx, tool, arguments)

    assert result["error"]["code"] == "INVALID_ARGUMENTS"
    assert result["error"]["field_errors"] == errors


def test_it_answers_repeated_call_on_the_third_identical_call(demo):
    ctx = run_context("agent")
    runs = []
    tool = extra_tool("count_calls", lambda ctx, args: runs.append(1) or {"n": len(runs)})

    with registered_tool(tool):
        first = call_tool(ctx, "count_calls", "{}")
        second = call_tool(ctx, "count_calls", "{ }")
        third = call_tool(ctx, "count_calls", "")

    assert (first, second) == ({"ok": True, "n": 1}, {"ok": True, "n": 2})
    assert third["error"]["code"] == "REPEATED_CALL"
    assert len(runs) == 2
    assert list(ToolCallLog.objects.values_list("error_code", flat=True)) == [
        "",
        "",
        "REPEATED_CALL",
    ]


def test_it_counts_repeats_per_run_and_per_arguments(demo):
    ctx = run_context("agent")

    results = [call_tool(ctx, "get_order", {"order_id": MUG}) for _ in range(2)]
    other_order = call_tool(ctx, "get_order", {"order_id": "202610150012"})
    other_run = call_tool(run_context("agent"), "get_order", {"order_id": MUG})

    assert [r["ok"] for r in [*results, other_order, other_run]] == [True] * 4


def test_it_returns_the_logged_result_when_a_tool_call_is_executed_again(demo):
    ctx = run_context("agent")
    runs = []
    tool = extra_tool("count_calls", lambda ctx, args: runs.append(1) or {"n": len(runs)})

    with registered_tool(tool):
        first = call_tool(ctx, "count_calls", "{}", call_id="call_same")
        again = call_tool(ctx, "count_calls", "{}", call_id="call_same")

    assert first == again == {"ok": True, "n": 1}
    assert len(runs) == 1
    assert ToolCallLog.objects.count() == 1


def test_it_lets_the_unique_constraint_decide_a_race_on_one_tool_call(demo):
    ctx = run_context("agent")
    both_running = threading.Barrier(2, timeout=10)
    bodies = []

    def body(ctx, args):
        bodies.append(1)
        execution = len(bodies)
        both_running.wait()
        return {"execution": execution}

    results = []

    def execute():
        try:
            results.append(call_tool(ctx, "racy", "{}", call_id="call_race"))
        finally:
            connections.close_all()

    with registered_tool(extra_tool("racy", body)):
        threads = [threading.Thread(target=execute) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=20)

    assert len(bodies) == 2
    assert len(results) == 2
    assert results[0] == results[1]
    assert ToolCallLog.objects.get().result == results[0]


@pytest.mark.parametrize(
    "cancel", [{"cancel_requested": True}, {"status": AgentRun.Status.CANCELLED}]
)
def test_it_executes_nothing_for_a_cancelled_run(demo, cancel):
    ctx = run_context("agent")
    runs = []
    AgentRun.objects.filter(pk=ctx.run.pk).update(**cancel)

    with registered_tool(extra_tool("count_calls", lambda ctx, args: runs.append(1) or {})):
        result = call_tool(ctx, "count_calls", "{}")

    assert result["error"]["code"] == "CANCELLED"
    assert runs == []
    assert ToolCallLog.objects.get().error_code == "CANCELLED"


@pytest.fixture
def release():
    """Set at teardown so a sleeping tool thread ends instead of lingering for 30 s."""
    event = threading.Event()
    yield event
    event.set()


def test_it_stops_waiting_for_a_slow_read(demo, settings, release):
    settings.TOOL_TIMEOUT_S = 1
    ctx = run_context("agent")
    slow = extra_tool("slow_read", lambda ctx, args: release.wait(30) and {})

    with registered_tool(slow):
        started = time.monotonic()
        result = call_tool(ctx, "slow_read", "{}")
        elapsed = time.monotonic() - started

    assert 0.9 <= elapsed < 3
    assert result["error"]["code"] == "TOOL_TIMEOUT"
    assert result["error"]["retryable"] is True
    assert "status" not in result["error"]
    row = ToolCallLog.objects.get()
    assert (row.error_code, row.retryable) == ("TOOL_TIMEOUT", True)
    assert row.elapsed_ms >= 900


def test_it_reports_a_slow_create_refund_as_outcome_unknown(demo, settings, release, monkeypatch):
    settings.TOOL_TIMEOUT_S = 1
    ctx = run_context("agent")
    monkeypatch.setattr(
        "refunds.services.refund_propose", lambda **proposal: release.wait(30) and {}
    )
    arguments = {"order_id": MUG, "amount": 129, "reason": "damaged", "explanation": "Broken"}
    looked_up(ctx, MUG)

    started = time.monotonic()
    result = call_tool(ctx, "create_refund", arguments)

    assert time.monotonic() - started < 3
    assert result["ok"] is False
    assert result["error"]["code"] == "TOOL_TIMEOUT"
    assert result["error"]["status"] == "unknown"
    assert result["error"]["retryable"] is False
    assert result["error"]["next_actions"] == ["get_refund_status"]
    assert ToolCallLog.objects.get(tool_name="create_refund").retryable is False


def test_it_hides_the_details_of_an_unexpected_failure(demo, caplog):
    ctx = run_context("agent")

    def broken(ctx, args):
        raise RuntimeError("SELECT * FROM orders_order; see /srv/app/settings.py SECRET_KEY")

    with caplog.at_level(logging.ERROR), registered_tool(extra_tool("broken", broken)):
        result = call_tool(ctx, "broken", "{}")

    assert result["error"]["code"] == "INTERNAL_ERROR"
    assert result["error"]["retryable"] is False
    for leak in ("SELECT", "/srv", "settings", "SECRET", "Traceback", "RuntimeError"):
        assert leak not in compact(result)
    assert "RuntimeError: SELECT * FROM orders_order" in caplog.text
    assert ToolCallLog.objects.get().error_code == "INTERNAL_ERROR"


def test_it_passes_a_handler_refusal_through_as_data(demo):
    ctx = run_context("agent")

    def refuse(ctx, args):
        raise ToolError(
            ErrorCode.POLICY_DENIED,
            "Outside the refund window.",
            extra={"clauses": ["R-1"], "limit": Decimal("500.00")},
        )

    with registered_tool(extra_tool("refuse", refuse, kind=ToolKind.WRITE)):
        result = call_tool(ctx, "refuse", "{}")

    assert result == {
        "ok": False,
        "error": {
            "code": "POLICY_DENIED",
            "message": "Outside the refund window.",
            "retryable": False,
            "next_actions": ["explain_policy"],
            "clauses": ["R-1"],
            "limit": "500.00",
        },
    }
    assert ToolCallLog.objects.get().error_code == "POLICY_DENIED"


def _sized_result(size: int) -> dict:
    """A handler result whose JSON, once `ok` is added, is exactly `size` characters."""
    overhead = len(compact({"ok": True, "text": ""}))
    return {"text": "x" * (size - overhead)}


def test_it_keeps_a_result_of_exactly_the_cap(demo):
    ctx = run_context("agent")

    with registered_tool(extra_tool("big", lambda ctx, args: _sized_result(MAX_RESULT_CHARS))):
        result = call_tool(ctx, "big", "{}")

    assert "truncated" not in result
    assert len(compact(result)) == MAX_RESULT_CHARS


def test_it_cuts_a_result_over_the_cap(demo):
    ctx = run_context("agent")
    data = {"lines": [{"name": f'line "{n}" ü', "n": n} for n in range(600)]}
    full = compact({"ok": True, **data})

    with registered_tool(extra_tool("big", lambda ctx, args: data)):
        result = call_tool(ctx, "big", "{}")

    assert result["ok"] is True
    assert result["truncated"] is True
    assert result["total"] == len(full)
    assert full.startswith(result["content"])
    assert MAX_RESULT_CHARS - 10 <= len(compact(result)) <= MAX_RESULT_CHARS
    assert ToolCallLog.objects.get().result == result


def test_it_cuts_a_result_one_character_over_the_cap(demo):
    ctx = run_context("agent")

    with registered_tool(extra_tool("big", lambda ctx, args: _sized_result(MAX_RESULT_CHARS + 1))):
        result = call_tool(ctx, "big", "{}")

    assert result["truncated"] is True
    assert result["total"] == MAX_RESULT_CHARS + 1


def test_it_refuses_to_run_inside_a_transaction(demo):
    ctx = run_context("agent")

    with pytest.raises(RuntimeError, match="outside a transaction"), transaction.atomic():
        call_tool(ctx, "get_order", {"order_id": MUG})

    assert ToolCallLog.objects.count() == 0


def test_it_stores_text_postgres_cannot_take_after_cleaning_it(demo):
    ctx = run_context("agent")

    unknown = call_tool(ctx, "get\x00order", "{\x00}", call_id="c" * 150)
    invalid = call_tool(ctx, "get_order", '{"order_id": "\\u0000", "x\\u0000": "\\ud800"}')

    assert unknown["error"]["code"] == "UNKNOWN_TOOL"
    assert invalid["error"]["code"] == "INVALID_ARGUMENTS"
    assert invalid["error"]["field_errors"] == {
        "x\ufffd": "unknown argument",
        "order_id": "must match ^[0-9]{8,20}$",
    }
    first, second = ToolCallLog.objects.all()
    assert first.tool_call_id == "c" * 100
    assert first.tool_name == "get\ufffdorder"
    assert first.arguments_raw == "{\ufffd}"
    assert second.arguments == {"order_id": "\ufffd", "x\ufffd": "?"}
    assert "\x00" not in json.dumps([first.result, second.result], ensure_ascii=False)


@pytest.mark.parametrize(
    ("returned", "stored"),
    [
        # Text PostgreSQL cannot take, in keys and values, at any depth
        (
            {"note": "a\x00b", "k\x00": "\ud800x", "lines": [{"name": "\x00"}]},
            {"note": "a\ufffdb", "k\ufffd": "?x", "lines": [{"name": "\ufffd"}]},
        ),
        # A backslash and "u0000" written out are text, not a NUL
        ({"note": "\\u0000 and \x00"}, {"note": "\\u0000 and \ufffd"}),
        ({"note": "\\u0000"}, {"note": "\\u0000"}),
        # Money stays exact, times become ISO text
        (
            {"amount": Decimal("129.00"), "at": datetime(2026, 12, 1, 9, 30, tzinfo=UTC)},
            {"amount": "129.00", "at": "2026-12-01T09:30:00+00:00"},
        ),
    ],
)
def test_it_stores_a_result_as_its_json_says_cleaned_for_postgres(demo, returned, stored):
    ctx = run_context("agent")

    with registered_tool(extra_tool("texts", lambda ctx, args: returned)):
        result = call_tool(ctx, "texts", "{}")

    assert result == {"ok": True, **stored}
    assert ToolCallLog.objects.get().result == result


def test_it_links_a_new_refund_request_to_the_call_that_proposed_it(demo):
    ctx = run_context("agent")
    proposal = {
        "order_id": MUG,
        "amount": 129.00,
        "reason": "damaged",
        "explanation": "Arrived broken.",
    }

    looked_up(ctx, MUG)
    first = call_tool(ctx, "create_refund", proposal, call_id="call_propose")
    assert first["ok"] is True, first
    call_tool(ctx, "create_refund", {**proposal, "amount": 100}, call_id="call_correct")

    refund = RefundRequest.objects.get(ticket__reference="TCK-1001")
    assert refund.tool_call == ToolCallLog.objects.get(run=ctx.run, tool_call_id="call_propose")
    assert refund.amount == Decimal("100.00")
