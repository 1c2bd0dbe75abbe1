"""The agent's uniqueness constraints: a redelivered step cannot write a message, an event or
a tool call twice (DESIGN §4, §7)."""

import pytest
from django.db import IntegrityError, transaction

from agent.models import AgentMessage, RunEvent, ToolCallLog
from tests.factories import AgentRunFactory

pytestmark = pytest.mark.django_db


def test_it_rejects_two_messages_with_the_same_seq_in_a_run():
    run = AgentRunFactory()
    AgentMessage.objects.create(run=run, seq=1, role="user", content="hi")
    with pytest.raises(IntegrityError), transaction.atomic():
        AgentMessage.objects.create(run=run, seq=1, role="assistant", content="again")
    assert run.messages.count() == 1


def test_it_rejects_two_events_with_the_same_seq_in_a_run():
    run = AgentRunFactory()
    RunEvent.objects.create(run=run, seq=1, type="run.started")
    with pytest.raises(IntegrityError), transaction.atomic():
        RunEvent.objects.create(run=run, seq=1, type="run.completed")
    assert run.events.count() == 1


def test_it_rejects_a_second_log_row_for_one_tool_call():
    run = AgentRunFactory()
    fields = {
        "run": run,
        "ticket": run.ticket,
        "tool_call_id": "call_1",
        "tool_name": "get_order",
        "ok": True,
        "result": {"ok": True},
        "actor": run.started_by,
        "actor_role": "agent",
    }
    ToolCallLog.objects.create(**fields)
    with pytest.raises(IntegrityError), transaction.atomic():
        ToolCallLog.objects.create(**fields)
    assert ToolCallLog.objects.filter(run=run).count() == 1


def test_the_same_seq_and_call_id_may_repeat_across_runs():
    first, second = AgentRunFactory(), AgentRunFactory()
    for run in (first, second):
        AgentMessage.objects.create(run=run, seq=1, role="user", content="hi")
    assert AgentMessage.objects.filter(seq=1).count() == 2
