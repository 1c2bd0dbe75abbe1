"""What an MCP session leaves behind: its McpSession row, one ToolCallLog row per call tied
to it and to no run, and read-only admin pages for both (DESIGN §1 invariant 3, §12)."""

import importlib

import pytest
from django.apps import apps as django_apps
from django.db import IntegrityError, transaction

from agent.context import McpContext
from agent.executor.calls import execute_tool_call
from agent.executor.log import CallIdReused
from agent.mcp.sessions import mcp_context
from agent.models import McpSession, ToolCallLog
from tests.agent.runs import open_mcp_session, probe_tool
from tests.factories import AgentRunFactory

pytestmark = pytest.mark.django_db

MUG = "202610110087"


def open_session(username: str = "agent", reference: str = "TCK-1001") -> McpSession:
    return open_mcp_session(username, reference, transport_session_id=f"sid-{username}")


def a_log_row(**owner) -> ToolCallLog:
    session = McpSession.objects.first()
    return ToolCallLog.objects.create(
        **owner,
        ticket=session.ticket,
        tool_call_id="7",
        tool_name="get_order",
        ok=True,
        result={"ok": True},
        actor=session.user,
        actor_role="agent",
    )


@pytest.fixture
def reviewers_see_sessions(demo):
    """The grant agent's migration gives reviewers, which a flush of an earlier transactional
    test may have removed."""
    migration = importlib.import_module("agent.migrations.0004_mcp_session")
    migration.let_reviewers_view_sessions(django_apps, None)


# --- The log rows ----------------------------------------------------------------------------


def test_a_call_belongs_to_exactly_one_run_or_session(demo):
    session = open_session()
    run = AgentRunFactory(ticket=session.ticket)

    for owner in ({}, {"run": run, "mcp_session": session}):
        with pytest.raises(IntegrityError), transaction.atomic():
            a_log_row(**owner)
    assert ToolCallLog.objects.count() == 0


def test_a_call_id_is_unique_within_a_session_only(demo):
    first, second = open_session("agent"), open_session("agent2")
    a_log_row(mcp_session=first)

    with pytest.raises(IntegrityError), transaction.atomic():
        a_log_row(mcp_session=first)
    a_log_row(mcp_session=second)
    assert ToolCallLog.objects.count() == 2


def test_a_session_is_scoped_like_a_run_from_what_it_recorded(demo):
    session = open_session("agent", "TCK-1001")
    ctx = mcp_context(session.pk)

    assert isinstance(ctx, McpContext)
    assert (ctx.actor.username, ctx.role, ctx.ticket.reference, ctx.run) == (
        "agent",
        "agent",
        "TCK-1001",
        None,
    )
    assert ctx.ticket_order_id == MUG


# The executor runs the tool on a thread of its own: the data must be committed.
@pytest.mark.django_db(transaction=True)
def test_it_answers_the_same_call_under_its_id_again_from_the_log_without_running_it(demo):
    ctx = mcp_context(open_session().pk)

    with probe_tool("probe") as calls:
        first = execute_tool_call(ctx, tool_call_id="3", name="probe", arguments_raw="{}")
        # The same call: its arguments spaced otherwise
        again = execute_tool_call(ctx, tool_call_id="3", name="probe", arguments_raw=" { } ")

    assert again == first == {"ok": True, "probed": 1}
    assert len(calls) == 1
    assert list(ToolCallLog.objects.values_list("tool_call_id", "tool_name")) == [("3", "probe")]


@pytest.mark.django_db(transaction=True)
def test_it_refuses_another_call_under_a_used_id_without_running_it(demo):
    # Given call 3 of the session: get_order of the mug
    ctx = mcp_context(open_session().pk)
    first = execute_tool_call(
        ctx, tool_call_id="3", name="get_order", arguments_raw=f'{{"order_id": "{MUG}"}}'
    )

    # When id 3 comes again for another tool, and for the same tool with other arguments
    with probe_tool("list_everything") as calls, pytest.raises(CallIdReused) as another_tool:
        execute_tool_call(ctx, tool_call_id="3", name="list_everything", arguments_raw="{}")
    with pytest.raises(CallIdReused) as other_arguments:
        execute_tool_call(
            ctx, tool_call_id="3", name="get_order", arguments_raw='{"order_id": "202610200456"}'
        )

    # Then both are refused, nothing ran, and the log holds the first call only
    assert first["ok"] is True
    assert (
        str(another_tool.value)
        == str(other_arguments.value)
        == (
            "The call id 3 was already used for another call; nothing was run. Send each call "
            "with an id of its own."
        )
    )
    assert calls == []
    assert list(ToolCallLog.objects.values_list("tool_call_id", "tool_name", "arguments")) == [
        ("3", "get_order", {"order_id": MUG})
    ]


# --- Admin -----------------------------------------------------------------------------------


# The executor runs the tool on a thread of its own: the data must be committed.
@pytest.mark.django_db(transaction=True)
def test_reviewers_inspect_sessions_and_their_calls_in_admin(client, reviewers_see_sessions):
    session = open_session()
    execute_tool_call(
        mcp_context(session.pk),
        tool_call_id="1",
        name="get_order",
        arguments_raw='{"order_id": "202610110087"}',
    )
    client.login(username="reviewer", password="demo-pass-123")

    listing = client.get("/admin/agent/mcpsession/")
    detail = client.get(f"/admin/agent/mcpsession/{session.pk}/change/")
    calls = client.get("/admin/agent/toolcalllog/", {"source": "mcp"})

    assert listing.status_code == detail.status_code == calls.status_code == 200
    assert list(listing.context["cl"].result_list) == [session]
    assert (
        '<a class="desk-nowrap" href="/tickets/TCK-1001/">TCK-1001</a>' in detail.content.decode()
    )
    assert "get_order" in detail.content.decode()
    assert [call.mcp_session for call in calls.context["cl"].result_list] == [session]
    # The call names the session it came from where a run's call names its run.
    assert f'title="{session.pk}">MCP {str(session.pk)[:8]}…</a>' in calls.content.decode()
    runs_only = client.get("/admin/agent/toolcalllog/", {"source": "run"})
    assert list(runs_only.context["cl"].result_list) == []


def test_nobody_adds_changes_or_deletes_a_session_in_admin(admin_client, demo):
    session = open_session()

    add = admin_client.get("/admin/agent/mcpsession/add/")
    change = admin_client.post(
        f"/admin/agent/mcpsession/{session.pk}/change/", {"role": "supervisor"}
    )
    delete = admin_client.post(f"/admin/agent/mcpsession/{session.pk}/delete/", {"post": "yes"})

    assert (add.status_code, change.status_code, delete.status_code) == (403, 403, 403)
    session.refresh_from_db()
    assert session.role == "agent"
