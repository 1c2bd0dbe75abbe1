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
from dataclasses import replace

from django.db import connection, models, transaction
from django.utils import timezone

from agent.live import announce_events, pg_notify_sql
from agent.models import AgentRun, RunEvent
from config.db import Update, update_returning, update_then_insert

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
    return _moving(
        run_id=run_id, to_status=to_status, where=where, any_of=any_of, values=values, add=add
    )


def _moving(
    *,
    run_id: uuid.UUID | str,
    to_status: str,
    where: dict | None,
    any_of: Sequence[tuple[str, str, object]],
    values: dict,
    add: dict | None,
) -> Update:
    """The UPDATE that moves the run to `to_status` from any status the table allows."""
    return Update(
        AgentRun,
        where={"pk": run_id, **(where or {})},
        where_in={"status": sources_of(to_status)},
        values={"status": to_status, "updated_at": timezone.now(), **values},
        add=add,
        any_of=any_of,
    )


def write_with_events(
    update: Update,
    events: Sequence[RunEvent],
    *,
    rows: Sequence[Sequence[models.Model]] = (),
    durable: bool = True,
) -> bool:
    """`update` of one run and, only if it matched, `events` (unsaved, of that run) numbered
    from the run's event counter, which the UPDATE moves on past them, and `rows` (groups of
    unsaved instances of one model each), in one transaction; the events are announced to
    the live streams once it commits. On PostgreSQL it is one statement, its commit included
    when no transaction is open (config.db.update_then_insert); not `durable`, that commit does
    not wait for the disk. Each event gets its seq. False: no row matched, nothing written.

    The UPDATE locks the run's row until the transaction ends, so concurrent appends (a step,
    its streamed answer, a cancel from the API) take turns instead of racing for MAX(seq) + 1.
    """
    update = replace(
        update,
        add={**(update.add or {}), **({"last_event_seq": len(events)} if events else {})},
        returning="last_event_seq",
    )
    run_id = str(update.where["pk"])
    if connection.vendor == "postgresql":
        # Inserted as offsets from the counter as the UPDATE leaves it: -n+1 .. 0.
        _number(events, last=0)
        notify = pg_notify_sql(run_id=run_id, seq_sql="held.last_event_seq") if events else None
        last = update_then_insert(
            update,
            inserts=[events, *rows],
            relative={RunEvent: "seq"},
            also=[notify] if notify else [],
            durable=durable,
        )
        if last is None:
            return False
        _number(events, last=last)
        if events and notify is None:
            announce_events(run_id=run_id, seq=last)
    else:
        with transaction.atomic():
            last = update_returning(update)
            if last is None:
                return False
            _number(events, last=last)
            if events:
                announce_events(run_id=run_id, seq=last)
            for group in [events, *rows]:
                if group:
                    type(group[0])._default_manager.bulk_create(group)
    return True


def _number(events: Sequence[RunEvent], *, last: int) -> None:
    """Number `events` up to `last`, in order."""
    for offset, event in enumerate(events, start=1 - len(events)):
        event.seq = last + offset


def run_event_append(*, run: AgentRun, type: str, data: dict | None = None) -> RunEvent:
    """Append the next event of `run` (append-only: events are never changed): on
    PostgreSQL one statement, which moves the run's counter on and inserts the event."""
    event = RunEvent(run=run, type=type, data=data or {})
    if not write_with_events(Update(AgentRun, where={"pk": run.pk}), [event]):
        raise AgentRun.DoesNotExist(f"no run {run.pk}")
    return event


def run_transition(
    *,
    run_id: uuid.UUID | str,
    to_status: str,
    where: dict | None = None,
    any_of: Sequence[tuple[str, str, object]] = (),
    add: dict | None = None,
    event_data: dict | None = None,
    **fields,
) -> bool:
    """Move run `run_id` to `to_status` from whatever status it is in, if the table allows
    that and the run matches `where` (field = value) and `any_of` (config.db.Update), writing
    `fields` and adding `add` to counters in the same UPDATE. A run that ends gives up its
    lease and gets its END_EVENTS row (with `event_data`) in the same statement.

    Returns False, and changes nothing, otherwise. The caller re-reads the run for its new
    state.
    """
    ending = to_status in END_EVENTS
    if ending:
        fields.update(lease_owner="", lease_expires_at=None)
    update = _moving(
        run_id=run_id, to_status=to_status, where=where, any_of=any_of, values=fields, add=add
    )
    if not ending:
        return update_returning(update) is not None
    # django-stubs accepts only the pk's own type (UUID) in an FK lookup; Django also takes
    # the str form of a task's run id.
    event = RunEvent(run_id=run_id, type=END_EVENTS[to_status], data=event_data or {})  # type: ignore[misc]
    return write_with_events(update, [event])
