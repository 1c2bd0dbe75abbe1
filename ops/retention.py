"""How long the desk keeps what people and models wrote (DESIGN §17).

Past DATA_RETENTION_DAYS the words go and the record of what happened stays:
  * ticket message bodies are blanked (the message row stays: who, when, public or internal,
    delivered or not);
  * run transcripts are deleted (AgentMessage rows), run answers blanked, and the payload of
    each run event replaced by {"purged": true} (its type and time stay);
  * tool results are blanked in ToolCallLog to {"ok": ..., "purged": true} (the row stays
    with its tool, arguments, outcome, error code, actor, role, timing);
  * the requester's words kept on a confirmation version for its reviewer (`requester_note`)
    become {"purged": true};
kept whatever their age, for audit: refund requests, their confirmations and events, ticket
events, customers and orders.

Each kind is purged in batches, each batch its own transaction, so a purge of years of data
holds no long locks and a stopped purge resumes where it was: what is purged is never selected
again.
"""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from agent.models import AgentMessage, AgentRun, RunEvent, ToolCallLog
from refunds.models import RefundConfirmation
from tickets.models import TicketMessage

BATCH_SIZE = 1000
PURGED = {"purged": True}
# Runs still going may need their transcript; only a run that ended loses it.
ENDED_RUNS = (AgentRun.Status.COMPLETED, AgentRun.Status.FAILED, AgentRun.Status.CANCELLED)


@dataclass(frozen=True)
class Kind:
    """One kind of data the purge takes: the rows due, and what it does to a batch of them."""

    label: str
    due: Callable[[datetime], QuerySet]
    purge: Callable[[QuerySet], None]


def _blank_bodies(rows: QuerySet) -> None:
    rows.update(body="")


def _blank_answers(rows: QuerySet) -> None:
    rows.update(final_answer="", draft_reply="")


def _delete(rows: QuerySet) -> None:
    rows.delete()


def _blank_event_data(rows: QuerySet) -> None:
    rows.update(data=PURGED)


def _blank_notes(rows: QuerySet) -> None:
    rows.update(requester_note=PURGED)


def _blank_results(rows: QuerySet) -> None:
    rows.filter(ok=True).update(result={"ok": True, **PURGED}, full_result="")
    rows.filter(ok=False).update(result={"ok": False, **PURGED}, full_result="")


KINDS = (
    Kind(
        "ticket message bodies",
        lambda cutoff: TicketMessage.objects.filter(created_at__lt=cutoff).exclude(body=""),
        _blank_bodies,
    ),
    Kind(
        "run transcript messages",
        lambda cutoff: AgentMessage.objects.filter(
            created_at__lt=cutoff, run__status__in=ENDED_RUNS
        ),
        _delete,
    ),
    Kind(
        "run answers and customer drafts",
        lambda cutoff: AgentRun.objects.filter(
            created_at__lt=cutoff, status__in=ENDED_RUNS
        ).exclude(final_answer="", draft_reply=""),
        _blank_answers,
    ),
    Kind(
        "run event payloads",
        lambda cutoff: RunEvent.objects.filter(
            created_at__lt=cutoff, run__status__in=ENDED_RUNS
        ).exclude(data=PURGED),
        _blank_event_data,
    ),
    Kind(
        "tool results",
        lambda cutoff: ToolCallLog.objects.filter(created_at__lt=cutoff).exclude(
            Q(result__has_key="purged")
        ),
        _blank_results,
    ),
    Kind(
        "the requester's words on proposals",
        lambda cutoff: RefundConfirmation.objects.filter(
            created_at__lt=cutoff, requester_note__has_key="words"
        ),
        _blank_notes,
    ),
)


def retention_cutoff(now: datetime | None = None) -> datetime:
    return (now or timezone.now()) - timedelta(days=settings.DATA_RETENTION_DAYS)


def purge_expired_data(
    *,
    cutoff: datetime,
    dry_run: bool = False,
    progress: Callable[[str], None] = lambda line: None,
    batch_size: int = BATCH_SIZE,
) -> dict[str, int]:
    """Purge what is older than `cutoff`; how many rows of each kind were (or, with
    `dry_run`, would be) purged. `progress` is told each batch."""
    counts: dict[str, int] = {}
    for kind in KINDS:
        if dry_run:
            counts[kind.label] = kind.due(cutoff).count()
            continue
        done = 0
        while True:
            with transaction.atomic():
                due = kind.due(cutoff).order_by("pk")
                ids = list(due.values_list("pk", flat=True)[:batch_size])
                if not ids:
                    break
                kind.purge(due.model.objects.filter(pk__in=ids))
            done += len(ids)
            progress(f"{kind.label}: {done} purged so far")
        counts[kind.label] = done
    return counts
