"""MCP_CALLS_PER_MINUTE is one budget per desk user: every session of a token, and every token
of a user, draw on it (issue 43, finding 5). A host cannot multiply it by opening sessions,
nor a user by asking for more tokens."""

import pytest
from django.contrib.auth import get_user_model

from agent.executor.calls import execute_tool_call
from agent.mcp.auth import session_scope
from agent.mcp.sessions import mcp_context, mcp_session_start
from agent.mcp_tokens import mcp_token_issue
from agent.models import McpSession, McpToken, ToolCallLog
from tests.agent.runs import open_mcp_session, probe_tool
from tickets.models import Ticket


def session_of(token: McpToken, n: int) -> McpSession:
    scope = session_scope(token=token, ticket_reference="TCK-1001", source="the test")
    return mcp_session_start(scope=scope, transport="http", transport_session_id=f"sid-{n}")


def token_of(username: str) -> McpToken:
    user = get_user_model().objects.get(username=username)
    ticket = Ticket.objects.get(reference="TCK-1001")
    return mcp_token_issue(user=user, ticket=ticket, days=1).token


def probe(session: McpSession, call_id: str, tool: str = "probe") -> dict:
    return execute_tool_call(
        mcp_context(session.pk), tool_call_id=call_id, name=tool, arguments_raw="{}"
    )


@pytest.mark.django_db(transaction=True)
def test_it_counts_every_session_of_a_token_against_one_budget(demo, settings):
    # Given a limit of 3 calls a minute and one token with three sessions
    settings.MCP_CALLS_PER_MINUTE = 3
    token = token_of("agent")
    sessions = [session_of(token, n) for n in range(3)]

    # When each session makes two calls
    with probe_tool("probe") as ran, probe_tool("probe2") as ran2:
        answers = [
            probe(session, f"{n}-{tool}", tool)
            for n, session in enumerate(sessions)
            for tool in ("probe", "probe2")
        ]

    # Then three ran, and the other three were refused RATE_LIMITED without running
    codes = [answer.get("error", {}).get("code") for answer in answers]
    assert codes == [None, None, None, "RATE_LIMITED", "RATE_LIMITED", "RATE_LIMITED"]
    assert (len(ran), len(ran2)) == (2, 1)
    assert ToolCallLog.objects.filter(ok=True).count() == 3


@pytest.mark.django_db(transaction=True)
def test_it_counts_two_tokens_of_one_user_against_one_budget_not_another_users(demo, settings):
    # Given a limit of 2 and a user with two tokens, one session each
    settings.MCP_CALLS_PER_MINUTE = 2
    first, second = session_of(token_of("agent"), 1), session_of(token_of("agent"), 2)

    with probe_tool("probe") as ran, probe_tool("probe2") as ran2:
        # When each token's session makes a call, then the second token's makes another
        answers = [probe(first, "a"), probe(second, "b"), probe(second, "c", "probe2")]
        # and another user's session calls after them
        other = probe(open_mcp_session("supervisor"), "d")

    # Then the user's third call is refused, and the other user's runs
    assert [answer["ok"] for answer in answers] == [True, True, False]
    assert answers[2]["error"]["code"] == "RATE_LIMITED"
    assert "desk user" in answers[2]["error"]["message"]
    assert other["ok"] is True
    assert (len(ran), len(ran2)) == (3, 0)
