"""The AgentRun state machine (DESIGN §4, §7), tried pair by pair: every move a run can make
succeeds, an ending with its event; every other (from, to) pair is refused and changes
nothing."""

from datetime import timedelta
from itertools import product

import pytest
from django.utils import timezone

from agent import services
from agent.models import AgentRun, RunEvent
from agent.transitions import run_transition
from tests.factories import AgentRunFactory
from tickets.models import TicketMessage

pytestmark = pytest.mark.django_db

# Written out here rather than read from the code under test.
RUN_MOVES = {
    ("queued", "running"),
    ("queued", "cancelled"),
    ("running", "running"),
    ("running", "completed"),
    ("running", "failed"),
    ("running", "cancelled"),
}
RUN_REFUSALS = sorted(set(product(AgentRun.Status.values, repeat=2)) - RUN_MOVES)
END_EVENTS = {"completed": "run.completed", "failed": "run.failed", "cancelled": "run.cancelled"}


def ids(pairs) -> list[str]:
    return [f"{from_status}->{to_status}" for from_status, to_status in pairs]


def leased_run(status: str) -> AgentRun:
    """A run in `status` whose lease a step holds."""
    return AgentRunFactory(
        status=status, lease_owner="step-1", lease_expires_at=timezone.now() + timedelta(minutes=1)
    )


def row(run: AgentRun) -> dict:
    return AgentRun.objects.values().get(pk=run.pk)


def events(run: AgentRun) -> list[tuple[str, dict]]:
    return list(RunEvent.objects.filter(run=run).order_by("seq").values_list("type", "data"))


@pytest.mark.parametrize(
    ("from_status", "to_status"), sorted(RUN_MOVES), ids=ids(sorted(RUN_MOVES))
)
def test_it_makes_each_allowed_run_transition(from_status, to_status):
    # Given a run in `from_status`
    run = leased_run(from_status)

    # When it moves to `to_status`
    moved = run_transition(
        run_id=run.pk, to_status=to_status, event_data={"by": "test"}, step_count=3
    )

    # Then it moved with the extra column; an ending gives up the lease and says so in one event
    assert moved is True
    after = row(run)
    assert (after["status"], after["step_count"]) == (to_status, 3)
    if to_status in END_EVENTS:
        assert (after["lease_owner"], after["lease_expires_at"]) == ("", None)
        assert events(run) == [(END_EVENTS[to_status], {"by": "test"})]
    else:
        assert after["lease_owner"] == "step-1"
        assert events(run) == []


@pytest.mark.parametrize(("from_status", "to_status"), RUN_REFUSALS, ids=ids(RUN_REFUSALS))
def test_it_refuses_every_other_run_transition_and_changes_nothing(from_status, to_status):
    # Given a run in `from_status`
    run = leased_run(from_status)
    before = row(run)

    # When something tries to move it to `to_status`
    moved = run_transition(
        run_id=run.pk, to_status=to_status, event_data={"by": "test"}, step_count=3
    )

    # Then it was refused: nothing changed and no event was written
    assert moved is False
    assert row(run) == before
    assert events(run) == []


def test_it_refuses_an_allowed_transition_whose_condition_no_longer_holds():
    # Given a running run whose lease another step took over
    run = leased_run("running")
    before = row(run)

    # When the step that lost the lease tries to complete it
    moved = run_transition(
        run_id=run.pk,
        to_status="completed",
        where={"lease_owner": "step-0"},
        event_data={"by": "step-0"},
    )

    # Then nothing changed
    assert moved is False
    assert row(run) == before
    assert events(run) == []


@pytest.mark.parametrize(
    ("stop_reason", "status", "event"),
    [
        (
            "final_answer",
            "completed",
            ("run.completed", {"stop_reason": "final_answer", "final_answer": "Paid 129.00."}),
        ),
        (
            "max_steps",
            "completed",
            ("run.completed", {"stop_reason": "max_steps", "final_answer": "Paid 129.00."}),
        ),
        ("error", "failed", ("run.failed", {"reason": "The model call failed."})),
        ("cancelled", "cancelled", ("run.cancelled", {"by": "cancel request"})),
    ],
)
def test_it_ends_a_run_as_its_stop_reason_says(stop_reason, status, event):
    # Given a running run whose lease this step holds
    run = leased_run("running")
    answer = "Paid 129.00." if status == "completed" else ""
    error = "The model call failed." if status == "failed" else ""

    # When the step ends it
    ended = services.run_finish(
        run=run, owner="step-1", stop_reason=stop_reason, final_answer=answer, error=error
    )

    # Then it ended that way, with its event; only an answer is posted on the ticket
    assert ended is True
    assert (run.status, run.stop_reason, run.final_answer, run.error, run.lease_owner) == (
        status,
        stop_reason,
        answer,
        error,
        "",
    )
    assert events(run) == [event]
    posted = TicketMessage.objects.filter(ticket=run.ticket, author_kind="assistant")
    assert list(posted.values_list("body", flat=True)) == ([answer] if answer else [])


def test_a_step_that_lost_its_lease_cannot_end_the_run():
    # Given a running run whose lease another step holds now
    run = leased_run("running")
    before = row(run)

    # When the old step tries to end it
    ended = services.run_finish(
        run=run, owner="step-0", stop_reason="final_answer", final_answer="Stale answer."
    )

    # Then nothing changed: no status, no event, no message on the ticket
    assert ended is False
    assert row(run) == before
    assert events(run) == []
    assert TicketMessage.objects.filter(ticket=run.ticket, author_kind="assistant").count() == 0
