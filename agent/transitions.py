"""The AgentRun state machine (DESIGN §4, §7) and the run's event log. Every status change of
a run goes through `run_transition`, or `transition_update` where the caller reads the run
back in the same statement.

A run is raced by the steps of its task (each holding the run's lease) and by cancels from
the API, so a transition never trusts the caller's copy of the run: it is one conditional
UPDATE from every status the table allows, narrowed by the caller's own condition (its lease,
the version it expects). An UPDATE that matches no row changes nothing: someone else moved the
run first, or the run is in a status the table does not let it leave that way.
"""

import uuid
from collections.abc import Sequence
from contextlib import nullcontext

from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from agent.live import announce_events
from agent.models import AgentRun, RunEvent
from config.db import Update

R = AgentRun.Status

ALLOWED = {
    # The first step takes the run, or a cancel ends it before any step ran.
    R.QUEUED: {R.RUNNING, R.CANCELLED},
    # Each later step takes it again (a new lease, a new version); a step ends it, or a cancel
    # does between steps.
    R.RUNNING: {R.RUNNING, R.COMPLETED, R.FAILED, R.CANCELLED},
}
# A run is active while the table still lets it move.
ACTIVE_STATUSES = tuple(ALLOWED)
# The event that says how a run ended: the last thing the UI streams for it.
END_EVENTS: dict[str, str] = {
    R.COMPLETED: "run.completed",
    R.FAILED: "run.failed",
    R.CANCELLED: "run.cancelled",
}


def sources_of(to_status: str) -> list[str]:
    """The statuses the table lets a run leave for `to_status`."""
    return [status for status, targets in ALLOWED.items() if to_status in targets]


def transition_update(
    *,
    run_id: uuid.UUID | str,
    to_status: str,
    where: dict | None = None,
    any_of: Sequence[tuple[str, str, object]] = (),
    values: dict,
    add: dict | None = None,
) -> Update:
    """`run_transition`'s conditional UPDATE as a config.db Update, for a caller that reads
    the run back in the same statement (a step taking its lease: agent.services
    .run_acquire_lease). Not for an ending, which adds its event."""
    assert to_status not in END_EVENTS, "an ending goes through run_transition"
    return Update(
        AgentRun,
        where={"pk": run_id, **(where or {})},
        where_in={"status": sources_of(to_status)},
        values={"status": to_status, "updated_at": timezone.now(), **values},
        add=add,
        any_of=any_of,
        returning="pk",
    )


def take_event_seqs(*, run_id: uuid.UUID | str, count: int) -> int:
    """Inside a transaction: reserve the run's next `count` event numbers and return the
    first. The UPDATE locks the run row until the transaction ends, so concurrent appends
    (a step, a cancel from the API) take turns instead of racing for MAX(seq) + 1."""
    runs = AgentRun.objects.filter(pk=run_id)
    runs.update(last_event_seq=F("last_event_seq") + count)
    return runs.values_list("last_event_seq", flat=True).get() - count + 1


def _append_event(*, run_id: uuid.UUID | str, type: str, data: dict | None) -> RunEvent:
    with transaction.atomic():
        seq = take_event_seqs(run_id=run_id, count=1)
        announce_events(run_id=run_id, seq=seq)
        # django-stubs accepts only the pk's own type (UUID) in an FK lookup; Django also
        # takes the str form that run_transition accepts (a task's run id).
        return RunEvent.objects.create(run_id=run_id, seq=seq, type=type, data=data or {})  # type: ignore[misc]


def run_event_append(*, run: AgentRun, type: str, data: dict | None = None) -> RunEvent:
    """Append the next event of `run` (append-only: events are never changed)."""
    return _append_event(run_id=run.pk, type=type, data=data)


def run_transition(
    *,
    run_id: uuid.UUID | str,
    to_status: str,
    when: Q | None = None,
    event_data: dict | None = None,
    **fields,
) -> bool:
    """Move run `run_id` to `to_status` from whatever status it is in, if the table allows
    that and `when` holds, writing `fields` in the same UPDATE. A run that ends gives up its
    lease and gets its END_EVENTS row (with `event_data`) in the same transaction.

    Returns False, and changes nothing, otherwise. The caller re-reads the run for its new
    state.
    """
    sources = sources_of(to_status)
    ending = to_status in END_EVENTS
    changes = {"updated_at": timezone.now(), **fields}
    if ending:
        changes.update(lease_owner="", lease_expires_at=None)
    # One UPDATE commits on its own; an ending adds its event in the same transaction.
    with transaction.atomic() if ending else nullcontext():
        moved = (
            AgentRun.objects.filter(pk=run_id, status__in=sources)
            .filter(when or Q())
            .update(status=to_status, **changes)
        )
        if not moved:
            return False
        if ending:
            _append_event(run_id=run_id, type=END_EVENTS[to_status], data=event_data)
    return True
