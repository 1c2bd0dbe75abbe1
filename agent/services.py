# Over 400 lines: every write of a run lives here (STYLE: services.py holds the writes).
"""Writes about assistant runs: start, cancel, leases, transcript and event appends, finish.

Every status change of an `AgentRun` goes through its state machine (agent/transitions.py),
a compare-and-swap `UPDATE`: a step holds the run's lease (`lease_owner`), and a write that
finds the lease gone changes nothing.
"""

import math
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from agent.answer_check import ASK, AnswerCheck, Reading, check_answer
from agent.metrics import observe_run_end
from agent.models import AgentMessage, AgentRun, RunEvent, ToolCallLog
from agent.runtime.prompts import PROMPT_VERSION
from agent.tools.registry import TOOLS_VERSION
from agent.transitions import (
    ACTIVE_STATUSES,
    run_event_append,
    run_transition,
    transition_update,
    write_with_events,
)
from config.celery import enqueue_on_commit
from config.connections import read_checking_connection
from config.db import Update, column, select, update_select
from config.errors import ApplicationError, Conflict, Forbidden, RateLimited, wait_in_words
from config.roles import is_supervisor, support_role
from tickets.changes import ticket_change_append
from tickets.models import Ticket, TicketChange, TicketMessage
from tickets.selectors import ticket_thread_from_json, ticket_thread_sql
from tickets.services.messages import ticket_post_message

# How a run ends follows from why it stopped: every other reason ends it with an answer.
ENDED_BY: dict[str, AgentRun.Status] = {
    AgentRun.StopReason.CANCELLED: AgentRun.Status.CANCELLED,
    AgentRun.StopReason.ERROR: AgentRun.Status.FAILED,
}
# Runs and tokens count against a user's fair-use limits for this long after a run starts.
FAIR_USE_WINDOW = timedelta(hours=1)


class RunForbidden(Forbidden):
    code = "run_forbidden"


class RunFinished(Conflict):
    code = "run_finished"


class StepInterrupted(Exception):
    """A step's write found the run changed under it: `cancelled` (the cancel flag is set and
    the step still holds the run), or its lease is gone. Nothing of that write was saved."""

    def __init__(self, *, cancelled: bool):
        super().__init__("cancel requested" if cancelled else "lease lost")
        self.cancelled = cancelled


@dataclass
class StepWrite:
    """What a step saves in one transaction with its hold on the run: transcript messages
    (numbered by the step, the only writer of its run's transcript), tool-call log rows,
    events (numbered from the run row's counter) and amounts to add to the run's counters
    (`counts`: step_count, tokens_in, tokens_out)."""

    messages: list[AgentMessage] = field(default_factory=list)
    logs: list[ToolCallLog] = field(default_factory=list)
    events: list[tuple[str, dict]] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    def event(self, type: str, data: dict) -> None:
        self.events.append((type, data))

    def __bool__(self) -> bool:
        return bool(self.messages or self.logs or self.events or self.counts)


def run_step_save(
    *,
    run: AgentRun,
    owner: str,
    write: StepWrite,
    hand_over_to: str = "",
    durable: bool = True,
    cancelled_ok: bool = False,
    **fields: object,
) -> None:
    """Save `write` and `fields` of the run held by `owner`, in one transaction whose first
    statement is the check that the step still holds the run: a conditional UPDATE on the
    lease and the version the step last wrote (bumped here: `run.version` follows), that the
    run is active and, unless `cancelled_ok`, not asked to cancel. It also renews the lease,
    or hands it to `hand_over_to`, the step the caller enqueues next, and moves the run's
    event counter on, which numbers the events.

    Not `durable`: on PostgreSQL the commit does not wait for the disk (it survives the
    worker dying, not the database server crashing; the step's next durable write makes it
    durable). Raises StepInterrupted when the check fails. The statements are built by
    config.db, without the ORM's compiler (a step makes three of these writes): on PostgreSQL
    the whole write is one statement, sent with its commit in one round trip.
    """
    now = timezone.now()
    held = {"pk": run.pk, "lease_owner": owner, "version": run.version}
    if not cancelled_ok:
        held["cancel_requested"] = False
    values = {
        "lease_expires_at": now + timedelta(seconds=settings.AGENT_LEASE_SECONDS),
        "updated_at": now,
        **fields,
    }
    if hand_over_to:
        values["lease_owner"] = hand_over_to
    update = Update(
        AgentRun,
        where=held,
        where_in={"status": ACTIVE_STATUSES},
        values=values,
        add={"version": 1, **write.counts},
    )
    events = [RunEvent(run=run, type=type, data=data) for type, data in write.events]
    if not write_with_events(update, events, rows=[write.messages, write.logs], durable=durable):
        raise StepInterrupted(cancelled=bool(run_cancel_flag(run=run, owner=owner)))
    run.version += 1


def run_cancel_flag(*, run: AgentRun, owner: str) -> bool | None:
    """The run's cancel flag while the step of `owner` holds it at the version it last wrote
    (None: it lost the run). One read, for a check that no write of the step makes."""
    held = AgentRun.objects.filter(
        pk=run.pk, lease_owner=owner, version=run.version, status__in=ACTIVE_STATUSES
    )
    return held.values_list("cancel_requested", flat=True).first()


def run_held(*, run_id: uuid.UUID | str, owner: str, version: int) -> AgentRun | None:
    """The run as the step it was handed to finds it (None: the hand-over is stale — an
    earlier delivery of the same step took it, or the sweep gave it to another). The read is
    the step's first query: it checks the connection the worker kept since the last task."""
    return read_checking_connection(
        lambda: _run_for_step(
            where={"pk": run_id, "lease_owner": owner, "version": version},
            where_in={"status": ACTIVE_STATUSES},
        )
    )


def _run_for_step(*, taking: Update | None = None, **conditions: Any) -> AgentRun | None:
    # Everything a step's context reads about the run, in one query (config.db: the ORM's
    # compiler costs more than this query), the ticket's thread included: it is set on the
    # run as `ticket_thread`. With `taking`, the UPDATE that takes the run, in the same
    # statement on PostgreSQL. The ticket's customer is left out: the run's own is the scope,
    # and only a run from before customers were bound to runs reads the ticket's
    # (agent.context.RunContext.for_run), with one more query.
    related = ("ticket__order", "started_by", "customer")
    annotate = {"ticket_thread": ticket_thread_sql(column(AgentRun, "ticket", "t0"))}
    if taking is not None:
        runs = update_select(taking, related=related, annotate=annotate)
    else:
        runs = select(AgentRun, related=related, annotate=annotate, **conditions)
    if not runs:
        return None
    run = runs[0]
    # Selected as JSON: the messages from it.
    run.ticket_thread = ticket_thread_from_json(run.ticket_thread)  # type: ignore[arg-type]
    return run


def run_message_append(
    *,
    run: AgentRun,
    role: str,
    content: str = "",
    tool_calls: list | None = None,
    tool_call_id: str = "",
) -> AgentMessage:
    """Append to the transcript outside a step (the run's first message). Precondition: the
    caller holds the run's lease or creates the run, so the next seq is free."""
    last = AgentMessage.objects.filter(run=run).order_by("-seq").values_list("seq", flat=True)
    return AgentMessage.objects.create(
        run=run,
        seq=(last.first() or 0) + 1,
        role=role,
        content=content,
        tool_calls=tool_calls or None,
        tool_call_id=tool_call_id,
    )


@transaction.atomic
def run_start(*, ticket: Ticket, user: User, message: str) -> AgentRun:
    """Queue a run for `user` on `ticket`; the first step is enqueued when this commits."""
    role = support_role(user)
    if role is None:
        raise RunForbidden("Only interns, agents and supervisors may run the assistant.")
    message = message.strip()
    if not message:
        raise ApplicationError("Write a message for the assistant.", code="empty_message")
    model = settings.AGENT_MODEL if settings.LLM_PROVIDER == "openai" else "offline"
    # Counted and created in one transaction under a lock on the user: concurrent starts by
    # one user, from any web process, count each other and never overshoot the limits.
    run_check_fair_use(user=user)
    _refuse_a_merged_ticket(ticket)
    run = AgentRun.objects.create(
        ticket=ticket,
        customer_id=ticket.customer_id,
        started_by=user,
        actor_role=role,
        max_steps=settings.AGENT_MAX_STEPS,
        model=model,
        prompt_version=PROMPT_VERSION,
        tools_version=TOOLS_VERSION,
    )
    run_message_append(run=run, role=AgentMessage.Role.USER, content=message)
    run_event_append(
        run=run,
        type="run.started",
        data={
            "ticket": ticket.reference,
            "actor": user.get_username(),
            "role": role,
            "message": message,
            "model": model,
        },
    )
    ticket_change_append(
        ticket_id=ticket.pk,
        type=TicketChange.Type.RUN_STARTED,
        data={"run": str(run.pk), "actor": user.get_username(), "role": role},
        actor=user,
    )
    # The run stays queued if the broker is down right now: the publish failure is logged and
    # resume_stalled_runs enqueues runs nobody picked up.
    enqueue_on_commit("agent.tasks.advance_run", str(run.pk), expected_version=run.version)
    return run


def _refuse_a_merged_ticket(ticket: Ticket) -> None:
    """A merged ticket's conversation and refunds are on the ticket it was merged into: the
    assistant works there. The row stays locked until the run is created, so a merge either
    sees this run (and waits for it to finish) or comes first and is seen here."""
    merged_into_id = (
        Ticket.objects.select_for_update()
        .filter(pk=ticket.pk)
        .values_list("merged_into", flat=True)
        .first()
    )
    if merged_into_id is not None:
        merged_into = Ticket.objects.values_list("reference", flat=True).get(pk=merged_into_id)
        raise Conflict(
            f"{ticket.reference} was merged into {merged_into}: ask the assistant there.",
            code="ticket_merged",
            extra={"merged_into": merged_into},
        )


def run_check_fair_use(*, user: User) -> None:
    """Refuse a new run when `user` started AGENT_RUNS_PER_HOUR runs, or their runs used
    AGENT_TOKENS_PER_HOUR model tokens, in the last hour (0 turns a limit off). Counted from
    the runs themselves, so the limits hold across web processes.

    The caller creates the run in the same transaction: this locks the user's row
    (SELECT ... FOR NO KEY UPDATE; SQLite's write lock does the same) until it commits. A
    run's tokens count from its start: one already going may take the total past the limit,
    but no run starts once it is reached.
    """
    run_limit, token_limit = settings.AGENT_RUNS_PER_HOUR, settings.AGENT_TOKENS_PER_HOUR
    if not run_limit and not token_limit:
        return
    # NO KEY: run starts of one user wait for each other, but the foreign-key checks of rows
    # naming the user (a refund decision's notification for them, under the ticket's lock)
    # never wait on this lock; FOR UPDATE made such a decision and this start, which goes on
    # to write the same ticket, deadlock.
    users = User.objects.select_for_update(no_key=True).filter(pk=user.pk)
    users.values_list("pk", flat=True).get()
    now = timezone.now()
    # Oldest first: a refusal waits until enough of them have left the window.
    recent = list(
        AgentRun.objects.filter(started_by=user, created_at__gt=now - FAIR_USE_WINDOW)
        .order_by("created_at")
        .values_list("created_at", "tokens_in", "tokens_out")
    )
    started = [created_at for created_at, _, _ in recent]
    usage = {
        "runs": [1] * len(recent),
        "tokens": [tokens_in + tokens_out for _, tokens_in, tokens_out in recent],
    }
    refusals = [
        _fair_use_refusal(kind=kind, limit=limit, started=started, usage=usage[kind], now=now)
        for kind, limit in (("runs", run_limit), ("tokens", token_limit))
        if limit and sum(usage[kind]) >= limit
    ]
    if refusals:
        raise max(refusals, key=lambda refusal: refusal.retry_after)


def _fair_use_refusal(
    *, kind: str, limit: int, started: list[datetime], usage: list[int], now: datetime
) -> RateLimited:
    """The refusal of a start with `usage` (per run, oldest first) at or over `limit`: it
    waits until the run whose leaving takes the total under the limit leaves the window."""
    used = left = sum(usage)
    frees_at = now + FAIR_USE_WINDOW  # never kept: with every run gone nothing is left
    for created_at, amount in zip(started, usage, strict=True):
        left -= amount
        if left < limit:
            frees_at = created_at + FAIR_USE_WINDOW
            break
    retry_after = max(math.ceil((frees_at - now).total_seconds()), 1)
    wait = wait_in_words(retry_after)
    if kind == "runs":
        runs = "run" if used == 1 else "runs"
        message = f"You have started {used} assistant {runs} in the last hour; try again in {wait}."
    else:
        message = (
            f"Your assistant runs used {used:,} model tokens in the last hour (the limit is "
            f"{limit:,}); try again in {wait}."
        )
    return RateLimited(
        message, retry_after=retry_after, extra={"limit": limit, "used": used, "counts": kind}
    )


def run_request_cancel(*, run: AgentRun, user: User) -> AgentRun:
    """The starter or a supervisor may cancel. A run between steps is cancelled at once; a run
    in the middle of a step is cancelled by that step before its next model or tool call."""
    if user.pk != run.started_by_id and not is_supervisor(user):
        raise RunForbidden("Only the agent who started this run or a supervisor may cancel it.")
    now = timezone.now()
    with transaction.atomic():
        flagged = AgentRun.objects.filter(pk=run.pk, status__in=ACTIVE_STATUSES).update(
            cancel_requested=True, updated_at=now
        )
        if not flagged:
            run.refresh_from_db()
            if run.status == AgentRun.Status.CANCELLED:
                return run
            raise RunFinished(f"The run already ended ({run.status}).")
        # A run in the middle of a step does not move here: that step sees the flag set above
        # and ends the run itself.
        if run_transition(
            run_id=run.pk,
            to_status=AgentRun.Status.CANCELLED,
            any_of=[("lease_owner", "=", ""), ("lease_expires_at", "<", now)],
            add={"version": 1},
            event_data={"by": user.get_username()},
            stop_reason=AgentRun.StopReason.CANCELLED,
            updated_at=now,
        ):
            _tell_ticket_run_ended(
                run=run, status=AgentRun.Status.CANCELLED, stop_reason=AgentRun.StopReason.CANCELLED
            )
    run.refresh_from_db()
    return run


def run_acquire_lease(
    *, run_id: uuid.UUID | str, owner: str, expected_version: int | None = None
) -> AgentRun | None:
    """Take the run for one step, or return None when another step holds it, the run ended,
    or (with `expected_version`) this step was already taken by an earlier delivery."""
    now = timezone.now()
    taking = transition_update(
        run_id=run_id,
        to_status=AgentRun.Status.RUNNING,
        where={} if expected_version is None else {"version": expected_version},
        # No step holds it: none ever did, one let it go, or its lease ran out.
        any_of=[("lease_owner", "=", ""), ("lease_expires_at", "<", now)],
        values={
            "lease_owner": owner,
            "lease_expires_at": now + timedelta(seconds=settings.AGENT_LEASE_SECONDS),
            "updated_at": now,
        },
        add={"version": 1},
    )
    return _run_for_step(taking=taking)


def run_renew_lease(*, run: AgentRun, owner: str) -> bool:
    """Extend the lease while a model or tool call is in flight (the step's heartbeat).
    False: the lease was lost."""
    now = timezone.now()
    return bool(
        AgentRun.objects.filter(pk=run.pk, lease_owner=owner, status__in=ACTIVE_STATUSES).update(
            lease_expires_at=now + timedelta(seconds=settings.AGENT_LEASE_SECONDS),
            updated_at=now,
        )
    )


def run_release_lease(*, run: AgentRun, owner: str) -> int | None:
    """End the step; returns the version the next step must find, None if the lease was lost."""
    now = timezone.now()
    released = AgentRun.objects.filter(
        pk=run.pk, lease_owner=owner, status__in=ACTIVE_STATUSES
    ).update(lease_owner="", lease_expires_at=None, updated_at=now)
    if not released:
        return None
    return AgentRun.objects.values_list("version", flat=True).get(pk=run.pk)


# No savepoint of its own inside a caller's transaction (a step saving the reply the answer
# came in): nothing there goes on after a failure here, the whole transaction rolls back.
@transaction.atomic(savepoint=False)
def run_finish(
    *,
    run: AgentRun,
    owner: str,
    stop_reason: str,
    final_answer: str = "",
    error: str = "",
    claim_reading: Reading | Literal["ask"] = ASK,
    **fields: Any,
) -> bool:
    """End the run from the step holding its lease, as `stop_reason` says (ENDED_BY): failed
    with `error`, cancelled because the step saw the cancel flag (before another model or tool
    call), or completed with `final_answer`, which is also posted on the ticket as the
    assistant's internal note, checked first against the refunds that exist (a contradiction
    flags the run and adds a note with the real status). False: the lease was lost, and nothing
    changed. `claim_reading` is the model's reading of the answer (answer_check.read_for_check),
    asked for here unless the caller did before its transaction. `fields` are other run fields
    to set in the same UPDATE."""
    status = ENDED_BY.get(stop_reason, AgentRun.Status.COMPLETED)
    check = AnswerCheck(contradicts=False)
    if status == AgentRun.Status.COMPLETED:
        check = check_answer(answer=final_answer, run=run, reading=claim_reading)
    # The check rides along only when the answer claimed something about a refund.
    checked = {"answer_check": check.as_dict()} if check.claims else {}
    ending: dict[str, dict] = {
        AgentRun.Status.COMPLETED: {
            "stop_reason": stop_reason,
            "final_answer": final_answer,
            **checked,
        },
        AgentRun.Status.FAILED: {"reason": error},
        AgentRun.Status.CANCELLED: {"by": "cancel request"},
    }
    event_data = ending[status]
    if not run_transition(
        run_id=run.pk,
        to_status=status,
        where={"lease_owner": owner},
        event_data=event_data,
        stop_reason=stop_reason,
        final_answer=final_answer,
        answer_contradicts_state=check.contradicts,
        answer_check=checked.get("answer_check", {}),
        error=error,
        **fields,
    ):
        return False
    if status == AgentRun.Status.COMPLETED:
        ticket_post_message(
            ticket=run.ticket, author_kind=TicketMessage.AuthorKind.ASSISTANT, body=final_answer
        )
        if check.contradicts:
            ticket_post_message(
                ticket=run.ticket, author_kind=TicketMessage.AuthorKind.SYSTEM, body=check.note()
            )
    _tell_ticket_run_ended(run=run, status=status, stop_reason=stop_reason)
    run.refresh_from_db()
    # Counted once the end is committed: a step rolled back after this ends nothing.
    steps, tokens_in, tokens_out = run.step_count, run.tokens_in, run.tokens_out
    transaction.on_commit(
        lambda: observe_run_end(
            stop_reason=stop_reason, steps=steps, tokens_in=tokens_in, tokens_out=tokens_out
        )
    )
    return True


def _tell_ticket_run_ended(*, run: AgentRun, status: str, stop_reason: str) -> None:
    """`run.completed` on the ticket's live stream, however the run ended (`status` says how),
    after the answer it posted on the ticket."""
    ticket_change_append(
        ticket_id=run.ticket_id,
        type=TicketChange.Type.RUN_COMPLETED,
        data={"run": str(run.pk), "status": status, "stop_reason": stop_reason},
    )
