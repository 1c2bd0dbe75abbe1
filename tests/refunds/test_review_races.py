"""Decisions on one refund request racing each other, many rounds, on PostgreSQL with real
threads: whatever arrives together, one decision wins whole, every other one is told 409 with
the API's error body, nothing answers 5xx (a deadlock is no outage) and money moves at most once.

Approvals, rejections, withdrawals and reassignments go through the HTTP API, a client per
thread. An edit is the proposal made again with another amount, as the create_refund tool makes
it; the expiry sweep is the service the beat task calls: both are called as those callers call
them. An approval's execution runs at once on a thread of its own, as a worker would pick it
up while the losers are still at it, against the simulated provider.
"""

import threading
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal
from typing import cast

import pytest
from django.contrib.auth.models import User
from django.db import connections
from rest_framework.test import APIClient

from config.celery import app as celery_app
from config.errors import ApplicationError
from refunds.models import RefundConfirmation, RefundEvent, RefundRequest
from refunds.services import refund_expire_confirmations, refund_propose
from refunds.tasks import execute_refund
from tests.factories import RefundProposalFactory, TicketFactory, UserFactory
from tests.services import run_in_threads
from tickets.models import Ticket

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]

ROUNDS = 15
PER_SIDE = 10
ERROR_BODY_KEYS = {"message", "code", "extra"}


@dataclass(frozen=True)
class Answer:
    """What one racer was told: an HTTP status and, for a refusal, the error's code."""

    side: str
    status: int
    code: str = ""


def over_api(side: str, user: User, path: str, body: dict) -> Answer:
    client = APIClient()
    client.force_authenticate(user)
    response = client.post(path, body, format="json")
    if response.status_code < 300:
        return Answer(side, response.status_code)
    error = response.json()
    assert set(error) == ERROR_BODY_KEYS, error
    return Answer(side, response.status_code, error["code"])


def in_process(side: str, call) -> Answer:
    """A service called as its caller calls it: a refusal is what the caller would answer
    (its status); anything else that escapes it (a database error) counts as a 5xx."""
    try:
        outcome = call()
    except ApplicationError as refusal:
        return Answer(side, refusal.status_code, refusal.code)
    except Exception as error:  # the test reports it; a 5xx is what a caller would answer
        return Answer(side, 500, f"{type(error).__name__}: {error}")
    if outcome == 0:  # the expiry sweep found nothing left to expire
        return Answer(side, 409, "nothing_expired")
    return Answer(side, 200)


@dataclass
class Racers:
    requester: User
    reviewer: User
    other_reviewer: User
    supervisor: User
    ticket: Ticket
    refund: RefundRequest
    version_1: RefundConfirmation

    def approve(self, _: int) -> Answer:
        body = {"version": 1, "fingerprint": self.version_1.fingerprint, "note": "Fine."}
        return over_api("approve", self.reviewer, self._path("approve"), body)

    def reject(self, _: int) -> Answer:
        body = {"version": 1, "note": "No photo."}
        return over_api("reject", self.other_reviewer, self._path("reject"), body)

    def withdraw(self, _: int) -> Answer:
        return over_api("withdraw", self.requester, self._path("withdraw"), {"note": "Oops."})

    def edit(self, index: int) -> Answer:
        return in_process(
            "edit",
            lambda: refund_propose(
                ticket=self.ticket,
                order=self.refund.order,
                amount=Decimal(100 + index),  # each edit another amount: each a new version
                reason="damaged",
                explanation="The mug arrived in pieces.",
                requested_by=self.requester,
                role="agent",
            ),
        )

    def expire(self, _: int) -> Answer:
        lapsed = self.version_1.expires_at + timedelta(seconds=1)
        return in_process("expire", lambda: refund_expire_confirmations(now=lapsed))

    def reassign(self, index: int) -> Answer:
        """Assign the ticket to one agent and the next time to the other: each one a change."""
        body = {"assignee": ["t_assignee", "t_agent2"][index % 2]}
        path = f"/api/tickets/{self.ticket.reference}/assign/"
        return over_api("assign", self.supervisor, path, body)

    def start_run(self, _: int) -> Answer:
        """The ticket's assignee asks the assistant (its run is started, and queued)."""
        assignee = self.ticket.assignee
        assert assignee is not None
        path = f"/api/tickets/{self.ticket.reference}/runs/"
        return over_api("run", assignee, path, {"message": "What did the reviewer say?"})

    def _path(self, action: str) -> str:
        return f"/api/refunds/{self.refund.request_id}/{action}/"


@dataclass
class Worker:
    """execute_refund run as a worker runs it, at once, on a thread of its own."""

    outcomes: dict[int, list] = field(default_factory=dict)
    threads: list[threading.Thread] = field(default_factory=list)

    def send_task(self, name: str, args=(), kwargs=None, **options) -> None:
        if name != "refunds.tasks.execute_refund":
            return
        thread = threading.Thread(target=self._execute, args=args)
        self.threads.append(thread)
        thread.start()

    def _execute(self, refund_pk: int) -> None:
        try:
            outcome = execute_refund(refund_pk)
        except Exception as error:  # the test inspects it
            outcome = error
        finally:
            connections.close_all()
        self.outcomes.setdefault(refund_pk, []).append(outcome)

    def finish(self) -> None:
        for thread in self.threads:
            thread.join(timeout=30)
        self.threads.clear()


@pytest.fixture
def worker(monkeypatch, simulated_provider):
    running = Worker()
    monkeypatch.setattr(celery_app, "send_task", running.send_task)
    yield running
    running.finish()


def assert_money_moved_once_if_approved(refund: RefundRequest, worker: Worker, calls) -> None:
    """An approved request was executed once and sent to the provider once, and succeeded; any
    other was never sent."""
    worker.finish()
    refund.refresh_from_db()
    sent = [call for call in calls.calls("create") if call.idempotency_key == refund.request_id]
    trail = list(
        RefundEvent.objects.filter(refund_request=refund)
        .order_by("pk")
        .values_list("to_status", flat=True)
    )
    if trail[:2] == ["pending_approval", "approved"]:
        assert worker.outcomes.get(refund.pk) == ["succeeded"]
        assert len(sent) == 1
        assert refund.status == "succeeded"
        assert trail == ["pending_approval", "approved", "executing", "succeeded"]
    else:
        assert (worker.outcomes.get(refund.pk), sent) == (None, [])


# The request's status when each side wins.
WINS = {"approve": "approved", "reject": "rejected", "withdraw": "withdrawn", "expire": "expired"}


def race(racers: Racers, first: str, second: str) -> list[Answer]:
    """PER_SIDE racers of each side, released at once."""
    sides = [getattr(racers, first), getattr(racers, second)]
    return run_in_threads(2 * PER_SIDE, lambda index: sides[index % 2](index // 2))


@pytest.fixture
def new_racers(postgres, agent_user, agent2_user, reviewer, reviewer2, supervisor):
    assignee = UserFactory(username="t_assignee", role="agent")

    def make() -> Racers:
        # Assigned, so a rejection also notifies someone (tickets/changes.py).
        ticket = cast(Ticket, TicketFactory(assignee=assignee))
        refund = cast(RefundRequest, RefundProposalFactory(ticket=ticket, requested_by=agent_user))
        version_1 = refund.confirmations.get()
        return Racers(agent_user, reviewer, reviewer2, supervisor, ticket, refund, version_1)

    return make


@pytest.mark.parametrize(
    ("first", "second"),
    [("approve", "withdraw"), ("approve", "reject"), ("withdraw", "reject"), ("expire", "approve")],
)
def test_it_lets_exactly_one_of_two_racing_decisions_win_and_answers_the_rest_409(
    new_racers, worker, simulated_provider, first, second
):
    for _ in range(ROUNDS):
        # Given a pending proposal
        racers = new_racers()

        # When ten of each decision arrive at once
        answers = race(racers, first, second)

        # Then one of them won, and every other one was told it conflicts with the state
        assert [a for a in answers if a.status >= 500] == []
        winners = [a for a in answers if a.status == 200]
        assert len(winners) == 1, answers
        assert {a.status for a in answers if a is not winners[0]} == {409}, answers
        # and the request, its version and its trail say exactly what won
        won = WINS[winners[0].side]
        refund = racers.refund
        versions = RefundConfirmation.objects.filter(refund_request=refund)
        assert list(versions.values_list("version", "status")) == [(1, won)]
        events = RefundEvent.objects.filter(refund_request=refund).order_by("pk")
        assert list(events.values_list("to_status", flat=True))[:2] == ["pending_approval", won]
        # and money moves only for an approval, and once
        assert_money_moved_once_if_approved(refund, worker, simulated_provider)
        assert refund.status == ("succeeded" if won == "approved" else won)


def test_it_lets_an_approval_racing_edits_either_win_whole_or_lose_to_them(
    new_racers, worker, simulated_provider
):
    for _ in range(ROUNDS):
        # Given a pending proposal of 129.00
        racers = new_racers()

        # When ten approvals of its version 1 arrive with ten edits to other amounts
        answers = race(racers, "approve", "edit")

        # Then nothing answered 5xx, and every refusal is a conflict
        assert [a for a in answers if a.status >= 500] == []
        assert {a.status for a in answers} <= {200, 409}, answers
        approvals = [a for a in answers if a.side == "approve" and a.status == 200]
        edits = [a for a in answers if a.side == "edit" and a.status == 200]
        refund = racers.refund
        assert_money_moved_once_if_approved(refund, worker, simulated_provider)
        versions = list(
            RefundConfirmation.objects.filter(refund_request=refund)
            .order_by("version")
            .values_list("version", "status")
        )
        if approvals:
            # either the approval came first: version 1 approved whole, every edit refused
            assert (len(approvals), len(edits)) == (1, 0), answers
            assert refund.amount == Decimal("129.00")
            assert versions == [(1, "approved")]
            assert {a.code for a in answers if a.side == "edit"} == {"refund_already_decided"}
        else:
            # or an edit did: each edit that landed is a version, only the newest pending
            assert len(edits) >= 1, answers
            assert refund.status == "pending_approval"
            assert [v for v, _ in versions] == list(range(1, len(edits) + 2))
            assert [s for _, s in versions] == ["superseded"] * len(edits) + ["pending"]


def test_it_answers_no_5xx_when_the_ticket_is_reassigned_while_its_refund_is_approved(
    new_racers, worker, simulated_provider
):
    for _ in range(ROUNDS):
        # Given a pending proposal on an assigned ticket
        racers = new_racers()

        # When ten approvals arrive while a supervisor reassigns the ticket ten times over
        answers = race(racers, "approve", "reassign")

        # Then every reassignment was made, one approval won and the others were told 409
        assert [a for a in answers if a.status >= 500] == []
        assert {a.status for a in answers if a.side == "assign"} == {200}, answers
        approvals = sorted(a.status for a in answers if a.side == "approve")
        assert approvals == [200] + [409] * (PER_SIDE - 1), answers
        assert_money_moved_once_if_approved(racers.refund, worker, simulated_provider)
        assert racers.refund.status == "succeeded"


def test_it_answers_no_5xx_when_the_assignee_starts_runs_while_the_refund_is_rejected(
    new_racers, worker, settings
):
    # (each round starts ten runs: the fair-use limit is not what this is about)
    settings.AGENT_RUNS_PER_HOUR = 0
    for _ in range(ROUNDS):
        # Given a pending proposal on a ticket assigned to an agent
        racers = new_racers()

        # When ten rejections arrive while the assignee starts ten runs on the ticket (the
        # rejection notifies the assignee; a run start locks its user's row for fair use)
        answers = race(racers, "reject", "start_run")

        # Then every run started, one rejection won and the others were told 409
        assert [a for a in answers if a.status >= 500] == []
        assert {a.status for a in answers if a.side == "run"} == {202}, answers
        rejections = sorted(a.status for a in answers if a.side == "reject")
        assert rejections == [200] + [409] * (PER_SIDE - 1), answers
        racers.refund.refresh_from_db()
        assert racers.refund.status == "rejected"
