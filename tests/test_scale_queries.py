"""The pages and periodic sweeps bench/scale.py measures at 100,000 tickets, held to what makes
them flat: each takes as many queries beside 30 worked tickets as beside 3, and on PostgreSQL
each sweep reads its work queue from its partial index."""

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from agent.models import AgentRun, ToolCallLog
from agent.tasks import resume_stalled_runs
from refunds.models import RefundConfirmation, RefundRequest
from refunds.tasks import expire_confirmations, reconcile_refunds
from tests.factories import (
    RefundConfirmationFactory,
    RefundRequestFactory,
    TicketFactory,
    TicketMessageFactory,
)
from tests.services import require_postgres
from tickets.models import Ticket, TicketEvent, TicketMessage
from tickets.tasks import resend_stalled_replies

pytestmark = pytest.mark.django_db

LONG_AGO = timedelta(hours=1)


def user(username: str):
    return get_user_model().objects.get(username=username)


def grow(count: int) -> list[Ticket]:
    """`count` tickets worked the way the desk works them: assigned, a customer message and an
    emailed reply, an event, an assistant run with its tool call, and a refund proposal waiting
    for a reviewer (every third one already refunded)."""
    agent = user("agent")
    tickets = TicketFactory.create_batch(
        count, assignee=agent, subject="My blender arrived broken", escalated=True
    )
    for n, ticket in enumerate(tickets):
        TicketMessageFactory(ticket=ticket, visibility="public", body="The blender is broken.")
        TicketMessageFactory(
            ticket=ticket,
            author_kind="agent",
            author=agent,
            visibility="public",
            delivery="sent",
            body="Sorry: we will refund it.",
        )
        TicketEvent.objects.create(ticket=ticket, type="assigned", actor=agent, data={})
        run = AgentRun.objects.create(
            ticket=ticket,
            started_by=agent,
            customer=ticket.customer,
            actor_role="agent",
            status="completed",
        )
        ToolCallLog.objects.create(
            run=run,
            ticket=ticket,
            tool_call_id="call_1",
            tool_name="get_order",
            ok=True,
            result={"ok": True},
            actor=agent,
            actor_role="agent",
        )
        refund = RefundRequestFactory(
            ticket=ticket,
            requested_by=agent,
            run=run,
            status="succeeded" if n % 3 == 2 else "pending_approval",
        )
        RefundConfirmationFactory(
            refund_request=refund, status="approved" if n % 3 == 2 else "pending"
        )
    return tickets


# --- pages ----------------------------------------------------------------------------------


def get_counting_queries(username: str, url: str):
    client = Client()
    client.force_login(user(username))
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    assert response.status_code == 200, (url, response.status_code)
    return response, len(queries)


PAGES = [
    ("agent", "/tickets/"),
    ("agent", "/tickets/?q=blender"),
    ("reviewer", "/review/"),
    ("reviewer", "/api/refunds/?status=pending_approval"),
]


def expected_on_page_one(url: str, newest: Ticket) -> str:
    """What the page's first page must show: the newest ticket on the desk list, the oldest
    pending request in the review queue and the API (oldest first)."""
    if url.startswith("/tickets/"):
        return newest.reference
    pending = RefundRequest.objects.filter(status="pending_approval")
    return pending.earliest("created_at", "id").request_id


@pytest.mark.parametrize(("username", "url"), PAGES)
def test_a_page_takes_as_many_queries_beside_30_worked_tickets_as_beside_3(demo, username, url):
    grow(3)
    _, few = get_counting_queries(username, url)

    newest = grow(27)[-1]
    response, many = get_counting_queries(username, url)

    assert expected_on_page_one(url, newest) in response.content.decode()
    assert many == few


def test_a_ticket_page_takes_as_many_queries_for_30_messages_as_for_3(demo):
    ticket = Ticket.objects.get(reference="TCK-1001")
    agent = user("agent")
    TicketMessageFactory.create_batch(3, ticket=ticket, author_kind="agent", author=agent)
    _, few = get_counting_queries("agent", "/tickets/TCK-1001/")

    TicketMessageFactory.create_batch(
        27, ticket=ticket, author_kind="agent", author=agent, body="The thirtieth message."
    )
    response, many = get_counting_queries("agent", "/tickets/TCK-1001/")

    assert "The thirtieth message." in response.content.decode()
    assert many == few


# --- sweeps ---------------------------------------------------------------------------------
# Each "due" maker turns two more of the grown rows into work for its sweep.


def refunds_lost_at_the_provider(count: int) -> list[int]:
    picked = list(
        RefundRequest.objects.filter(status="pending_approval")
        .order_by("-pk")
        .values_list("pk", flat=True)[:count]
    )
    # Approved, sent, and the provider's answer lost: the sweep asks the provider again.
    RefundConfirmation.objects.filter(refund_request__in=picked).update(status="approved")
    RefundRequest.objects.filter(pk__in=picked).update(
        status="outcome_unknown", updated_at=timezone.now() - LONG_AGO
    )
    return picked


def confirmations_lapsed(count: int) -> list[int]:
    picked = list(
        RefundConfirmation.objects.filter(status="pending", expires_at__gt=timezone.now())
        .order_by("-pk")
        .values_list("refund_request_id", flat=True)[:count]
    )
    RefundConfirmation.objects.filter(refund_request__in=picked).update(
        expires_at=timezone.now() - LONG_AGO
    )
    return picked


def runs_whose_worker_died(count: int) -> list:
    picked = list(
        AgentRun.objects.filter(status="completed")
        .order_by("-created_at")
        .values_list("pk", flat=True)[:count]
    )
    AgentRun.objects.filter(pk__in=picked).update(
        status="running", lease_owner="gone-worker", lease_expires_at=timezone.now() - LONG_AGO
    )
    return picked


def replies_whose_task_was_lost(count: int) -> list[int]:
    picked = list(
        TicketMessage.objects.filter(delivery="sent")
        .order_by("-pk")
        .values_list("pk", flat=True)[:count]
    )
    TicketMessage.objects.filter(pk__in=picked).update(
        delivery="queued", next_attempt_at=None, created_at=timezone.now() - LONG_AGO
    )
    return picked


def refunds_settled(picked: list[int]) -> bool:
    return RefundRequest.objects.filter(pk__in=picked, status="failed").count() == len(picked)


def confirmations_expired(picked: list[int]) -> bool:
    return RefundRequest.objects.filter(pk__in=picked, status="expired").count() == len(picked)


def tasks_sent_for(picked: list, sent: list) -> bool:
    """Whether the sweep sent a task for each picked row, and for nothing else (a row it sent
    a task for stays due until that task runs, so the second pass sends the first rows' again)."""
    return {str(pk) for pk in picked} == {str(args[0]) for args in sent}


SWEEPS = {
    "reconcile_refunds": (reconcile_refunds, refunds_lost_at_the_provider),
    "expire_confirmations": (expire_confirmations, confirmations_lapsed),
    "resume_stalled_runs": (resume_stalled_runs, runs_whose_worker_died),
    "resend_stalled_replies": (resend_stalled_replies, replies_whose_task_was_lost),
}


@pytest.fixture
def tasks_sent(monkeypatch) -> list:
    """The args of every task a sweep sends, recorded instead of reaching the broker."""
    from config.celery import app

    sent: list = []
    monkeypatch.setattr(
        app, "send_task", lambda name, args=(), kwargs=None, **options: sent.append(args)
    )
    return sent


def sweep_counting_queries(task) -> int:
    with CaptureQueriesContext(connection) as queries:
        task()
    return len(queries)


@pytest.mark.parametrize("name", SWEEPS)
def test_an_idle_sweep_takes_as_many_queries_beside_30_worked_tickets_as_beside_3(
    demo, tasks_sent, name
):
    task, _ = SWEEPS[name]
    grow(3)
    few = sweep_counting_queries(task)

    grow(27)
    many = sweep_counting_queries(task)

    assert many == few
    assert tasks_sent == []


@pytest.mark.parametrize("name", SWEEPS)
def test_a_sweep_with_two_items_due_takes_as_many_queries_beside_30_tickets_as_beside_3(
    demo, simulated_provider, tasks_sent, name
):
    task, make_due = SWEEPS[name]
    grow(3)
    first = make_due(2)
    few = sweep_counting_queries(task)

    grow(27)
    second = make_due(2)
    many = sweep_counting_queries(task)

    assert many == few
    assert len(first + second) == 4
    assert worked_off(name, first + second, tasks_sent)


def worked_off(name: str, picked: list, sent: list) -> bool:
    """Whether the sweep did the work it was given (so that it did not count an empty pass)."""
    if name == "reconcile_refunds":
        return refunds_settled(picked)
    if name == "expire_confirmations":
        return confirmations_expired(picked)
    return tasks_sent_for(picked, sent)


# --- the sweeps' plans on PostgreSQL ----------------------------------------------------------

SWEEP_INDEXES = [
    ("reconcile_refunds", "refunds_refundrequest", "refund_in_flight_idx"),
    # The partial unique constraint's index: it holds exactly the pending versions.
    ("expire_confirmations", "refunds_refundconfirmation", "refund_confirmation_one_pending"),
    ("resume_stalled_runs", "agent_agentrun", "agent_run_active_idx"),
    ("resend_stalled_replies", "tickets_ticketmessage", "ticket_message_queued_idx"),
]


def plans_of_the_reads_of(task, table: str) -> list[str]:
    with CaptureQueriesContext(connection) as queries:
        task()
    reads = [
        q["sql"]
        for q in queries.captured_queries
        if q["sql"].startswith("SELECT") and table in q["sql"]
    ]
    plans = []
    with connection.cursor() as cursor:
        # A test's few rows are cheapest to read whole; at 100,000 the planner prefers the
        # index anyway (bench/scale.py --explain). What this checks is that the sweep's query
        # can be answered from its partial index: its condition implies the index's.
        cursor.execute("SET LOCAL enable_seqscan = off")
        for sql in reads:
            cursor.execute(f"EXPLAIN {sql}")
            plans.append("\n".join(row[0] for row in cursor.fetchall()))
    return plans


@pytest.mark.services
@pytest.mark.parametrize(("name", "table", "index"), SWEEP_INDEXES)
def test_on_postgresql_a_sweep_reads_its_work_queue_from_its_partial_index(
    demo, tasks_sent, name, table, index
):
    require_postgres()
    grow(3)

    plans = plans_of_the_reads_of(SWEEPS[name][0], table)

    assert plans
    for plan in plans:
        assert index in plan, plan
