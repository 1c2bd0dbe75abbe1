"""The message brokers: Kombu's filesystem transport, safe under concurrent use, and its Redis
transport, which a worker survives losing with tasks in flight.

Kombu's publisher creates a message file under its final name and only then writes it, and
its consumer takes whatever it lists. A consumer that lists in between reads an empty or half
written file, and the JSONDecodeError escapes the worker's consume loop and stops the worker.

Here a publisher writes under a staging name the consumer never takes and renames the complete
file into place; a rename within a folder is atomic, so a consumer sees the whole message or
nothing. A file that still cannot be decoded (a publisher killed by a power cut, one running
older code) is moved to the quarantine folder and logged, not raised.
"""

import logging
import os
import uuid
from contextlib import suppress
from queue import Empty
from time import monotonic

from kombu.exceptions import ChannelError
from kombu.transport import filesystem, redis
from kombu.utils.encoding import bytes_to_str, str_to_bytes
from kombu.utils.json import dumps, loads
from kombu.utils.objects import cached_property

logger = logging.getLogger(__name__)

# The consumer takes a file for `queue` only when its name after the first dot is exactly
# "<queue>.msg"; a staging name ends in ".tmp" instead, so it is never taken, counted or purged.
STAGING_SUFFIX = ".tmp"


def message_filename(queue: str) -> str:
    """Kombu's naming: sorted oldest first (the clock is system-wide), unique per message."""
    return f"{round(monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"


def is_message(payload) -> bool:
    """Whether `payload` has what kombu reads first when it turns it into a message."""
    properties = payload.get("properties") if isinstance(payload, dict) else None
    return isinstance(properties, dict) and "delivery_tag" in properties


class AtomicFilesystemChannel(filesystem.Channel):
    def __init__(self, connection, **kwargs):
        super().__init__(connection, **kwargs)
        # Made when a process first talks to the broker (a publish from a web request, a
        # worker starting), not when the settings are read: importing them creates nothing.
        for folder in (self.data_folder_in, self.data_folder_out, self.control_folder):
            os.makedirs(folder, exist_ok=True)

    # Kombu's filesystem channel narrows the base signatures; these keep its own.
    def _put(self, queue, payload, **kwargs):  # type: ignore[override]
        """Put `payload` onto `queue`: written under a staging name, then renamed into place."""
        filename = os.path.join(self.data_folder_out, message_filename(queue))
        staging = filename + STAGING_SUFFIX
        try:
            with open(staging, "xb") as staged:
                staged.write(str_to_bytes(dumps(payload)))
            os.replace(staging, filename)
        except BaseException as exc:
            with suppress(OSError):
                os.remove(staging)
            if isinstance(exc, OSError):
                raise ChannelError(f"Cannot add file {filename!r} to directory") from exc
            raise

    def _get(self, queue):  # type: ignore[override]
        """Take the oldest message of `queue`, quarantining any file that is not a message."""
        wanted = f"{queue}.msg"
        for name in sorted(os.listdir(self.data_folder_in)):
            if name.partition(".")[2] != wanted:
                continue
            claimed = os.path.join(self.claim_folder, name)
            try:
                # The rename is the claim: of several consumers exactly one wins. Kombu moves
                # to the system temp folder instead, which may be another file system, where
                # a move is a copy that two consumers can both make.
                os.replace(os.path.join(self.data_folder_in, name), claimed)
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise ChannelError(f"Cannot take file {name!r} from queue.") from exc
            try:
                with open(claimed, "rb") as taken:
                    raw = taken.read()
            except OSError as exc:
                raise ChannelError(f"Cannot read file {claimed!r} from queue.") from exc
            try:
                payload = loads(bytes_to_str(raw))
            except ValueError as exc:  # not JSON, or JSON with a `__type__` kombu does not know
                self._quarantine(claimed, f"cannot be decoded ({exc})")
                continue
            if not is_message(payload):
                self._quarantine(claimed, "is not a message")
                continue
            if not self.store_processed:
                with suppress(OSError):  # the message is read; a copy left behind is inert
                    os.remove(claimed)
            return payload
        raise Empty()

    def _quarantine(self, claimed: str, reason: str) -> None:
        destination = os.path.join(self.quarantine_folder, os.path.basename(claimed))
        try:
            os.replace(claimed, destination)
        except OSError as exc:
            logger.error(
                "Broker message %s %s and could not be quarantined (%s)", claimed, reason, exc
            )
            return
        logger.error(
            "Broker message %s %s; moved to %s", os.path.basename(claimed), reason, destination
        )

    @cached_property
    def claim_folder(self) -> str:
        """Where a consumer moves a message it takes: beside the queue, so the move is a
        rename. It is the processed folder, where a message stays if store_processed."""
        os.makedirs(self.processed_folder, exist_ok=True)
        return self.processed_folder

    @cached_property
    def quarantine_folder(self) -> str:
        folder = self.transport_options.get(
            "quarantine_folder", os.path.join(self.processed_folder, "quarantine")
        )
        os.makedirs(folder, exist_ok=True)
        return folder


class AtomicFilesystemTransport(filesystem.Transport):
    Channel = AtomicFilesystemChannel


class KeptParamsRedisChannel(redis.Channel):
    """Kombu's Redis channel, except that it keeps the parameters it connected with.

    When a worker loses Redis, Celery's consumer collects the connection (kombu's
    Connection.collect): it closes the channel, then detaches the transport from its client
    (transport.client = None), even when the close failed part-way on the dead socket, as it
    does while a read is pending. Then the consumer closes the connection again, and the
    channel's second close hands back the tasks still running (acks_late) on a new pool, or a
    task that ends later acknowledges on it; kombu builds that pool from
    transport.client.hostname: AttributeError, which is no broker error, so it escapes the
    consumer: "Unrecoverable error", and the worker exits with its embedded beat. With the
    kept parameters the channel reaches Redis like any other: a broker error while Redis is
    down (which the consumer ignores), the message handed back or acknowledged once it is up.
    """

    def __init__(self, *args, **kwargs):
        self._kept_connparams: dict[bool, dict] = {}
        super().__init__(*args, **kwargs)
        self._connparams(asynchronous=False)  # kept now, while attached; the ping kept the other

    def _connparams(self, asynchronous=False):
        transport = self.connection
        if transport is not None and transport.client is not None:
            self._kept_connparams[asynchronous] = super()._connparams(asynchronous=asynchronous)
        return dict(self._kept_connparams[asynchronous])


class KeptParamsRedisTransport(redis.Transport):
    Channel = KeptParamsRedisChannel
