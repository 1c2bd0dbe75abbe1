"""Reads about assistant runs: their transcripts, events and tool calls, and stalled runs."""

from datetime import datetime, timedelta

from django.db.models import Q, QuerySet

from agent.models import AgentMessage, AgentRun, RunEvent, ToolCallLog
from agent.transitions import ACTIVE_STATUSES, END_EVENTS

TERMINAL_EVENT_TYPES = tuple(END_EVENTS.values())
# A run that sits unleased for this long has lost its next step (a message the broker dropped,
# a worker that died between steps): the sweep re-enqueues it.
UNLEASED_GRACE = timedelta(seconds=30)


def run_transcript(*, run: AgentRun) -> list[AgentMessage]:
    # A step that was not handed its run in this process reads it (agent/runtime/handover.py).
    return list(AgentMessage.objects.filter(run_id=run.pk).order_by("seq"))


def run_events(*, run: AgentRun, after: int = 0) -> QuerySet[RunEvent]:
    return RunEvent.objects.filter(run=run, seq__gt=after).order_by("seq")


def run_tool_calls(*, run: AgentRun) -> QuerySet[ToolCallLog]:
    return ToolCallLog.objects.filter(run=run).select_related("actor").order_by("created_at", "id")


def stalled_runs(*, now: datetime, limit: int = 100) -> list[tuple]:
    """(id, version) of active runs whose step died: lease expired, or no lease for too long."""
    expired = Q(lease_owner__gt="", lease_expires_at__lt=now)
    orphaned = Q(lease_owner="", updated_at__lt=now - UNLEASED_GRACE)
    return list(
        AgentRun.objects.filter(status__in=ACTIVE_STATUSES)
        .filter(expired | orphaned)
        .order_by("updated_at")
        .values_list("id", "version")[:limit]
    )
