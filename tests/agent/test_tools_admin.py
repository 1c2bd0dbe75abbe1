"""Admin for runs and the tool-call audit trail: visible to reviewers, changeable by nobody."""

import pytest
from django.contrib.auth import get_user_model

from agent.models import AgentMessage, AgentRun, RunEvent, ToolCallLog
from tickets.models import Ticket

pytestmark = pytest.mark.django_db


@pytest.fixture
def logged_calls(demo):
    agent = get_user_model().objects.get(username="agent")
    ticket = Ticket.objects.get(reference="TCK-1001")
    run = AgentRun.objects.create(ticket=ticket, started_by=agent, actor_role="agent")
    AgentMessage.objects.create(run=run, seq=1, role="user", content="Is the mug refundable?")
    RunEvent.objects.create(run=run, seq=1, type="run.started", data={"step": 0})
    ok = ToolCallLog.objects.create(
        run=run,
        ticket=ticket,
        tool_call_id="call_ok",
        tool_name="get_order",
        arguments={"order_id": "202610110087"},
        arguments_raw='{"order_id":"202610110087"}',
        args_digest="a" * 64,
        ok=True,
        result={"ok": True, "order_id": "202610110087"},
        actor=agent,
        actor_role="agent",
        elapsed_ms=12,
    )
    failed = ToolCallLog.objects.create(
        run=run,
        ticket=ticket,
        tool_call_id="call_bad",
        tool_name="get_order",
        arguments=None,
        arguments_raw="{oops",
        ok=False,
        result={
            "ok": False,
            "error": {
                "code": "BAD_JSON",
                "message": "x",
                "retryable": False,
                "next_actions": ["get_order"],
            },
        },
        error_code="BAD_JSON",
        actor=agent,
        actor_role="agent",
    )
    return run, ok, failed


@pytest.fixture
def reviewer_client(client, demo):
    client.login(username="reviewer", password="demo-pass-123")
    return client


def test_it_lists_tool_calls_with_filters_and_search(reviewer_client, logged_calls):
    failures = reviewer_client.get("/admin/agent/toolcalllog/?ok__exact=0")
    by_code = reviewer_client.get("/admin/agent/toolcalllog/?error_code=BAD_JSON")
    by_id = reviewer_client.get("/admin/agent/toolcalllog/?q=call_ok")

    assert failures.status_code == 200
    assert [row.tool_call_id for row in failures.context["cl"].result_list] == ["call_bad"]
    assert [row.tool_call_id for row in by_code.context["cl"].result_list] == ["call_bad"]
    assert [row.tool_call_id for row in by_id.context["cl"].result_list] == ["call_ok"]


def test_it_finds_tool_calls_by_run(reviewer_client, logged_calls):
    run, _, _ = logged_calls

    response = reviewer_client.get(f"/admin/agent/toolcalllog/?q={str(run.pk)[:8]}")

    assert response.context["cl"].result_count == 2


def test_it_pretty_prints_arguments_and_result(reviewer_client, logged_calls):
    _, ok, _ = logged_calls

    response = reviewer_client.get(f"/admin/agent/toolcalllog/{ok.pk}/change/")

    assert response.status_code == 200
    html = response.content.decode()
    assert "<pre>{\n  &quot;order_id&quot;: &quot;202610110087&quot;\n}</pre>" in html
    assert "<pre>{\n  &quot;ok&quot;: true,\n  &quot;order_id&quot;:" in html


def test_it_lets_nobody_add_change_or_delete_a_tool_call(admin_client, logged_calls):
    _, ok, _ = logged_calls

    add = admin_client.get("/admin/agent/toolcalllog/add/")
    change = admin_client.post(
        f"/admin/agent/toolcalllog/{ok.pk}/change/", {"tool_name": "create_refund", "ok": "on"}
    )
    delete = admin_client.post(f"/admin/agent/toolcalllog/{ok.pk}/delete/", {"post": "yes"})

    assert (add.status_code, change.status_code, delete.status_code) == (403, 403, 403)
    ok.refresh_from_db()
    assert ok.tool_name == "get_order"
    assert ToolCallLog.objects.count() == 2


def test_it_shows_a_run_with_its_transcript_calls_and_events(reviewer_client, logged_calls):
    run, _, _ = logged_calls

    listing = reviewer_client.get("/admin/agent/agentrun/")
    detail = reviewer_client.get(f"/admin/agent/agentrun/{run.pk}/change/")

    assert listing.status_code == 200
    assert list(listing.context["cl"].result_list) == [run]
    html = detail.content.decode()
    assert detail.status_code == 200
    assert "Is the mug refundable?" in html
    assert "call_bad" in html
    assert "run.started" in html


def test_it_does_not_let_anyone_delete_a_run_in_admin(admin_client, logged_calls):
    run, _, _ = logged_calls

    response = admin_client.post(f"/admin/agent/agentrun/{run.pk}/delete/", {"post": "yes"})

    assert response.status_code == 403
    assert AgentRun.objects.filter(pk=run.pk).exists()
