"""The answer as it arrives: text pieces from a streaming model call, sent to the run's event
stream as coalesced `message.delta` events.

A delta is `{"step", "offset", "text"}`: `text` continues the step's answer at character
`offset`. Deltas are events like any other, so a client that reconnects with Last-Event-ID gets
the ones it missed, and one that replays the run rebuilds the text from them. A model call
that is retried starts its text again at offset 0. The final answer comes with run.completed
and replaces whatever the deltas built: only what was saved is the answer.
"""

import logging
import threading
import time

from django.conf import settings

from agent import services
from agent.executor.arguments import clean_text
from agent.models import AgentRun

logger = logging.getLogger(__name__)

DELTA_EVENT = "message.delta"


class AnswerStream:
    """A TextSink for one model call of `run`, step `step`. Called on the thread that runs the
    model call; `close()` once the call returned or failed, from any thread.

    Text waits at least LLM_STREAM_FLUSH_S between two deltas (one event per token would be a
    database row per token). A piece is sent, with those waiting before it, once that passed
    since the last delta, or before the first one since the first piece: an answer that
    arrives whole within that time sends no delta (run.completed carries it). On close, what
    is left is sent only if a delta went out already. Never raises: a failure to record a
    delta stops the deltas, not the model call.
    """

    def __init__(self, *, run: AgentRun, step: int):
        self.run = run
        self.step = step
        self.flush_s = settings.LLM_STREAM_FLUSH_S
        self._lock = threading.Lock()
        self._unsent: list[str] = []
        self._last_sent_at: float | None = None
        self._sent_chars = 0
        self._deltas_sent = 0
        self._closed = False

    @property
    def deltas_sent(self) -> int:
        return self._deltas_sent

    def __call__(self, text: str) -> None:
        if not isinstance(text, str) or not text:
            return
        with self._lock:
            if self._closed:
                return
            now = time.monotonic()
            if self._last_sent_at is None:
                self._last_sent_at = now
            self._unsent.append(text)
            if now - self._last_sent_at >= self.flush_s:
                self._send()
                self._last_sent_at = now

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            if self._deltas_sent:
                self._send()
            self._closed = True

    def _send(self) -> None:
        """Append what is unsent as one delta. Precondition: the caller holds the lock."""
        text = clean_text("".join(self._unsent))
        self._unsent.clear()
        if not text:
            return
        try:
            services.run_event_append(
                run=self.run,
                type=DELTA_EVENT,
                data={"step": self.step, "offset": self._sent_chars, "text": text},
            )
        except Exception:
            # The panel misses the rest of this answer as it arrives; it still gets it whole
            # with run.completed, and the step's own writes report a lost database.
            logger.warning(
                "Run %s: could not record the answer as it arrives; sending no more of it",
                self.run.pk,
                exc_info=True,
            )
            self._closed = True
            return
        self._sent_chars += len(text)
        self._deltas_sent += 1
