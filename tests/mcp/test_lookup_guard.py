"""Look before you act holds for MCP sessions too (DESIGN §16): a host's create_refund on an
order is executed only after a successful lookup of that order in the same session."""

import pytest

from agent.errors import ErrorCode
from refunds.models import RefundRequest
from tests.mcp.hosts import http_host, result_json, run_host, token_for

pytestmark = pytest.mark.django_db(transaction=True)

MUG = "202610110087"  # Li Wei's, the order of TCK-1001
MUG_REFUND = {
    "order_id": MUG,
    "amount": "129.00",
    "reason": "damaged",
    "explanation": "The mug arrived broken.",
}


def lis_refunds():
    """Refund requests on Li Wei's orders: the demo has none."""
    return RefundRequest.objects.filter(order__customer__email="li.wei@example.com")


def error_code(result: dict) -> str:
    return result["error"]["code"]


def test_an_mcp_session_must_look_the_order_up_in_that_session(mcp_url, demo):
    async def scenario():
        async with http_host(mcp_url, token=token_for("agent")) as client:
            first = await client.call_tool("create_refund", MUG_REFUND)
            await client.call_tool("get_order", {"order_id": MUG})
            second = await client.call_tool("create_refund", MUG_REFUND)
        async with http_host(mcp_url, token=token_for("agent")) as client:
            # a new session has looked nothing up
            third = await client.call_tool(
                "create_refund",
                {**MUG_REFUND, "amount": "100.00", "explanation": "Another session."},
            )
        return first, second, third

    first, second, third = run_host(scenario)

    assert error_code(result_json(first)) == ErrorCode.LOOKUP_REQUIRED
    assert result_json(second)["status"] == "pending_approval"
    assert error_code(result_json(third)) == ErrorCode.LOOKUP_REQUIRED
    assert lis_refunds().count() == 1
