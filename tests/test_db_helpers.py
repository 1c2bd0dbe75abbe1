"""config.db: the statements a step writes without the ORM's compiler store what the ORM
stores (defaults, auto_now_add times, JSON, UUID keys, NULLs), change only the row they are
aimed at, and go to PostgreSQL in one round trip; what it reads comes back as the ORM reads
it, related rows included."""

import json
from datetime import timedelta

import pytest
from django.db import IntegrityError, connection, transaction
from django.utils import timezone
from psycopg.pq import TransactionStatus

from agent.models import AgentMessage, AgentRun, RunEvent, ToolCallLog
from agent.transitions import run_event_append, write_with_events
from config.db import (
    Update,
    column,
    select,
    update_returning,
    update_select,
    update_then_insert,
)
from tests.agent.runs import run_context
from tests.api.test_debug_setting import clean_environment, printed_by
from tests.dbcost import DatabaseCost
from tickets.models import TicketMessage
from tickets.selectors import ticket_thread, ticket_thread_from_json, ticket_thread_sql

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


def test_a_step_write_stores_what_bulk_create_stores(demo):
    # Given the same log row, message and event, saved by bulk_create and by a step's write
    # (on PostgreSQL config.db.update_then_insert's INSERT from a VALUES list)
    ctx = run_context()
    ToolCallLog.objects.bulk_create([log_row(ctx, "call_orm")])
    AgentMessage.objects.bulk_create(
        [AgentMessage(run=ctx.run, seq=1, role="assistant", tool_calls=None)]
    )
    RunEvent.objects.bulk_create([RunEvent(run=ctx.run, seq=1, type="model.started")])
    AgentRun.objects.filter(pk=ctx.run.pk).update(last_event_seq=1)
    before = timezone.now()
    assert write_with_events(
        Update(AgentRun, where={"pk": ctx.run.pk}),
        [RunEvent(run=ctx.run, type="model.started")],
        rows=[
            [log_row(ctx, "call_batch")],
            [AgentMessage(run=ctx.run, seq=2, role="assistant", tool_calls=None)],
        ],
    )

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


def test_a_step_write_of_several_rows_inserts_them_all_in_order(demo):
    ctx = run_context()
    messages = [
        AgentMessage(run=ctx.run, seq=seq, role="tool", content=f"m{seq}") for seq in (1, 2, 3)
    ]
    update = Update(AgentRun, where={"pk": ctx.run.pk}, add={"version": 1})
    assert write_with_events(update, [], rows=[messages])
    assert list(
        AgentMessage.objects.filter(run=ctx.run).order_by("id").values_list("seq", "content")
    ) == [(1, "m1"), (2, "m2"), (3, "m3")]


def test_update_returning_changes_the_matching_row_and_returns_the_field(demo):
    # Given two runs
    ctx, other = run_context(), run_context()
    AgentRun.objects.filter(pk=ctx.run.pk).update(lease_owner="me", last_event_seq=4)
    expires = timezone.now() + timedelta(seconds=30)

    # When one is updated where it is held by "me" and active
    seq = update_returning(
        Update(
            AgentRun,
            where={"pk": ctx.run.pk, "lease_owner": "me", "cancel_requested": False},
            where_in={"status": ["queued", "running"]},
            values={"lease_expires_at": expires, "untrusted_instructions": True},
            add={"last_event_seq": 3, "tokens_in": 120},
            returning="last_event_seq",
        )
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
            Update(
                AgentRun,
                where={"pk": ctx.run.pk, "lease_owner": "me", **where},
                add={"version": 1},
                returning="version",
            )
        )
        is None
    )
    assert AgentRun.objects.get(pk=ctx.run.pk).version == ctx.run.version


def fields_of(instance) -> dict:
    return {field.attname: getattr(instance, field.attname) for field in instance._meta.fields}


def test_select_reads_a_row_and_its_related_rows_as_select_related_does(demo):
    # Given a run with JSON, decimals-free counters, datetimes, a UUID key and a ticket with
    # an order (a nullable key), and its customer (another nullable key)
    ctx = run_context()
    AgentRun.objects.filter(pk=ctx.run.pk).update(
        lease_owner="me",
        answer_check={"claims": [{"amount": "12.50"}]},
        untrusted_instructions=True,
    )
    related = ("ticket__order", "started_by", "customer")

    (run,) = select(
        AgentRun,
        where={"pk": ctx.run.pk, "lease_owner": "me"},
        where_in={"status": ["queued", "running"]},
        related=related,
    )

    orm = AgentRun.objects.select_related(*related).get(pk=ctx.run.pk)
    assert fields_of(run) == fields_of(orm)
    assert run.answer_check == {"claims": [{"amount": "12.50"}]}
    assert fields_of(run.ticket) == fields_of(orm.ticket)
    assert fields_of(run.started_by) == fields_of(orm.started_by)
    assert run.ticket.order is not None and fields_of(run.ticket.order) == fields_of(
        orm.ticket.order
    )
    # The related rows came with the run: reading them asks nothing more.
    with DatabaseCost() as cost:
        _ = (run.ticket.order.amount_paid, run.started_by.username, run.customer)
    assert cost.queries == 0
    assert not run._state.adding and run._state.db == "default"


def test_select_sets_each_annotation_on_its_instance(demo):
    ctx = run_context()
    AgentRun.objects.filter(pk=ctx.run.pk).update(step_count=4)

    (run,) = select(
        AgentRun,
        where={"pk": ctx.run.pk},
        related=("ticket",),
        annotate={"twice_the_steps": 't0."step_count" * 2', "answer": "'forty-two'"},
    )

    assert (run.step_count, run.twice_the_steps, run.answer) == (4, 8, "forty-two")
    assert fields_of(run.ticket) == fields_of(ctx.ticket)


def test_the_thread_selected_with_a_run_is_the_thread_read_on_its_own(demo):
    # Given a ticket whose messages include two written at the same moment, text that JSON
    # escapes, and a message in another ticket
    ctx = run_context()
    ticket = ctx.ticket
    moment = timezone.now()
    for body in ("Zweite Nachricht: „kaputt“", 'Quote " and backslash \\ and\nnewline'):
        TicketMessage.objects.create(ticket=ticket, author_kind="customer", body=body)
    TicketMessage.objects.filter(ticket=ticket).update(created_at=moment)
    TicketMessage.objects.create(ticket=ticket, author_kind="agent", body="Looking into it.")
    other = TicketMessage.objects.exclude(ticket=ticket).first()
    assert other is not None

    thread_sql = ticket_thread_sql(column(AgentRun, "ticket", "t0"))
    (run,) = select(AgentRun, where={"pk": ctx.run.pk}, annotate={"thread": thread_sql})

    # Then it holds the same messages, in the same order (created, then id), with the same
    # times and text
    thread = ticket_thread_from_json(run.thread)
    assert thread == ticket_thread(ticket_id=ticket.pk)
    assert [body for _, _, body in thread][-1] == "Looking into it."
    assert other.body not in [body for _, _, body in thread]


def test_update_select_changes_the_row_and_reads_it_back_as_select_does(demo):
    # Given a run whose lease ran out, and one whose lease still holds
    ctx, held = run_context(), run_context()
    now = timezone.now()
    AgentRun.objects.filter(pk=ctx.run.pk).update(lease_owner="gone", lease_expires_at=now)
    AgentRun.objects.filter(pk=held.run.pk).update(
        lease_owner="busy", lease_expires_at=now + timedelta(minutes=1)
    )

    def take(run_id) -> Update:
        return Update(
            AgentRun,
            where={"pk": run_id},
            where_in={"status": ["queued", "running"]},
            any_of=[
                ("lease_owner", "=", ""),
                ("lease_expires_at", "<", now + timedelta(seconds=1)),
            ],
            values={"lease_owner": "me", "status": "running"},
            add={"version": 1},
            returning="pk",
        )

    with DatabaseCost() as cost:
        (run,) = update_select(
            take(ctx.run.pk), related=("ticket__order", "started_by"), annotate={"one": "1"}
        )

    # Then it comes back changed, with its related rows, as select reads it
    (selected,) = select(
        AgentRun, where={"pk": ctx.run.pk}, related=("ticket__order", "started_by")
    )
    assert fields_of(run) == fields_of(selected)
    assert (run.lease_owner, run.status, run.version, run.one) == ("me", "running", 1, 1)
    assert fields_of(run.ticket) == fields_of(selected.ticket)
    assert fields_of(run.ticket.order) == fields_of(selected.ticket.order)
    assert fields_of(run.started_by) == fields_of(selected.started_by)
    # in one statement on PostgreSQL (the UPDATE, then a read, elsewhere)
    assert cost.queries == (1 if connection.vendor == "postgresql" else 2)
    # and a row that matches none of `any_of` is neither changed nor read
    assert update_select(take(held.run.pk)) == []
    assert AgentRun.objects.get(pk=held.run.pk).lease_owner == "busy"


def test_select_leaves_an_empty_nullable_key_as_none_and_finds_nothing_unmatched(demo):
    ctx = run_context()
    ticket = ctx.ticket
    ticket.order = None
    ticket.save(update_fields=["order"])

    (run,) = select(AgentRun, where={"pk": ctx.run.pk}, related=("ticket__order",))

    with DatabaseCost() as cost:
        assert run.ticket.order is None
    assert cost.queries == 0
    assert select(AgentRun, where={"pk": ctx.run.pk, "lease_owner": "nobody"}) == []


# --- An empty IN: no value allowed, no row matches ------------------------------------------


def test_an_empty_where_in_selects_no_row(demo):
    ticket = TicketMessage.objects.first().ticket
    where = {"ticket_id": ticket.pk}

    assert select(TicketMessage, where=where, where_in={"author_kind": []}) == []
    assert select(TicketMessage, where=where, where_in={"author_kind": ()}) == []
    # The same read with the values allowed finds the rows: only the empty IN kept them out.
    kinds = TicketMessage.AuthorKind.values
    assert select(TicketMessage, where=where, where_in={"author_kind": kinds})


def test_an_empty_where_in_updates_no_row(demo):
    ctx = run_context()
    before = AgentRun.objects.values().get(pk=ctx.run.pk)

    changed = update_returning(
        Update(AgentRun, where={"pk": ctx.run.pk}, where_in={"status": []}, add={"version": 1})
    )

    assert changed is None
    assert AgentRun.objects.values().get(pk=ctx.run.pk) == before


# --- Event numbering: a run's events take the next numbers of its counter, with no gap -------


def test_events_written_one_by_one_and_together_are_numbered_without_a_gap(demo):
    # Given a run whose event counter stands at 3
    ctx = run_context()
    AgentRun.objects.filter(pk=ctx.run.pk).update(last_event_seq=3)
    update = Update(AgentRun, where={"pk": ctx.run.pk}, add={"version": 1})

    # When events are written alone, three together, none, and to a row that does not match
    first = run_event_append(run=ctx.run, type="one")
    together = [RunEvent(run=ctx.run, type=name) for name in ("two", "three", "four")]
    assert write_with_events(update, together)
    assert write_with_events(update, [])
    missed = RunEvent(run=ctx.run, type="missed")
    assert not write_with_events(
        Update(AgentRun, where={"pk": ctx.run.pk, "lease_owner": "nobody"}, add={"version": 1}),
        [missed],
    )
    last = run_event_append(run=ctx.run, type="five")

    # Then they hold the next numbers in the order written, as stored and as returned
    stored_events = RunEvent.objects.filter(run=ctx.run).order_by("seq")
    assert [(e.seq, e.type) for e in stored_events] == [
        (4, "one"),
        (5, "two"),
        (6, "three"),
        (7, "four"),
        (8, "five"),
    ]
    assert [first.seq, *(e.seq for e in together), last.seq] == [4, 5, 6, 7, 8]
    assert AgentRun.objects.get(pk=ctx.run.pk).last_event_seq == 8
    assert missed.pk is None


# --- update_then_insert (PostgreSQL): the step's whole write in one statement --------------


def held_run(ctx) -> dict:
    AgentRun.objects.filter(pk=ctx.run.pk).update(lease_owner="me", last_event_seq=5)
    return {"pk": ctx.run.pk, "lease_owner": "me"}


def step_update(where: dict) -> Update:
    return Update(
        AgentRun, where=where, add={"version": 1, "last_event_seq": 2}, returning="last_event_seq"
    )


def step_rows(ctx, call: str) -> list[list]:
    # Events hold their offsets from the counter as the UPDATE leaves it: -1, 0.
    return [
        [
            RunEvent(run=ctx.run, seq=-1, type="tool_call.started", data={"n": 1}),
            RunEvent(run=ctx.run, seq=0, type="tool_call.completed", data={"n": 2}),
        ],
        [AgentMessage(run=ctx.run, seq=7, role="tool", tool_call_id=call, content="{}")],
        [log_row(ctx, call)],
    ]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("durable", [True, False])
def test_update_then_insert_writes_everything_in_one_round_trip_and_commit(postgres, demo, durable):
    ctx = run_context()
    where = held_run(ctx)

    with DatabaseCost() as cost:
        seq = update_then_insert(
            step_update(where),
            inserts=step_rows(ctx, "call_one"),
            relative={RunEvent: "seq"},
            also=[("pg_notify(%s, %s || held.last_event_seq)", ["desk_test", "run "])],
            durable=durable,
        )

    assert seq == 7
    assert cost.queries == 1
    assert (cost.commits, cost.async_commits) == ((1, 0) if durable else (0, 1))
    events = RunEvent.objects.filter(run=ctx.run).order_by("seq")
    assert [(e.seq, e.type, e.data) for e in events] == [
        (6, "tool_call.started", {"n": 1}),
        (7, "tool_call.completed", {"n": 2}),
    ]
    message = AgentMessage.objects.get(run=ctx.run)
    assert (message.seq, message.tool_call_id) == (7, "call_one")
    assert stored(ToolCallLog, tool_call_id="call_one")["arguments"]["note"] == "ünïcode ✓"
    assert AgentRun.objects.get(pk=ctx.run.pk).version == ctx.run.version + 1
    assert connection.connection.info.transaction_status == TransactionStatus.IDLE


@pytest.mark.django_db(transaction=True)
def test_update_then_insert_inserts_nothing_when_the_row_did_not_match(postgres, demo):
    ctx = run_context()
    held_run(ctx)

    seq = update_then_insert(
        step_update({"pk": ctx.run.pk, "lease_owner": "someone else"}),
        inserts=step_rows(ctx, "call_one"),
        relative={RunEvent: "seq"},
    )

    assert seq is None
    assert not RunEvent.objects.filter(run=ctx.run).exists()
    assert not AgentMessage.objects.filter(run=ctx.run).exists()
    assert not ToolCallLog.objects.filter(run=ctx.run).exists()


@pytest.mark.django_db(transaction=True)
def test_a_failed_write_in_its_own_transaction_is_rolled_back_whole(postgres, demo):
    # Given a tool call logged already, so that logging it again breaks a unique constraint
    ctx = run_context()
    where = held_run(ctx)
    ToolCallLog.objects.bulk_create([log_row(ctx, "call_one")])

    with pytest.raises(IntegrityError):
        update_then_insert(
            step_update(where),
            inserts=step_rows(ctx, "call_one"),
            relative={RunEvent: "seq"},
            durable=False,
        )

    # Then nothing of the write stayed, and the connection is ready for the next one
    assert connection.connection.info.transaction_status == TransactionStatus.IDLE
    run = AgentRun.objects.get(pk=ctx.run.pk)
    assert (run.version, run.last_event_seq) == (ctx.run.version, 5)
    assert not RunEvent.objects.filter(run=ctx.run).exists()


def synchronous_commit() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        return cursor.fetchone()[0]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("durable", [True, False])
def test_only_a_write_that_need_not_wait_lets_its_transaction_commit_without_waiting(
    postgres, demo, durable
):
    ctx = run_context()
    where = held_run(ctx)

    with transaction.atomic():
        update_then_insert(
            step_update(where),
            inserts=step_rows(ctx, "call_one"),
            relative={RunEvent: "seq"},
            durable=durable,
        )
        assert synchronous_commit() == ("on" if durable else "off")

    # The setting was that transaction's own
    assert synchronous_commit() == "on"


# --- Prepared statements (PostgreSQL) ---------------------------------------------------------

SHOW_DATABASE_OPTIONS = (
    "import json; from django.conf import settings; "
    "print(json.dumps(settings.DATABASES['default'].get('OPTIONS', {})))"
)


def database_options(tmp_path, **env: str) -> dict:
    environment = clean_environment(tmp_path, DATABASE_URL="postgres://desk@db.invalid/desk", **env)
    return json.loads(printed_by(SHOW_DATABASE_OPTIONS, environment))


def test_postgresql_prepares_repeated_statements_unless_told_not_to(tmp_path):
    assert database_options(tmp_path) == {"server_side_binding": True, "prepare_threshold": 5}
    assert database_options(tmp_path, DATABASE_PREPARED_STATEMENTS="false") == {}


@pytest.fixture
def prepares():
    """PostgreSQL with prepared statements on (DATABASE_PREPARED_STATEMENTS, the default)."""
    if not connection.settings_dict["OPTIONS"].get("server_side_binding"):
        pytest.skip("DATABASE_PREPARED_STATEMENTS=false")


def prepared_statements() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        return [statement for (statement,) in cursor.fetchall()]


@pytest.mark.django_db(transaction=True)
def test_a_step_read_repeated_on_a_connection_is_prepared_once_on_the_server(
    postgres, prepares, demo
):
    ctx = run_context()

    for _ in range(6):
        (run,) = select(AgentRun, where={"pk": ctx.run.pk}, related=("ticket__order",))

    assert run.ticket.order is not None
    assert any('FROM "agent_agentrun" t0' in statement for statement in prepared_statements())


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("durable", [True, False])
def test_a_step_write_repeated_on_a_connection_is_prepared_once_on_the_server(
    postgres, prepares, demo, durable
):
    ctx = run_context()
    where = held_run(ctx)

    for n in range(6):
        message = AgentMessage(run=ctx.run, seq=n + 1, role="tool", tool_call_id=f"c{n}")
        assert update_then_insert(step_update(where), inserts=[[message]], durable=durable) == (
            7 + 2 * n
        )

    assert any(statement.startswith("WITH held AS") for statement in prepared_statements())
