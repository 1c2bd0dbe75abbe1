"""Where attachments' bytes live, and when they go (DESIGN §15, §17).

A file is written to storage before its row, inside the transaction that writes the message
(storage cannot take part in a database transaction). So that no bytes outlive the rows that
name them:
* a write that rolls back deletes the files it stored: services that attach files run in
  `atomic()` instead of `transaction.atomic`;
* a deleted row (a ticket deleted in admin, a cascade) deletes its file once the deletion
  commits (`delete_file_with_row`, connected in TicketsConfig.ready());
* whatever is still left (a caller's own transaction rolled back after the service returned, a
  storage outage during a delete, a process killed between the two) is a file no row names:
  the purge sweeps those once they are an hour old (`orphans`), so an upload still in progress
  is never touched.
"""

import logging
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime, timedelta
from itertools import islice

from django.core.files.storage import default_storage
from django.db import transaction
from django.utils import timezone

from tickets.models import Attachment

logger = logging.getLogger(__name__)

# The storage folder attachment_path() puts every file under.
FOLDER = "attachments"
# An upload older than this whose row is still missing will never get one.
ORPHAN_AFTER = timedelta(hours=1)
# Checked against the rows this many names at a time.
ORPHAN_CHECK_BATCH = 500

# The files stored inside the innermost `atomic()` still open in this thread (or task).
_stored: ContextVar[list[str] | None] = ContextVar("attachment_files_stored", default=None)


@contextmanager
def atomic() -> Iterator[None]:
    """`transaction.atomic` for a write that stores attachment files: if it rolls back (an
    exception leaves the block), the files stored in it are deleted from storage too. Nested,
    an inner block that succeeds hands its files to the outer one, which deletes them if it
    fails. Usable as a decorator: `@attachment_files.atomic()`."""
    outer = _stored.get()
    stored: list[str] = []
    token = _stored.set(stored)
    try:
        with transaction.atomic():
            yield
    except BaseException:
        delete_files(stored)
        raise
    finally:
        _stored.reset(token)
    if outer is not None:
        outer.extend(stored)


def note_stored(name: str) -> None:
    """Tell the open `atomic()` block that `name` was written to storage (no block: the orphan
    sweep is what cleans up after a failure)."""
    stored = _stored.get()
    if stored is not None:
        stored.append(name)


def delete_files(names: Iterable[str]) -> None:
    """Delete these files from storage; a failure is logged, and the orphan sweep retries it
    (a name no row holds is an orphan)."""
    for name in names:
        try:
            default_storage.delete(name)
        except OSError as error:
            logger.warning("Could not delete attachment file %s: %s", name, error)


def delete_file_with_row(sender, instance: Attachment, **kwargs) -> None:
    """post_delete of an Attachment: its file goes once the deletion commits (a deletion
    rolled back keeps both)."""
    name = instance.file.name
    if name:
        transaction.on_commit(lambda: delete_files([name]), robust=True)


def orphans(*, older_than: datetime | None = None) -> Iterator[str]:
    """The files in the attachments folder that no Attachment row names and that were last
    written before `older_than` (default: an hour ago)."""
    older_than = older_than or timezone.now() - ORPHAN_AFTER
    names = _files_under(FOLDER)
    while batch := list(islice(names, ORPHAN_CHECK_BATCH)):
        named = set(Attachment.objects.filter(file__in=batch).values_list("file", flat=True))
        for name in batch:
            if name not in named and _written_before(name, older_than):
                yield name


def _files_under(folder: str) -> Iterator[str]:
    try:
        folders, files = default_storage.listdir(folder)
    except FileNotFoundError:
        return
    for file in sorted(files):
        yield f"{folder}/{file}"
    for inner in sorted(folders):
        yield from _files_under(f"{folder}/{inner}")


def _written_before(name: str, moment: datetime) -> bool:
    # A storage that cannot say when a file was written never has it swept: it may be new.
    try:
        return default_storage.get_modified_time(name) < moment
    except (NotImplementedError, FileNotFoundError):
        return False
