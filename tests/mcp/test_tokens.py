"""MCP tokens of their own (DESIGN §17): made by an admin or `manage.py mcp_token`, stored as
a digest, bound to a user and a ticket or customer, expiring, revocable; refused at /api/
as REST tokens are refused at /mcp; and an MCP session's calls limited per minute, a repeated
call answered from the log."""

import hashlib
from datetime import timedelta
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone

from agent.executor.calls import execute_tool_call
from agent.mcp.auth import SessionRefused, authenticated_token, session_scope
from agent.mcp.sessions import mcp_context
from agent.mcp_tokens import mcp_token_issue
from agent.models import McpSession, McpToken, ToolCallLog
from orders.models import Order
from tests.agent.runs import open_mcp_session, probe_tool
from tests.mcp.hosts import (
    http_host,
    mcp_error,
    rest_token_for,
    result_json,
    run_host,
    token_for,
)
from tickets.models import Ticket

MUG = "202610110087"  # Li Wei's, TCK-1001
LAMP = "202610250777"  # Maria Garcia's, TCK-1002


def make_token(*arguments: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("mcp_token", *arguments, stdout=out, stderr=err)
    return out.getvalue().strip(), err.getvalue()


# --- Making and keeping tokens ----------------------------------------------------------------


@pytest.mark.django_db
def test_the_command_prints_a_token_once_and_stores_only_its_digest(demo):
    key, said = make_token("--user", "agent", "--ticket", "tck-1001", "--days", "7")

    token = McpToken.objects.get()
    assert key.startswith("mcp_") and len(key) == 47
    assert token.key_digest == hashlib.sha256(key.encode()).hexdigest()
    assert key not in {token.key_digest, token.key_hint, token.label}
    assert token.key_hint == key[:10]
    assert (token.user.username, token.ticket.reference, token.customer) == (
        "agent",
        "TCK-1001",
        None,
    )
    assert abs(token.expires_at - (timezone.now() + timedelta(days=7))) < timedelta(minutes=1)
    assert "for agent on ticket TCK-1001" in said
    assert "shown only now" in said


@pytest.mark.django_db
def test_the_command_binds_a_customer_and_refuses_what_it_cannot_make(demo):
    customer = Ticket.objects.get(reference="TCK-1002").customer

    make_token("--user", "agent", "--customer", str(customer.pk))

    assert McpToken.objects.get().customer == customer
    for arguments in (
        ("--user", "agent"),
        ("--user", "nobody", "--ticket", "TCK-1001"),
        ("--user", "agent", "--ticket", "TCK-9999"),
        ("--user", "agent", "--ticket", "TCK-1001", "--days", "0"),
    ):
        with pytest.raises(CommandError):
            make_token(*arguments)
    assert McpToken.objects.count() == 1


@pytest.mark.django_db
def test_the_command_revokes_a_token_by_its_key(demo):
    key, _ = make_token("--user", "agent", "--ticket", "TCK-1001")

    said, _ = make_token("--revoke", key)

    assert McpToken.objects.get().revoked_at is not None
    assert "revoked" in said
    with pytest.raises(SessionRefused) as refused:
        authenticated_token(key)
    assert (refused.value.status, refused.value.reason) == (401, "token_revoked")


@pytest.mark.django_db
def test_an_admin_makes_a_token_seen_once_and_revokes_it(demo):
    admin = Client()
    admin.force_login(get_user_model().objects.get(username="admin"))
    agent = get_user_model().objects.get(username="agent")
    ticket = Ticket.objects.get(reference="TCK-1001")

    made = admin.post(
        "/admin/agent/mcptoken/add/",
        {"user": agent.pk, "ticket": ticket.pk, "customer": "", "days": 3, "label": "IDE"},
        follow=True,
    )

    token = McpToken.objects.get()
    (message,) = [str(m) for m in made.context["messages"] if "MCP token made" in str(m)]
    key = message.rsplit(" ", 1)[-1]
    assert authenticated_token(key) == token
    assert token.created_by.username == "admin"
    assert token.key_digest == hashlib.sha256(key.encode()).hexdigest()

    admin.post(
        "/admin/agent/mcptoken/",
        {"action": "revoke", "_selected_action": [token.pk]},
    )

    token.refresh_from_db()
    assert token.revoked_at is not None


@pytest.mark.django_db
def test_the_admin_refuses_a_token_bound_to_both_or_neither(demo):
    admin = Client()
    admin.force_login(get_user_model().objects.get(username="admin"))
    agent = get_user_model().objects.get(username="agent")
    ticket = Ticket.objects.get(reference="TCK-1001")

    for scope in (
        {"ticket": "", "customer": ""},
        {"ticket": ticket.pk, "customer": ticket.customer_id},
    ):
        response = admin.post("/admin/agent/mcptoken/add/", {"user": agent.pk, "days": 3, **scope})
        assert response.status_code == 200
        assert "exactly one ticket or one customer" in response.content.decode()
    assert not McpToken.objects.exists()


# --- Each door takes its own tokens -------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("keyword", ["Token", "Bearer"])
def test_an_mcp_token_is_refused_at_the_api_with_401(demo, keyword):
    key = token_for("agent")

    response = Client().get("/api/tickets/", HTTP_AUTHORIZATION=f"{keyword} {key}")

    assert response.status_code == 401
    assert response.json()["message"].startswith("This is an MCP token: it works only at /mcp")


@pytest.mark.django_db
def test_the_api_still_takes_its_own_token(demo):
    response = Client().get("/api/tickets/", HTTP_AUTHORIZATION=f"Token {rest_token_for('agent')}")

    assert response.status_code == 200


def test_a_rest_token_is_refused_at_mcp_with_401(mcp_url, demo):
    async def open_with(token: str):
        try:
            async with http_host(mcp_url, token=token):
                pass
        except BaseException as raised:
            return mcp_error(raised)
        return None

    error = run_host(open_with, rest_token_for("agent"))

    assert error is not None
    assert error.message.startswith("This is a desk REST API token; /mcp takes only MCP tokens")
    assert error.data["reason"] == "rest_token_refused"
    assert error.data["status"] == 401
    assert not McpSession.objects.exists()


# --- Scope ---------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_ticket_token_opens_its_ticket_and_no_other(demo):
    agent = get_user_model().objects.get(username="agent")
    token = mcp_token_issue(user=agent, ticket=Ticket.objects.get(reference="TCK-1001"), days=1)

    own = session_scope(token=token.token, ticket_reference=None, source="the test")
    with pytest.raises(SessionRefused) as same_customer:
        session_scope(token=token.token, ticket_reference="TCK-1004", source="the test")
    with pytest.raises(SessionRefused) as other_customer:
        session_scope(token=token.token, ticket_reference="TCK-1002", source="the test")

    assert own.ticket.reference == "TCK-1001"
    assert (same_customer.value.status, same_customer.value.reason) == (403, "out_of_scope")
    assert (other_customer.value.status, other_customer.value.reason) == (403, "out_of_scope")
    assert "reaches ticket TCK-1001, not TCK-1002" in other_customer.value.message


@pytest.mark.django_db
def test_a_customer_token_opens_that_customers_tickets_only(demo):
    agent = get_user_model().objects.get(username="agent")
    li_wei = Ticket.objects.get(reference="TCK-1001").customer
    token = mcp_token_issue(user=agent, customer=li_wei, days=1).token

    first = session_scope(token=token, ticket_reference="TCK-1001", source="the test")
    second = session_scope(token=token, ticket_reference="TCK-1004", source="the test")
    with pytest.raises(SessionRefused) as other_customer:
        session_scope(token=token, ticket_reference="TCK-1002", source="the test")
    with pytest.raises(SessionRefused) as none_named:
        session_scope(token=token, ticket_reference=None, source="the test")

    assert (first.ticket.reference, second.ticket.reference) == ("TCK-1001", "TCK-1004")
    assert (other_customer.value.status, other_customer.value.reason) == (403, "out_of_scope")
    assert none_named.value.reason == "ticket_missing"


def test_over_http_a_session_outside_the_tokens_scope_is_refused_and_tools_see_only_its_scope(
    mcp_url, demo
):
    # Given a token for TCK-1001 only
    agent = get_user_model().objects.get(username="agent")
    key = mcp_token_issue(user=agent, ticket=Ticket.objects.get(reference="TCK-1001"), days=1).key

    async def refused():
        try:
            async with http_host(mcp_url, token=key, ticket="TCK-1002"):
                pass
        except BaseException as raised:
            return mcp_error(raised)
        return None

    async def lookups():
        async with http_host(mcp_url, token=key, ticket=None) as client:
            own = await client.call_tool("get_order", {"order_id": MUG})
            other = await client.call_tool("get_order", {"order_id": LAMP})
            return result_json(own), result_json(other)

    # When a host names another customer's ticket, and when it works on its own
    error = run_host(refused)
    own, other = run_host(lookups)

    # Then the first is refused, and the tools reach only the token's customer
    assert error is not None and error.data["reason"] == "out_of_scope"
    assert error.data["status"] == 403
    assert own["ok"] is True and own["order_id"] == MUG
    assert other["ok"] is False and other["error"]["code"] == "NOT_FOUND"
    assert McpSession.objects.get().ticket.reference == "TCK-1001"


@pytest.mark.django_db
def test_an_expired_or_revoked_token_or_an_inactive_user_is_refused(demo):
    agent = get_user_model().objects.get(username="agent")
    ticket = Ticket.objects.get(reference="TCK-1001")
    expired = mcp_token_issue(user=agent, ticket=ticket, days=1)
    McpToken.objects.filter(pk=expired.token.pk).update(expires_at=timezone.now())
    revoked = mcp_token_issue(user=agent, ticket=ticket, days=1)
    McpToken.objects.filter(pk=revoked.token.pk).update(revoked_at=timezone.now())

    reasons = []
    for key in (expired.key, revoked.key, "mcp_" + "x" * 43):
        with pytest.raises(SessionRefused) as refused:
            authenticated_token(key)
        reasons.append((refused.value.status, refused.value.reason))

    assert reasons == [(401, "token_expired"), (401, "token_revoked"), (401, "token_invalid")]


# --- Calls per session --------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_session_past_its_calls_per_minute_is_refused_and_nothing_runs(demo, settings):
    # Given a limit of 2 calls a minute, and a session that made 2
    settings.MCP_CALLS_PER_MINUTE = 2
    ctx = mcp_context(open_mcp_session().pk)
    with probe_tool("probe") as calls:
        execute_tool_call(ctx, tool_call_id="1", name="probe", arguments_raw="{}")
        execute_tool_call(
            ctx, tool_call_id="2", name="get_order", arguments_raw=f'{{"order_id": "{MUG}"}}'
        )

        # When it makes a third
        refused = execute_tool_call(
            ctx,
            tool_call_id="3",
            name="get_refund_status",
            arguments_raw=f'{{"order_id": "{MUG}"}}',
        )
        # and when a minute has passed
        ToolCallLog.objects.update(created_at=timezone.now() - timedelta(seconds=61))
        later = execute_tool_call(ctx, tool_call_id="4", name="probe", arguments_raw=' {"x": 1} ')

    # Then the third is refused, logged, and ran nothing; a minute later calls run again
    assert refused["ok"] is False
    assert refused["error"]["code"] == "RATE_LIMITED"
    assert refused["error"]["retryable"] is True
    assert 1 <= refused["error"]["retry_after_s"] <= 60
    assert refused["error"]["next_actions"] == ["get_refund_status"]
    row = ToolCallLog.objects.get(tool_call_id="3")
    assert (row.ok, row.error_code, row.mcp_session_id) == (
        False,
        "RATE_LIMITED",
        ctx.mcp_session.pk,
    )
    assert later["ok"] is False and later["error"]["code"] == "INVALID_ARGUMENTS"
    assert len(calls) == 1


@pytest.mark.django_db(transaction=True)
def test_a_repeated_identical_call_is_answered_from_the_log_without_running_again(demo):
    # Given a session that looked up the mug
    ctx = mcp_context(open_mcp_session().pk)
    with probe_tool("probe") as calls:
        first = execute_tool_call(ctx, tool_call_id="1", name="probe", arguments_raw="{}")
        # When the host makes the same call again under new ids, spaced otherwise
        again = execute_tool_call(ctx, tool_call_id="2", name="probe", arguments_raw=" { } ")
        third = execute_tool_call(ctx, tool_call_id="3", name="probe", arguments_raw="{}")

    # Then it ran once, and each repeat got its answer from the first call's log row
    assert len(calls) == 1
    assert first == again == third == {"ok": True, "probed": 1}
    rows = list(ToolCallLog.objects.order_by("id"))
    assert [row.tool_call_id for row in rows] == ["1", "2", "3"]
    assert [row.answered_from_id for row in rows] == [None, rows[0].pk, rows[0].pk]


@pytest.mark.django_db(transaction=True)
def test_a_repeat_answers_what_the_log_says_and_an_old_one_runs_again(demo):
    ctx = mcp_context(open_mcp_session().pk)
    lookup = f'{{"order_id": "{MUG}"}}'
    first = execute_tool_call(ctx, tool_call_id="1", name="get_order", arguments_raw=lookup)
    Order.objects.filter(order_id=MUG).update(status="cancelled")

    # A repeat within minutes is the logged answer, not the order as it is now
    again = execute_tool_call(ctx, tool_call_id="2", name="get_order", arguments_raw=lookup)
    # a repeat of a call made longer ago runs again
    ToolCallLog.objects.update(created_at=timezone.now() - timedelta(minutes=6))
    later = execute_tool_call(ctx, tool_call_id="3", name="get_order", arguments_raw=lookup)

    assert again == first and first["status"] == "delivered"
    assert later["status"] == "cancelled"
    assert ToolCallLog.objects.get(tool_call_id="3").answered_from_id is None
