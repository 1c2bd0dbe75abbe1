"""What one step costs the database, and the hold on the run that makes it cheap: the hand-over
between steps, the lease heartbeat, the call threads, one model client per process.

The figures themselves come from bench/agent_overhead.py; these tests hold the structure that
gives them: what a step opens, commits and asks for.
"""

import threading
import time

import pytest
from django.db import OperationalError, close_old_connections, connection
from django.utils import timezone

from agent import services
from agent.executor import pool
from agent.executor.pool import CallThreads
from agent.models import AgentRun, RunEvent, ToolCallLog
from agent.providers import get_provider
from agent.runtime import handover, run_step
from config.connections import read_checking_connection
from tests.agent.runs import drive, probe_tool, start_run
from tests.dbcost import HEALTH_CHECK, DatabaseCost
from tests.fakes.openai_server import Sleep, text_reply, tool_call, tool_reply
from tickets.models import TicketMessage
from tickets.selectors import ticket_thread
from tickets.services import ticket_post_message

pytestmark = pytest.mark.django_db(transaction=True)

MUG, LAMP = "202610110087", "202610150012"


def two_lookups(step: int) -> dict:
    return tool_reply(
        tool_call("get_order", {"order_id": MUG}, call_id=f"call_order_{step}"),
        tool_call(
            "search_policies", {"query": f"damaged item {step}"}, call_id=f"call_policy_{step}"
        ),
    )


def first_step(fake_openai, *, then_answer: bool = True) -> tuple[AgentRun, run_step.StepOutcome]:
    """A run whose first step ran (it takes the lease); a second step's lookups and the
    answer are queued."""
    fake_openai.enqueue(two_lookups(0))
    if then_answer:
        fake_openai.enqueue(two_lookups(1), text_reply("Done."))
    run = start_run("Check the mug order.")
    outcome = run_step.advance(run_id=run.pk, expected_version=run.version)
    assert outcome.kind == run_step.StepKind.CONTINUE
    return run, outcome


def next_step(run: AgentRun, previous: run_step.StepOutcome) -> run_step.StepOutcome:
    return run_step.advance(run_id=run.pk, expected_version=previous.version, owner=previous.owner)


def test_a_read_only_step_commits_its_reply_and_then_its_results_and_opens_no_connection(
    demo, fake_openai
):
    run, first = first_step(fake_openai)

    with DatabaseCost() as cost:
        outcome = next_step(run, first)

    assert outcome.kind == run_step.StepKind.CONTINUE
    # The reply with its calls, then results, events and the hand-over: both lookups are
    # quick (Tool.quick), so the first one's result waits for the last write.
    assert (cost.commits, cost.async_commits) == (2, 0)
    assert cost.connections == 0
    assert not [sql for sql in cost.statements if "MAX(" in sql.upper()]


def run_writes(cost: DatabaseCost) -> list[str]:
    """The statements that wrote the run's row or its events."""
    tables = (AgentRun._meta.db_table, RunEvent._meta.db_table)
    return [
        sql
        for sql in cost.statements
        if sql.startswith(("UPDATE", "INSERT", "WITH")) and any(f'"{t}"' in sql for t in tables)
    ]


def test_the_last_step_saves_the_answer_and_ends_the_run_in_one_commit(postgres, demo, fake_openai):
    run, first = first_step(fake_openai)
    second = next_step(run, first)

    with DatabaseCost() as cost:
        outcome = next_step(run, second)

    # The reply the answer came in, and the ending with its run.completed event: one
    # statement each, which moves the event counter on and inserts the events, without a
    # savepoint of their own; the answer posted on the ticket; one commit for all of it
    assert outcome.kind == run_step.StepKind.FINISHED
    assert cost.commits == 1
    assert len(run_writes(cost)) == 2
    ticket_savepoint = 1  # tickets.services.ticket_post_message's own
    assert len([sql for sql in cost.statements if sql.startswith("SAVEPOINT")]) == ticket_savepoint
    run.refresh_from_db()
    assert (run.status, run.final_answer) == ("completed", "Done.")
    assert list(RunEvent.objects.filter(run=run).values_list("seq", flat=True)) == list(
        range(1, run.last_event_seq + 1)
    )


def test_an_event_is_appended_in_one_statement(postgres, demo):
    run = start_run("Check the mug order.")
    before = AgentRun.objects.get(pk=run.pk).last_event_seq

    with DatabaseCost() as cost:
        event = services.run_event_append(run=run, type="message", data={"content": "hi"})

    # One statement moves the counter on and inserts the event (and, without Redis, announces
    # it to the live streams: agent/live.py)
    [statement] = cost.statements
    assert statement.startswith('WITH held AS (UPDATE "agent_agentrun"')
    assert 'INSERT INTO "agent_runevent"' in statement
    assert cost.commits == 1
    assert event.seq == before + 1
    assert RunEvent.objects.get(run=run, seq=event.seq).data == {"content": "hi"}


def test_an_event_for_a_run_that_is_gone_is_refused(demo):
    run = start_run("Check the mug order.")
    AgentRun.objects.filter(pk=run.pk).delete()

    with pytest.raises(AgentRun.DoesNotExist):
        services.run_event_append(run=run, type="message", data={})

    # Nothing was written
    assert not RunEvent.objects.filter(run_id=run.pk).exists()


def tool_log_reads(cost: DatabaseCost) -> list[str]:
    table = ToolCallLog._meta.db_table
    return [
        sql for sql in cost.statements if sql.lstrip().upper().startswith("SELECT") and table in sql
    ]


def test_a_first_step_takes_its_run_and_reads_it_in_one_statement(demo):
    run = start_run("Check the mug order.")

    with DatabaseCost() as cost:
        taken = services.run_acquire_lease(run_id=run.pk, owner="first-step")

    assert taken is not None
    assert (taken.status, taken.lease_owner, taken.version) == ("running", "first-step", 1)
    assert taken.ticket_thread == ticket_thread(ticket_id=run.ticket_id)
    assert cost.queries == (1 if connection.vendor == "postgresql" else 2)
    assert (cost.commits, cost.async_commits) == (1, 0)
    # A second delivery of the same first step finds it taken, and leaves it as it is
    assert services.run_acquire_lease(run_id=run.pk, owner="again", expected_version=0) is None
    run.refresh_from_db()
    assert (run.lease_owner, run.version) == ("first-step", 1)


def test_a_step_reads_the_tool_call_log_only_once_the_run_has_made_calls(demo, fake_openai):
    fake_openai.enqueue(two_lookups(0), text_reply("Done."))
    run = start_run("Check the mug order.")

    # The first step, in a process the run was not handed over in: its transcript has no
    # tool calls yet, so there is no log to read
    with DatabaseCost() as first_cost:
        first = run_step.advance(run_id=run.pk, expected_version=run.version)
    assert first.kind == run_step.StepKind.CONTINUE
    assert tool_log_reads(first_cost) == []

    # A step that finds calls in the transcript, and nothing handed over, reads the log
    handover.clear()
    with DatabaseCost() as next_cost:
        assert next_step(run, first).kind == run_step.StepKind.FINISHED
    assert len(tool_log_reads(next_cost)) == 1


def test_a_step_reads_the_ticket_thread_with_its_run_and_sees_a_message_written_meanwhile(
    demo, fake_openai
):
    run, first = first_step(fake_openai)
    # A customer writes while the run is going
    ticket_post_message(
        ticket=run.ticket, author_kind="customer", body="The handle came off as well."
    )

    with DatabaseCost() as cost:
        next_step(run, first)

    # One statement reads the thread, and it is the one that reads the run
    (thread_read,) = [sql for sql in cost.statements if TicketMessage._meta.db_table in sql]
    assert AgentRun._meta.db_table in thread_read
    thread = fake_openai.requests[-1]["messages"][2]["content"]
    assert "The handle came off as well." in thread


def test_events_and_messages_are_numbered_in_order_without_gaps(demo, fake_openai):
    run, _ = first_step(fake_openai)
    drive(run)

    seqs = list(RunEvent.objects.filter(run=run).order_by("seq").values_list("seq", flat=True))
    assert seqs == list(range(1, len(seqs) + 1))
    run.refresh_from_db()
    assert run.last_event_seq == seqs[-1]
    messages = list(run.messages.order_by("seq").values_list("seq", flat=True))
    assert messages == list(range(1, len(messages) + 1))
    assert run.status == "completed"


def test_the_next_step_runs_as_the_owner_the_run_was_handed_to(demo, fake_openai):
    run, first = first_step(fake_openai)

    # The run is held for the next step: nobody else may take it meanwhile
    held = AgentRun.objects.get(pk=run.pk)
    assert (held.lease_owner, held.version) == (first.owner, first.version)
    assert held.lease_expires_at > timezone.now()
    assert run_step.advance(run_id=run.pk).kind == run_step.StepKind.SKIPPED
    assert run_step.advance(
        run_id=run.pk, expected_version=first.version, owner="someone-else"
    ).kind == (run_step.StepKind.SKIPPED)
    assert len(fake_openai.requests) == 1

    # The step it was handed to runs
    assert next_step(run, first).kind == run_step.StepKind.CONTINUE
    assert len(fake_openai.requests) == 2
    # and a second delivery of that same hand-over finds the version moved on
    assert next_step(run, first).kind == run_step.StepKind.SKIPPED
    assert len(fake_openai.requests) == 2


def test_two_deliveries_of_one_step_at_once_save_one_reply_and_run_each_tool_once(
    demo, fake_openai
):
    # Given a hand-over delivered twice at the same moment, and a model that takes a while
    run, first = first_step(fake_openai, then_answer=False)
    fake_openai.requests.clear()
    with probe_tool("probe_once") as calls:
        fake_openai.respond_with(
            lambda request: Sleep(0.5, tool_reply(tool_call("probe_once", {}, call_id="call_p")))
        )
        outcomes: list[run_step.StepOutcome] = []
        deliveries = [
            threading.Thread(target=lambda: outcomes.append(next_step(run, first)))
            for _ in range(2)
        ]
        for delivery in deliveries:
            delivery.start()
        for delivery in deliveries:
            delivery.join(30)

        # Then both may have asked the model, but one reply was saved and its tool ran once
        assert sorted(outcome.kind for outcome in outcomes) == [
            run_step.StepKind.CONTINUE,
            run_step.StepKind.SKIPPED,
        ]
        assert len(calls) == 1
    assert ToolCallLog.objects.filter(run=run, tool_call_id="call_p").count() == 1
    run.refresh_from_db()
    assert run.step_count == 2
    assert run.messages.filter(role="assistant").count() == 2


def test_the_lease_is_renewed_while_a_slow_tool_runs(demo, fake_openai, settings):
    # Given a lease of one second and a tool that takes three
    settings.AGENT_LEASE_SECONDS = 1
    expiries = []

    def slow(calls):
        for _ in range(6):
            time.sleep(0.5)
            expiries.append(AgentRun.objects.get(pk=run.pk).lease_expires_at)

    with probe_tool("probe_slow", body=slow):
        fake_openai.enqueue(
            tool_reply(tool_call("probe_slow", {}, call_id="call_slow")), text_reply("Done.")
        )
        run = start_run("Take your time.")
        drive(run)

    # Then the lease kept moving ahead while it ran, so no sweep took the run over
    assert expiries == sorted(expiries) and len(set(expiries)) >= 3
    assert run.status == "completed"
    assert ToolCallLog.objects.get(run=run, tool_call_id="call_slow").ok


def test_a_stuck_call_does_not_hold_up_the_next_one():
    threads = CallThreads(idle_threads=1)
    release = threading.Event()
    stuck = threads.submit(release.wait, 10)

    started = time.monotonic()
    assert threads.submit(lambda: "answered").result(timeout=5) == "answered"
    assert time.monotonic() - started < 2
    assert not stuck.done()
    release.set()
    assert stuck.result(timeout=5) is True


def read_backend_pid() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_backend_pid()" if connection.vendor == "postgresql" else "SELECT 1"
        )
        return cursor.fetchone()[0]


def only_the_steps_own_health_checks(monkeypatch) -> None:
    """The call threads outlive a test: one whose connection last answered in an earlier
    test checks it before its lookup (pool.RECHECK_AFTER_S), whichever thread takes it."""
    monkeypatch.setattr(pool, "RECHECK_AFTER_S", float("inf"))


def test_a_handed_over_step_sends_no_health_check_its_read_of_the_run_is_the_check(
    demo, fake_openai, monkeypatch
):
    only_the_steps_own_health_checks(monkeypatch)
    run, first = first_step(fake_openai)
    # What a worker does between two tasks: the kept connection is due a check
    close_old_connections()

    with DatabaseCost() as cost:
        assert next_step(run, first).kind == run_step.StepKind.CONTINUE

    # The read of the run answered, so the connection works: no "SELECT 1" before it
    assert HEALTH_CHECK not in cost.statements
    assert cost.connections == 0


def terminate_from_another_connection(pid: int) -> None:
    def terminate():
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
        finally:
            connection.close()

    thread = threading.Thread(target=terminate)
    thread.start()
    thread.join()


def test_a_step_whose_kept_connection_the_database_dropped_reads_its_run_on_a_new_one(
    postgres, demo, fake_openai, monkeypatch
):
    only_the_steps_own_health_checks(monkeypatch)
    run, first = first_step(fake_openai)
    dropped = read_backend_pid()
    terminate_from_another_connection(dropped)
    close_old_connections()

    with DatabaseCost() as cost:
        outcome = next_step(run, first)

    # The read failed on the dropped connection, which the check then found gone: the read
    # went again on a new connection, and the step ran as if nothing had happened
    assert outcome.kind == run_step.StepKind.CONTINUE
    assert cost.statements.count(HEALTH_CHECK) == 1
    assert cost.connections == 1
    assert read_backend_pid() != dropped
    assert len(fake_openai.requests) == 2


def test_a_read_that_fails_on_a_working_connection_is_not_sent_again(demo):
    pid = read_backend_pid()
    close_old_connections()
    sent = []

    def failing_read():
        # An error of the kind a dropped connection raises, on a connection that works
        sent.append(1)
        with connection.cursor() as cursor:
            if connection.vendor != "postgresql":
                cursor.execute("SELECT * FROM no_such_table")
                return
            try:
                cursor.execute("SET statement_timeout TO 10")
                cursor.execute("SELECT pg_sleep(1)")
            finally:
                cursor.execute("RESET statement_timeout")

    with pytest.raises(OperationalError):
        read_checking_connection(failing_read)
    # Raised as it is, after one try, and the connection is kept
    assert len(sent) == 1
    assert read_backend_pid() == pid


def test_call_threads_keep_their_database_connection_between_calls(demo):
    threads = CallThreads(idle_threads=1)
    threads.submit(read_backend_pid).result(timeout=5)  # the thread's first call connects
    with DatabaseCost() as cost:
        threads.submit(read_backend_pid).result(timeout=5)
        threads.submit(read_backend_pid).result(timeout=5)
    # Its connection answered just now: no health check comes before either query
    assert (cost.queries, cost.connections) == (2, 0)
    assert HEALTH_CHECK not in cost.statements
    threads.close_idle()


def test_a_call_thread_checks_its_connection_when_it_last_answered_a_while_ago(demo, monkeypatch):
    monkeypatch.setattr(pool, "RECHECK_AFTER_S", 0.2)
    threads = CallThreads(idle_threads=1)
    threads.submit(read_backend_pid).result(timeout=5)
    # A call that asks nothing of the database (a model call) does not vouch for it
    threads.submit(time.sleep, 0.3).result(timeout=5)
    with DatabaseCost() as cost:
        threads.submit(read_backend_pid).result(timeout=5)
    assert cost.statements[0] == HEALTH_CHECK and cost.queries == 2
    threads.close_idle()


def test_a_call_thread_replaces_a_connection_that_died_while_it_waited(postgres, demo, monkeypatch):
    monkeypatch.setattr(pool, "RECHECK_AFTER_S", 0.0)
    threads = CallThreads(idle_threads=1)
    first = threads.submit(read_backend_pid).result(timeout=5)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [first])
    # The health check finds it gone: the call runs on a new connection instead of failing
    assert threads.submit(read_backend_pid).result(timeout=5) not in (first, None)
    threads.close_idle()


def test_one_model_client_serves_every_step_of_a_process(demo, fake_openai, settings):
    assert get_provider() is get_provider()
    client = get_provider()

    settings.OPENAI_BASE_URL = "http://127.0.0.1:9/v1"
    assert get_provider() is not client


def test_a_step_handed_a_run_the_sweep_gave_to_another_does_nothing(demo, fake_openai):
    run, first = first_step(fake_openai)
    # The hand-over's lease ran out before its task arrived, and the sweep resumed the run
    AgentRun.objects.filter(pk=run.pk).update(lease_expires_at=timezone.now())
    assert services.run_acquire_lease(run_id=run.pk, owner="sweep-step") is not None
    events = RunEvent.objects.filter(run=run).count()

    assert next_step(run, first).kind == run_step.StepKind.SKIPPED
    # Nothing was asked, run, written or taken
    assert len(fake_openai.requests) == 1
    assert RunEvent.objects.filter(run=run).count() == events
    assert ToolCallLog.objects.filter(run=run).count() == 2
    assert AgentRun.objects.get(pk=run.pk).lease_owner == "sweep-step"
