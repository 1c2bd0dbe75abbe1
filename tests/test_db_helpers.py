"""config.db: the statements a step writes without the ORM's compiler store what the ORM
stores (defaults, auto_now_add times, JSON, UUID keys, NULLs), change only the row they are
aimed at, and go to PostgreSQL in one round trip."""

from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from agent.models import AgentMessage, AgentRun, RunEvent, ToolCallLog
from config.db import Batch, update_returning
from tests.agent.runs import run_context
from tests.dbcost import DatabaseCost

pytestmark = pytest.mark.django_db


def log_row(ctx, tool_call_id: str) -> ToolCallLog:
    return ToolCallLog(
        run=ctx.run,
        ticket=ctx.ticket,
        actor=ctx.actor,
        actor_role=ctx.role,
        tool_call_id=tool_call_id,
        tool_name="get_order",
        arguments={"order_id": "202610110087", "note": "ünïcode ✓", "nested": [1, None, 2.5]},
        arguments_raw='{"order_id": "202610110087"}',
        ok=True,
        result={"ok": True, "amount_paid": "129.00", "lines": []},
    )


def stored(model, **lookup) -> dict:
    row = model.objects.filter(**lookup).values().get()
    row.pop("id")
    return row


def test_a_batch_insert_stores_what_bulk_create_stores(demo):
    # Given the same log row, message and event, saved once by bulk_create, once by a batch
    ctx = run_context()
    before = timezone.now()
    ToolCallLog.objects.bulk_create([log_row(ctx, "call_orm")])
    AgentMessage.objects.bulk_create(
        [AgentMessage(run=ctx.run, seq=1, role="assistant", tool_calls=None)]
    )
    RunEvent.objects.bulk_create([RunEvent(run=ctx.run, seq=1, type="model.started")])
    batch = Batch()
    batch.insert([log_row(ctx, "call_batch")])
    batch.insert([AgentMessage(run=ctx.run, seq=2, role="assistant", tool_calls=None)])
    batch.insert([RunEvent(run=ctx.run, seq=2, type="model.started")])
    with transaction.atomic():
        batch.run()

    # Then the rows read back alike, but for what told them apart
    orm, batched = (
        stored(ToolCallLog, tool_call_id="call_orm"),
        stored(ToolCallLog, tool_call_id="call_batch"),
    )
    assert before <= batched.pop("created_at") <= timezone.now()
    orm.pop("created_at")
    assert {**orm, "tool_call_id": "call_batch"} == batched
    assert batched["arguments"]["note"] == "ünïcode ✓" and batched["mcp_session_id"] is None
    assert batched["retryable"] is False and batched["elapsed_ms"] == 0  # model defaults
    for model in (AgentMessage, RunEvent):
        first, second = stored(model, seq=1), stored(model, seq=2)
        first.pop("created_at"), second.pop("created_at")
        assert {**first, "seq": 2} == second
    assert stored(RunEvent, seq=2)["data"] == {}  # JSONField default


def test_a_batch_of_several_rows_inserts_them_all_in_order(demo):
    ctx = run_context()
    batch = Batch()
    batch.insert(
        [RunEvent(run=ctx.run, seq=seq, type=f"e{seq}", data={"n": seq}) for seq in (1, 2, 3)]
    )
    with transaction.atomic():
        batch.run()
    assert list(
        RunEvent.objects.filter(run=ctx.run).order_by("seq").values_list("type", "data")
    ) == [
        ("e1", {"n": 1}),
        ("e2", {"n": 2}),
        ("e3", {"n": 3}),
    ]


def test_update_returning_changes_the_matching_row_and_returns_the_field(demo):
    # Given two runs
    ctx, other = run_context(), run_context()
    AgentRun.objects.filter(pk=ctx.run.pk).update(lease_owner="me", last_event_seq=4)
    expires = timezone.now() + timedelta(seconds=30)

    # When one is updated where it is held by "me" and active
    seq = update_returning(
        AgentRun,
        where={"pk": ctx.run.pk, "lease_owner": "me", "cancel_requested": False},
        where_in={"status": ["queued", "running"]},
        values={"lease_expires_at": expires, "untrusted_instructions": True},
        add={"last_event_seq": 3, "tokens_in": 120},
        returning="last_event_seq",
    )

    # Then it returns the new counter, and only that row changed
    assert seq == 7
    run = AgentRun.objects.get(pk=ctx.run.pk)
    assert (run.last_event_seq, run.tokens_in, run.untrusted_instructions) == (7, 120, True)
    assert run.lease_expires_at == expires
    untouched = AgentRun.objects.get(pk=other.run.pk)
    assert (untouched.last_event_seq, untouched.tokens_in, untouched.lease_expires_at) == (
        0,
        0,
        None,
    )


@pytest.mark.parametrize(
    "where",
    [
        {"lease_owner": "someone else"},
        {"cancel_requested": True},
    ],
)
def test_update_returning_returns_none_and_changes_nothing_when_no_row_matches(demo, where):
    ctx = run_context()
    AgentRun.objects.filter(pk=ctx.run.pk).update(lease_owner="me")
    assert (
        update_returning(
            AgentRun,
            where={"pk": ctx.run.pk, "lease_owner": "me", **where},
            add={"version": 1},
            returning="version",
        )
        is None
    )
    assert AgentRun.objects.get(pk=ctx.run.pk).version == ctx.run.version


def test_a_batch_reaches_postgresql_in_one_round_trip(postgres, demo):
    ctx = run_context()
    batch = Batch()
    batch.insert([RunEvent(run=ctx.run, seq=1, type="model.started")])
    batch.insert([AgentMessage(run=ctx.run, seq=1, role="assistant")])
    batch.add("SELECT pg_notify(%s, %s)", ["desk_test", "hello"])
    with transaction.atomic(), DatabaseCost() as cost:
        batch.run()
    assert (cost.round_trips, cost.queries) == (1, 3)
    assert RunEvent.objects.filter(run=ctx.run).count() == 1
    assert AgentMessage.objects.filter(run=ctx.run).count() == 1
