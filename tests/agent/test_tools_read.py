"""The read-only tools, scoped to the run's customer (DESIGN §1 invariants 2, 9; §6).

Handlers are called directly here; tests/agent/test_executor.py covers them behind the
executor.
"""

from datetime import UTC, timedelta

import pytest
from django.utils import timezone

from agent.context import RunContext
from agent.errors import ToolError
from agent.tools import reads, registry, validation
from desk.demo import ORDER_NOTE_INJECTION
from orders.models import Order
from tests.agent.runs import run_context
from tests.factories import OrderFactory, OrderLineFactory


def iso(moment) -> str | None:
    return moment.astimezone(UTC).isoformat(timespec="seconds") if moment else None


def list_orders(ctx: RunContext, **arguments) -> dict:
    clean, errors = validation.validate_arguments(
        registry.get_tool("list_customer_orders"), arguments
    )
    assert errors == {}
    return reads.list_customer_orders(ctx, clean)


def test_it_describes_an_order_of_the_ticket_customer(demo):
    ctx = run_context(reference="TCK-1001")
    order = Order.objects.get(order_id="202610110087")

    result = reads.get_order(ctx, {"order_id": "202610110087"})

    assert result == {
        "order_id": "202610110087",
        "status": "delivered",
        "status_label": "Delivered",
        "currency": "CNY",
        "amount_paid": "129.00",
        "refunded": "0.00",
        "refundable_balance": "129.00",
        "placed_at": iso(order.placed_at),
        "shipped_at": iso(order.shipped_at),
        "delivered_at": iso(order.delivered_at),
        "days_since_delivery": 5,
        "lines": [
            {
                "sku": "MUG-CER-01",
                "name": "Ceramic mug",
                "category": "home",
                "quantity": 1,
                "unit_price": "129.00",
            }
        ],
        "note": None,
    }
    assert result["delivered_at"].endswith("+00:00")


def test_it_reads_the_order_in_one_query(demo, django_assert_num_queries):
    ctx = run_context(reference="TCK-1002")

    with django_assert_num_queries(1):
        result = reads.get_order(ctx, {"order_id": "202610180099"})

    assert result["lines"] and result["refunded"] == "200.00"


def test_it_counts_refunds_already_made_against_the_balance(demo):
    ctx = run_context(reference="TCK-1002")

    result = reads.get_order(ctx, {"order_id": "202610180099"})

    assert (result["amount_paid"], result["refunded"], result["refundable_balance"]) == (
        "599.00",
        "200.00",
        "399.00",
    )


def test_it_marks_the_order_note_as_untrusted_customer_text(demo):
    ctx = run_context(reference="TCK-1003")

    result = reads.get_order(ctx, {"order_id": "202610220314"})

    assert result["note"] == {"untrusted_customer_text": ORDER_NOTE_INJECTION}


@pytest.mark.parametrize("handler", [reads.get_order, reads.get_refund_status])
def test_it_does_not_find_orders_of_other_customers(demo, handler):
    ctx = run_context(reference="TCK-1001")

    with pytest.raises(ToolError) as foreign:
        handler(ctx, {"order_id": "202610250777"})
    with pytest.raises(ToolError) as missing:
        handler(ctx, {"order_id": "209999999999"})

    assert foreign.value.as_result() == missing.value.as_result()
    assert foreign.value.code == "NOT_FOUND"


def test_it_lists_the_customers_orders_newest_first(demo):
    ctx = run_context(reference="TCK-1001")

    result = list_orders(ctx)

    assert [order["order_id"] for order in result["orders"]] == [
        "202610110087",
        "202610150012",
        "202609020031",
    ]
    assert result["total"] == 3
    assert result["next_cursor"] is None
    assert result["orders"][0] == {
        "order_id": "202610110087",
        "status": "delivered",
        "currency": "CNY",
        "amount_paid": "129.00",
        "refundable_balance": "129.00",
        "placed_at": iso(Order.objects.get(order_id="202610110087").placed_at),
        "delivered_at": iso(Order.objects.get(order_id="202610110087").delivered_at),
        "items": ["Ceramic mug"],
    }


def test_it_pages_through_orders_with_an_opaque_cursor(demo):
    ctx = run_context(reference="TCK-1001")
    same_moment = timezone.now() - timedelta(days=1)
    # Two orders placed at the same instant: the id keeps their order stable across pages.
    for _ in range(2):
        OrderLineFactory(order=OrderFactory(customer=ctx.customer, placed_at=same_moment))

    first = list_orders(ctx, limit=2)
    second = list_orders(ctx, limit=2, cursor=first["next_cursor"])
    third = list_orders(ctx, limit=2, cursor=second["next_cursor"])

    seen = [o["order_id"] for page in (first, second, third) for o in page["orders"]]
    expected = list(
        Order.objects.filter(customer=ctx.customer)
        .order_by("-placed_at", "-id")
        .values_list("order_id", flat=True)
    )
    assert seen == expected
    assert len(seen) == 5
    assert (first["total"], second["total"], third["total"]) == (5, 5, 5)
    assert third["next_cursor"] is None
    assert first["next_cursor"] != second["next_cursor"]


def test_it_filters_orders_by_status(demo):
    ctx = run_context(reference="TCK-1002")

    result = list_orders(ctx, status="shipped")

    assert [order["order_id"] for order in result["orders"]] == ["202610250777"]
    assert result["total"] == 1


@pytest.mark.parametrize("cursor", ["not-a-cursor", "MjAyNi0wMS0wMXwx", "=="])
def test_it_refuses_a_cursor_it_did_not_give_out(demo, cursor):
    ctx = run_context(reference="TCK-1001")

    with pytest.raises(ToolError) as refusal:
        list_orders(ctx, cursor=cursor)

    assert refusal.value.code == "INVALID_ARGUMENTS"
    assert list(refusal.value.extra["field_errors"]) == ["cursor"]


def test_it_searches_published_policy_clauses(demo):
    ctx = run_context(reference="TCK-1001")

    result = reads.search_policies(ctx, {"query": "R-2", "limit": 3})

    assert result["query"] == "R-2"
    assert 1 <= len(result["clauses"]) <= 3
    first = result["clauses"][0]
    assert first["ref"] == "R-2"
    assert (first["policy"], first["version"]) == ("refunds", 2)
    assert set(first) == {
        "ref",
        "title",
        "text",
        "policy",
        "policy_title",
        "version",
        "effective_from",
    }


def test_it_limits_policy_search_results(demo):
    ctx = run_context(reference="TCK-1001")

    result = reads.search_policies(ctx, {"query": "refund", "limit": 1})

    assert len(result["clauses"]) == 1


def test_it_shows_the_refund_requests_of_an_order(demo):
    ctx = run_context(reference="TCK-1002")

    result = reads.get_refund_status(ctx, {"order_id": "202610180099"})

    assert result["order_id"] == "202610180099"
    assert (result["refunded"], result["refundable_balance"]) == ("200.00", "399.00")
    [refund] = result["refund_requests"]
    assert refund["request_id"].startswith("rf_")
    assert refund["status"] == "succeeded"
    assert refund["amount"] == "200.00"
    assert refund["reason"] == "damaged"
    assert refund["provider_refund_id"] == "re_history_202610180099"
    assert refund["latest_confirmation"]["version"] == 1
    assert refund["latest_confirmation"]["status"] == "approved"


def test_it_shows_no_refund_requests_for_an_order_without_any(demo):
    ctx = run_context(reference="TCK-1001")

    result = reads.get_refund_status(ctx, {"order_id": "202610110087"})

    assert result["refund_requests"] == []
    assert result["refundable_balance"] == "129.00"
