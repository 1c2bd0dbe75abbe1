"""How long the desk keeps what people and models wrote (DESIGN §17).

Past DATA_RETENTION_DAYS the words go, wherever they were copied, and the record of what
happened stays. Blanked or deleted:
  * ticket message bodies are blanked (the message row stays: author, time, public or
    internal, delivered or not);
  * their copies: the `body` of each `message.created` ticket change (GET /api/tickets/<ref>/
    events/) and of each notification it brought (GET /api/notifications/), and escalation
    notes (posted as a message) in `ticket.escalated` changes, `escalated` /
    `escalation_cleared` ticket events and the notifications' `data` and text ("TCK-1 was
    escalated"); each payload gets `"purged": true`, its other keys stay;
  * customers' satisfaction comments (the rating, its time and the agent stay), and their
    copies in `satisfaction.rated` changes, `satisfaction_rated` events and notifications;
  * the reply's words a `claims_confirmed` ticket event and a run's `answer_check` quote
    (each claim's `text` blanked: its order, kind and the real status stay);
  * attachment files: the bytes are deleted from storage and the name becomes "purged"; the
    row stays with its message (so who attached it and when), content type, size and sha256;
  * admin's log entries about a message name it "message <id>" (the name they kept held the
    first words of its body); who did what to it, and when, stay;
  * run transcripts are deleted (AgentMessage rows), run answers and drafts blanked, and the
    payload of each run event replaced by {"purged": true} (its type and time stay);
  * tool results are blanked in ToolCallLog to {"ok": ..., "purged": true} (the row stays
    with its tool, arguments, outcome, error code, actor, role, timing);
  * the requester's words kept on a confirmation version for its reviewer (`requester_note`)
    become {"purged": true};
and, whatever their age, files in attachment storage that no row names and that are over an
hour old (left by a write rolled back after its service returned, or a failed delete).

Kept whatever their age, for audit: refund requests (with their explanation: the evidence
for the refund), their confirmations (parameters, fingerprint, reviewer's decision note) and
refund events; ticket events and changes (types, times, actors, statuses); notifications
(kind, ticket, time, read); tickets with their subject, tags and CC; customers and orders;
tool-call log metadata; MCP tokens (digest) and sessions.

Each kind is purged in batches, each batch its own transaction, so a purge of years of data
holds no long locks and a stopped purge resumes where it was: what is purged is never selected
again.
"""

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from itertools import islice
from typing import Any

from django.conf import settings
from django.contrib.admin.models import LogEntry
from django.contrib.contenttypes.models import ContentType
from django.db import transaction
from django.db.models import F, Q, QuerySet, Value
from django.db.models.functions import Concat
from django.utils import timezone

from agent.models import AgentMessage, AgentRun, RunEvent, ToolCallLog
from refunds.models import RefundConfirmation
from tickets import attachment_files
from tickets.changes import escalation_raised_text
from tickets.models import (
    Attachment,
    Notification,
    SatisfactionSurvey,
    TicketChange,
    TicketEvent,
    TicketMessage,
)

BATCH_SIZE = 1000
PURGED = {"purged": True}
# What a purged attachment is called: its real name may say as much as its bytes.
PURGED_FILENAME = "purged"
# How admin's log names a message once purged: "message <id>".
LOGGED_MESSAGE = "message "
# Runs still going may need their transcript; only a run that ended loses it.
ENDED_RUNS = (AgentRun.Status.COMPLETED, AgentRun.Status.FAILED, AgentRun.Status.CANCELLED)
# The payload keys that copy what someone wrote: a message's body, an escalation's note.
WORDS = ("body", "note", "comment")
# The rows whose payload may hold WORDS, or quote a reply's claims.
CHANGES_WITH_WORDS = (
    TicketChange.Type.MESSAGE_CREATED,
    TicketChange.Type.TICKET_ESCALATED,
    TicketChange.Type.SATISFACTION_RATED,
)
NOTIFICATIONS_WITH_WORDS = (
    Notification.Kind.CUSTOMER_REPLIED,
    Notification.Kind.ESCALATED,
    Notification.Kind.ESCALATION_HANDLED,
    Notification.Kind.SATISFACTION_RATED,
)
EVENTS_WITH_WORDS = (
    TicketEvent.Type.ESCALATED,
    TicketEvent.Type.ESCALATION_CLEARED,
    TicketEvent.Type.CLAIMS_CONFIRMED,
    TicketEvent.Type.SATISFACTION_RATED,
    TicketEvent.Type.SATISFACTION_COMMENTED,
)


@dataclass(frozen=True)
class Kind:
    """One kind of data the purge takes: the rows due, and what it does to a batch of them."""

    label: str
    due: Callable[[datetime], QuerySet]
    purge: Callable[[QuerySet], None]

    def count(self, cutoff: datetime) -> int:
        return self.due(cutoff).count()

    def batches(self, cutoff: datetime, size: int) -> Iterator[int]:
        """Purge what is due a batch at a time, each in its own transaction; how many rows each
        batch took."""
        while True:
            with transaction.atomic():
                due = self.due(cutoff).order_by("pk")
                ids = list(due.values_list("pk", flat=True)[:size])
                if not ids:
                    return
                self.purge(due.model.objects.filter(pk__in=ids))
            yield len(ids)


@dataclass(frozen=True)
class FileKind:
    """Files in storage with no row to select them by: `due` names them, `purge` deletes a
    batch of names."""

    label: str
    due: Callable[[datetime], Iterator[str]]
    purge: Callable[[list[str]], None]

    def count(self, cutoff: datetime) -> int:
        return sum(1 for _ in self.due(cutoff))

    def batches(self, cutoff: datetime, size: int) -> Iterator[int]:
        names = self.due(cutoff)
        while batch := list(islice(names, size)):
            self.purge(batch)
            yield len(batch)


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


def _without_words(data: dict[str, Any]) -> dict[str, Any]:
    """A payload with the words it copied blanked and everything else as it was."""
    blanked: dict[str, Any] = {key: "" for key in WORDS if key in data}
    if "claims" in data:
        blanked["claims"] = _claims_without_words(data["claims"])
    return {**data, **blanked, **PURGED}


def _claims_without_words(claims: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Claims the claim check read in a reply or answer, without the sentence it quoted."""
    return [{**claim, "text": ""} for claim in claims]


def _blank_payloads(rows: QuerySet) -> None:
    """Blank the words in each row's `data` (ticket changes, events, notifications)."""
    batch = list(rows)
    for row in batch:
        row.data = _without_words(row.data)
    rows.model.objects.bulk_update(batch, ["data"])


def _blank_comments(rows: QuerySet) -> None:
    rows.update(comment="")


def _blank_notifications(rows: QuerySet) -> None:
    batch = list(rows.select_related("ticket"))
    for notification in batch:
        notification.data = _without_words(notification.data)
        if notification.kind == Notification.Kind.ESCALATED:
            notification.text = escalation_raised_text(notification.ticket.reference, note="")
        if notification.kind == Notification.Kind.SATISFACTION_RATED:
            # "… rated TCK-1 bad: “comment”": the rating stays, the comment goes.
            notification.text = notification.text.split(": “", 1)[0]
    Notification.objects.bulk_update(batch, ["data", "text"])


def _blank_answer_claims(rows: QuerySet) -> None:
    batch = list(rows)
    for run in batch:
        claims = _claims_without_words(run.answer_check.get("false_claims", []))
        run.answer_check = {**run.answer_check, "false_claims": claims, **PURGED}
    AgentRun.objects.bulk_update(batch, ["answer_check"])


def _purge_attachment_files(rows: QuerySet) -> None:
    # The bytes first: if the rows' update then fails, they are still due and the next purge
    # finishes them (deleting a file that is gone already is no error).
    attachment_files.delete_files(rows.values_list("file", flat=True))
    rows.update(file="", filename=PURGED_FILENAME)


def _admin_log_naming_messages(cutoff: datetime) -> QuerySet:
    """Admin's log entries about messages: each keeps the message's name as it was then,
    which held the first words of its body."""
    return LogEntry.objects.filter(
        content_type=ContentType.objects.get_for_model(TicketMessage), action_time__lt=cutoff
    ).exclude(object_repr__startswith=LOGGED_MESSAGE)


def _rename_logged_messages(rows: QuerySet) -> None:
    rows.update(object_repr=Concat(Value(LOGGED_MESSAGE), F("object_id")))


def _older(model, cutoff: datetime) -> QuerySet:
    return model.objects.filter(created_at__lt=cutoff)


def _words_not_purged(rows: QuerySet, field: str = "data") -> QuerySet:
    return rows.exclude(**{f"{field}__has_key": "purged"})


KINDS: tuple[Kind | FileKind, ...] = (
    Kind(
        "ticket message bodies",
        lambda cutoff: _older(TicketMessage, cutoff).exclude(body=""),
        _blank_bodies,
    ),
    Kind(
        "words in ticket changes",
        lambda cutoff: _words_not_purged(
            _older(TicketChange, cutoff).filter(type__in=CHANGES_WITH_WORDS)
        ),
        _blank_payloads,
    ),
    Kind(
        "words in notifications",
        lambda cutoff: _words_not_purged(
            _older(Notification, cutoff).filter(kind__in=NOTIFICATIONS_WITH_WORDS)
        ),
        _blank_notifications,
    ),
    Kind(
        "words in ticket events",
        lambda cutoff: _words_not_purged(
            _older(TicketEvent, cutoff).filter(type__in=EVENTS_WITH_WORDS)
        ),
        _blank_payloads,
    ),
    Kind(
        "satisfaction comments",
        lambda cutoff: _older(SatisfactionSurvey, cutoff).exclude(comment=""),
        _blank_comments,
    ),
    Kind(
        "attachment files",
        lambda cutoff: _older(Attachment, cutoff).exclude(file=""),
        _purge_attachment_files,
    ),
    Kind(
        "admin log entries naming messages",
        _admin_log_naming_messages,
        _rename_logged_messages,
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
        "claims quoted in run answer checks",
        lambda cutoff: _words_not_purged(
            AgentRun.objects.filter(
                created_at__lt=cutoff,
                status__in=ENDED_RUNS,
                answer_check__has_key="false_claims",
            ),
            "answer_check",
        ),
        _blank_answer_claims,
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
    # Last: the bytes of attachments purged above whose delete failed are among these.
    FileKind(
        "orphan attachment files",
        lambda cutoff: attachment_files.orphans(),
        attachment_files.delete_files,
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
    """Purge what is older than `cutoff` (and files no row names, whatever the cutoff); how
    many of each kind were (or, with `dry_run`, would be) purged. `progress` is told each
    batch."""
    counts: dict[str, int] = {}
    for kind in KINDS:
        if dry_run:
            counts[kind.label] = kind.count(cutoff)
            continue
        done = 0
        for purged in kind.batches(cutoff, batch_size):
            done += purged
            progress(f"{kind.label}: {done} purged so far")
        counts[kind.label] = done
    return counts
