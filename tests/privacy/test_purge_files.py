"""Attachment files and retention (issue 43, finding 2): past DATA_RETENTION_DAYS a file's bytes
and name go and the record of it stays; a write that rolls back leaves no bytes; deleting a
ticket deletes its files; files nobody's row names are swept by the purge."""

import hashlib
import os
import time
from datetime import timedelta
from io import StringIO
from typing import cast

import pytest
from django.contrib.auth import get_user_model
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.core.management import call_command
from django.db import DatabaseError, transaction
from django.utils import timezone
from rest_framework.test import APIClient

from tests.factories import TicketFactory
from tests.tickets.test_attachments import PDF
from tickets import attachments, changes, services
from tickets.attachments import Upload
from tickets.models import Attachment, Ticket, TicketMessage

# Every file in a folder of the test's own.
pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("media")]

LABEL = b"Return label for Li Wei, 12 Quokka Lane"


def stored_files(media) -> list[str]:
    return sorted(str(path.relative_to(media)) for path in media.rglob("*") if path.is_file())


def name_of(attachment: Attachment) -> str:
    """Where its bytes are in storage."""
    return str(attachment.file.name)


def a_note_with_files(agent, *files: Upload) -> TicketMessage:
    return services.ticket_write(
        ticket=cast(Ticket, TicketFactory()),
        author=agent,
        body="The customer's files.",
        visibility="internal",
        files=list(files),
    )


def backdate(message: TicketMessage, days: int) -> None:
    past = timezone.now() - timedelta(days=days)
    TicketMessage.objects.filter(pk=message.pk).update(created_at=past)
    Attachment.objects.filter(message=message).update(created_at=past)


def age_file(media, name: str, seconds: int) -> None:
    then = time.time() - seconds
    os.utime(media / name, (then, then))


def purge(*args: str) -> str:
    out = StringIO()
    call_command("purge_data", *args, stdout=out)
    return out.getvalue()


def test_it_deletes_the_bytes_and_the_name_of_files_past_retention_and_keeps_their_record(
    agent_user, media
):
    # Given a file attached 400 days ago and one attached 10 days ago
    old_note = a_note_with_files(agent_user, Upload("li-wei-passport.pdf", PDF))
    new_note = a_note_with_files(agent_user, Upload("label.txt", LABEL))
    backdate(old_note, 400)
    backdate(new_note, 10)
    [old] = old_note.attachments.all()
    [new] = new_note.attachments.all()
    old_bytes = name_of(old)

    # When the purge runs
    text = purge()

    # Then the old file's bytes are gone from storage and its name with them
    old.refresh_from_db()
    assert not default_storage.exists(old_bytes)
    assert stored_files(media) == [name_of(new)]
    assert (old.filename, old.file.name) == ("purged", "")
    # and the record stays: who attached it (its message's author), when, its size, type, digest
    assert (old.message.author, old.message.author_kind) == (agent_user, "agent")
    assert (old.content_type, old.size) == ("application/pdf", len(PDF))
    assert old.sha256 == hashlib.sha256(PDF).hexdigest()
    assert old.created_at < timezone.now() - timedelta(days=399)
    # and the desk shows it as purged: no download, no name
    client = APIClient()
    client.force_authenticate(agent_user)
    reference = old_note.ticket.reference
    download = client.get(f"/api/tickets/{reference}/attachments/{old.pk}/")
    assert (download.status_code, download.json()["code"]) == (404, "attachment_purged")
    [shown] = client.get(f"/api/tickets/{reference}/").json()["messages"][0]["attachments"]
    assert (shown["filename"], shown["size"]) == ("purged", len(PDF))
    assert "passport" not in client.get(f"/tickets/{reference}/").content.decode()
    # and the recent file is untouched
    assert default_storage.open(name_of(new)).read() == LABEL
    assert "attachment files: 1 purged" in text
    # and a second purge finds nothing left to do
    assert "attachment files: 0 purged" in purge()


def test_a_dry_run_counts_old_files_and_orphans_and_deletes_none(agent_user, media):
    old_note = a_note_with_files(agent_user, Upload("photo.pdf", PDF))
    backdate(old_note, 400)
    default_storage.save("attachments/TCK-1/0123456789abcdef", ContentFile(b"left behind"))
    age_file(media, "attachments/TCK-1/0123456789abcdef", 2 * 3600)
    before = stored_files(media)

    text = purge("--dry-run")

    assert "attachment files: 1 would be purged" in text
    assert "orphan attachment files: 1 would be purged" in text
    assert stored_files(media) == before
    assert Attachment.objects.get().filename == "photo.pdf"


def test_a_reply_whose_transaction_fails_after_its_files_were_stored_leaves_no_bytes(
    agent_user, media, monkeypatch
):
    # Given a database failure after the reply's files are written, before it commits
    def fails(message):
        raise DatabaseError("the connection was lost")

    monkeypatch.setattr(changes, "message_created", fails)

    # When an agent sends a reply with two files
    with pytest.raises(DatabaseError):
        services.ticket_write(
            ticket=cast(Ticket, TicketFactory()),
            author=agent_user,
            body="Here is your label.",
            visibility="public",
            files=[Upload("label.pdf", PDF), Upload("label.txt", LABEL)],
        )

    # Then neither the rows nor the bytes are kept
    assert Attachment.objects.count() == 0
    assert stored_files(media) == []


def test_an_inbound_email_failing_between_its_files_leaves_no_bytes(db, media, monkeypatch):
    # Given a failure while the second file of an email is stored, after the first was written
    typed = []

    def type_of(content: bytes) -> str:
        typed.append(content)
        if len(typed) == 2:
            raise DatabaseError("the connection was lost")
        return "application/pdf"

    monkeypatch.setattr(attachments, "content_type_of", type_of)

    with pytest.raises(DatabaseError):
        services.ticket_receive_email(
            sender="li.wei@example.com",
            name="Li Wei",
            subject="Broken mug",
            body="Two photos.",
            message_id="<two-photos@example.com>",
            files=[Upload("one.pdf", PDF), Upload("two.pdf", PDF)],
        )

    assert TicketMessage.objects.filter(message_id="<two-photos@example.com>").count() == 0
    assert stored_files(media) == []


def test_the_purge_sweeps_files_no_row_names_once_they_are_an_hour_old(agent_user, media):
    # Given a file whose write was rolled back by the caller's own transaction after the
    # service had returned (the service cannot see that), a kept file, and an upload in progress
    with pytest.raises(RuntimeError), transaction.atomic():
        a_note_with_files(agent_user, Upload("rolled-back.pdf", PDF))
        raise RuntimeError("the caller failed")
    [left] = stored_files(media)
    kept = a_note_with_files(agent_user, Upload("kept.pdf", PDF)).attachments.get()
    age_file(media, name_of(kept), 2 * 3600)
    default_storage.save("attachments/TCK-9/fedcba9876543210", ContentFile(b"being written"))

    # When the purge runs before the leftover is an hour old, and after
    first = purge()
    age_file(media, left, 2 * 3600)
    second = purge()

    # Then the leftover is deleted only once it is an hour old, and nothing else is
    assert "orphan attachment files: 0 purged" in first
    assert "orphan attachment files: 1 purged" in second
    assert stored_files(media) == sorted([name_of(kept), "attachments/TCK-9/fedcba9876543210"])


def test_deleting_a_ticket_deletes_its_files(agent_user, media, django_capture_on_commit_callbacks):
    doomed = a_note_with_files(agent_user, Upload("a.pdf", PDF), Upload("b.txt", LABEL)).ticket
    other = a_note_with_files(agent_user, Upload("c.pdf", PDF)).attachments.get()

    with django_capture_on_commit_callbacks(execute=True):
        Ticket.objects.filter(pk=doomed.pk).delete()

    assert stored_files(media) == [name_of(other)]


def test_deleting_a_ticket_in_admin_deletes_its_files(
    client, media, agent_user, django_capture_on_commit_callbacks
):
    ticket = a_note_with_files(agent_user, Upload("a.pdf", PDF)).ticket
    admin = get_user_model().objects.create_superuser("root", "root@example.com", "pw-123456")
    client.force_login(admin)

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"/admin/tickets/ticket/{ticket.pk}/delete/", {"post": "yes"})

    assert response.status_code == 302
    assert not Ticket.objects.filter(pk=ticket.pk).exists()
    assert stored_files(media) == []


def test_a_deletion_that_rolls_back_keeps_the_files(
    agent_user, media, django_capture_on_commit_callbacks
):
    ticket = a_note_with_files(agent_user, Upload("a.pdf", PDF)).ticket
    before = stored_files(media)

    with (
        django_capture_on_commit_callbacks(execute=True),
        pytest.raises(RuntimeError),
        transaction.atomic(),
    ):
        ticket.delete()
        raise RuntimeError("the deletion failed")

    assert stored_files(media) == before
    assert Attachment.objects.count() == 1
