"""Files carried by messages (DESIGN §15): checked (size, count), named safely, typed from their
bytes, and kept through Django's storage API (STORAGES["default"]: MEDIA_ROOT on disk unless
ATTACHMENT_STORAGE_BACKEND names another). Nothing here trusts what the sender says a file is:
its declared name is sanitised and its declared type ignored."""

import hashlib
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from http import HTTPStatus

import puremagic
from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.uploadedfile import UploadedFile

from config.errors import ApplicationError
from tickets import attachment_files
from tickets.models import Attachment, TicketMessage

UNKNOWN_TYPE = "application/octet-stream"
FALLBACK_NAME = "attachment"
NAME_MAX_CHARS = 150
# Control characters, and the separators and quotes a header or a path would take for its own.
UNSAFE_IN_NAME = re.compile(r'[\x00-\x1f\x7f-\x9f/\\:*?"<>|;]')


class TooLarge(ApplicationError):
    """Over ATTACHMENT_MAX_BYTES for a file, or ATTACHMENT_MESSAGE_MAX_BYTES for a message."""

    status_code = HTTPStatus.REQUEST_ENTITY_TOO_LARGE
    code = "attachment_too_large"


class Purged(ApplicationError):
    """The file's bytes were deleted past DATA_RETENTION_DAYS (ops/retention.py)."""

    status_code = HTTPStatus.NOT_FOUND
    code = "attachment_purged"


@dataclass(frozen=True)
class Upload:
    """A file as received: the sender's name for it and its bytes (its declared type is not
    kept: see content_type_of)."""

    filename: str
    content: bytes


def message_body_limit() -> int:
    """The largest request body a message with files may need: its files at the per-message
    limit, in base64 (4/3 of their size) for the inbound webhook, and a megabyte for the text."""
    return settings.ATTACHMENT_MESSAGE_MAX_BYTES * 4 // 3 + 1024 * 1024


def body_too_large(content_length: str | None) -> bool:
    """Whether a request's declared Content-Length is over message_body_limit(): refused
    before a byte is read (multipart files would otherwise be spooled to disk first)."""
    try:
        return int(content_length or 0) > message_body_limit()
    except ValueError:
        return False


def uploads_from(files: Sequence[UploadedFile]) -> list[Upload]:
    """Uploaded files (multipart) as Uploads, each size checked before its bytes are read."""
    for file in files:
        if file.size is not None and file.size > settings.ATTACHMENT_MAX_BYTES:
            raise TooLarge(
                f"Attachment {safe_filename(file.name or '')} is larger than "
                f"{_megabytes(settings.ATTACHMENT_MAX_BYTES)}.",
                extra={"limit_bytes": settings.ATTACHMENT_MAX_BYTES},
            )
    return [Upload(filename=file.name or "", content=file.read()) for file in files]


def safe_filename(name: str) -> str:
    """The last part of `name` with no path, control, format (bidi, zero-width) or
    header-breaking characters, NFC-normalised and at most NAME_MAX_CHARS long (the extension
    kept); FALLBACK_NAME when nothing is left ("../../", "", a name of dots)."""
    name = unicodedata.normalize("NFC", name or "")
    name = without_format_characters(name)
    name = re.split(r"[/\\]", name)[-1]
    name = UNSAFE_IN_NAME.sub("_", name)
    name = " ".join(name.split()).strip(" .")
    if not name.strip("_"):
        return FALLBACK_NAME
    if len(name) > NAME_MAX_CHARS:
        stem, dot, extension = name.rpartition(".")
        if dot and 0 < len(extension) <= 10:
            name = f"{stem[: NAME_MAX_CHARS - len(extension) - 1]}.{extension}"
        else:
            name = name[:NAME_MAX_CHARS]
    return name


def without_format_characters(name: str) -> str:
    """`name` without the invisible characters (Unicode category Cf) that reorder or hide what
    it shows: with a right-to-left override, "inv\u202egnp.exe" reads as "invexe.png"."""
    return "".join(char for char in name if unicodedata.category(char) != "Cf")


def content_type_of(content: bytes) -> str:
    """The type the bytes are, read by puremagic's signatures, never the name's or the sender's
    word: a PDF named photo.jpg is application/pdf. Text (UTF-8, no NUL) is text/plain; anything
    else unrecognised is application/octet-stream."""
    try:
        matches = puremagic.magic_string(content)
    except (puremagic.PureError, ValueError):
        matches = []
    for match in matches:
        if match.mime_type:
            return match.mime_type
    if b"\x00" not in content:
        try:
            content.decode("utf-8")
        except UnicodeDecodeError:
            return UNKNOWN_TYPE
        return "text/plain"
    return UNKNOWN_TYPE


def check_uploads(uploads: Sequence[Upload], field: str) -> None:
    """Refuse the whole message before anything is written: an empty file or too many files
    (400), a file or the message over its limit (413)."""
    if len(uploads) > settings.ATTACHMENT_MAX_FILES:
        raise ApplicationError(
            f"At most {settings.ATTACHMENT_MAX_FILES} attachments on one message.",
            code="too_many_attachments",
            extra={"fields": {field: ["Too many files."]}},
        )
    for index, upload in enumerate(uploads):
        name = safe_filename(upload.filename)
        if not upload.content:
            raise ApplicationError(
                f"Attachment {name} is empty.",
                code="empty_attachment",
                extra={"fields": {field: [f"Item {index}: the file is empty."]}},
            )
        if len(upload.content) > settings.ATTACHMENT_MAX_BYTES:
            raise TooLarge(
                f"Attachment {name} is larger than {_megabytes(settings.ATTACHMENT_MAX_BYTES)}.",
                extra={"limit_bytes": settings.ATTACHMENT_MAX_BYTES},
            )
    total = sum(len(upload.content) for upload in uploads)
    if total > settings.ATTACHMENT_MESSAGE_MAX_BYTES:
        raise TooLarge(
            "The attachments together are larger than "
            f"{_megabytes(settings.ATTACHMENT_MESSAGE_MAX_BYTES)}.",
            extra={"limit_bytes": settings.ATTACHMENT_MESSAGE_MAX_BYTES},
        )


def attach(message: TicketMessage, uploads: Sequence[Upload]) -> list[Attachment]:
    """Store checked uploads on the message. Call it inside the message's transaction, opened
    by `attachment_files.atomic()`: if that fails, neither the message nor its files are kept
    (no message points at half its files, and no file outlives its row)."""
    attachments = []
    with attachment_files.atomic():
        for upload in uploads:
            attachment = Attachment(
                message=message,
                filename=safe_filename(upload.filename),
                content_type=content_type_of(upload.content),
                size=len(upload.content),
                sha256=hashlib.sha256(upload.content).hexdigest(),
            )
            attachment.file.save(FALLBACK_NAME, ContentFile(upload.content), save=False)
            attachment_files.note_stored(str(attachment.file.name))
            attachment.save()
            attachments.append(attachment)
    return attachments


def describe(attachment: Attachment) -> str:
    return describe_file(attachment.filename, attachment.content_type, attachment.size)


def describe_file(filename: str, content_type: str, size: int) -> str:
    """How the assistant sees a file: name, type and size, never its bytes. The name is the
    sender's: untrusted text, shown inside the message's untrusted block."""
    return f"[attachment: {filename}, {content_type}, {human_size(size)}]"


def human_size(size: int) -> str:
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{round(size / 1024)} KB"
    return f"{size / (1024 * 1024):.1f} MB"


def _megabytes(limit: int) -> str:
    return f"{limit / (1024 * 1024):g} MB"
