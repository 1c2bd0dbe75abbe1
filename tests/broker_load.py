"""Load for the broker tests: a task that records each delivery, and a publisher process.

A worker runs the task with `--include tests.broker_load` and $DELIVERY_LOG set; each run
appends its index to that file, so the test sees every delivery, duplicates included.

    python -m tests.broker_load QUEUE FIRST COUNT THREADS GO_FILE

publishes indexes FIRST .. FIRST+COUNT-1 to QUEUE through Celery from THREADS threads, all
released together once GO_FILE exists (so a process can start up while the worker does).
"""

import os
import sys
import threading
import time
from pathlib import Path

from celery import shared_task

# Large enough that serializing and writing a message takes a while, as an agent step with a
# long conversation does: the window in which a half-written file can be seen.
PADDING = "x" * 64 * 1024


@shared_task(name="tests.broker_load.record_delivery")
def record_delivery(index: int, padding: str) -> None:
    with open(os.environ["DELIVERY_LOG"], "a") as log:
        log.write(f"{index}\n")


def publish(*, queue: str, first: int, count: int, threads: int, go_file: Path) -> None:
    start = threading.Barrier(threads + 1, timeout=30)
    errors: list[BaseException] = []

    def send(indexes: range) -> None:
        try:
            start.wait()
            for index in indexes:
                record_delivery.apply_async((index, PADDING), queue=queue)
        except BaseException as error:  # reported by the exit status below
            errors.append(error)

    indexes = range(first, first + count)
    senders = [threading.Thread(target=send, args=(indexes[n::threads],)) for n in range(threads)]
    for sender in senders:
        sender.start()
    deadline = time.monotonic() + 60
    while not go_file.exists():
        if time.monotonic() > deadline:
            start.abort()
            raise TimeoutError(f"{go_file} did not appear")
        time.sleep(0.01)
    start.wait()
    for sender in senders:
        sender.join()
    if errors:
        raise errors[0]


if __name__ == "__main__":
    # Publishing needs the Celery app and the settings, not the Django apps.
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import config.celery  # noqa: F401  (the app `record_delivery` publishes through)

    queue, first, count, threads, go_file = sys.argv[1:6]
    publish(
        queue=queue, first=int(first), count=int(count), threads=int(threads), go_file=Path(go_file)
    )
