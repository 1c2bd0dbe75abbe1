"""The answer as it arrives: text pieces from a streaming model call, sent to the run's event
stream as coalesced `message.delta` events."""

from agent.models import AgentRun


class AnswerStream:
    """A TextSink for one model call of `run`, step `step`. Called on the thread that runs the
    model call; `close()` once the call returned or failed."""

    def __init__(self, *, run: AgentRun, step: int):
        self.run = run
        self.step = step

    def __call__(self, text: str) -> None:
        pass

    def close(self) -> None:
        pass
