"""What a step leaves in its process for the next step of its run (run_step.py).

A step that hands its run over keeps its transcript and its run's tool-call log here, under
the owner and the version it handed the run over with. When the next delivery lands in the
same process and finds the run held by that owner at that version, it takes them instead of
reading both again. That is safe because only the step holding a run writes its transcript
and its tool-call log, and every such write moves the run's version on: the version proves
nothing was added since. The rest of a step's context (the run's row, the ticket, its thread,
the customer) is read afresh by every step.

A delivery that lands in another process, or finds nothing here, reads everything as before;
what is never taken is dropped once KEPT_HAND_OVERS newer ones are kept.
"""

import threading
from collections import OrderedDict
from dataclasses import dataclass

from agent.executor.prior import PriorCalls
from agent.models import AgentMessage

KEPT_HAND_OVERS = 64


@dataclass(frozen=True)
class Carried:
    transcript: list[AgentMessage]
    prior: PriorCalls


_kept: OrderedDict[tuple[str, str, int], Carried] = OrderedDict()
_lock = threading.Lock()


def keep(*, run_id, owner: str, version: int, carried: Carried) -> None:
    with _lock:
        _kept[(str(run_id), owner, version)] = carried
        while len(_kept) > KEPT_HAND_OVERS:
            _kept.popitem(last=False)


def take(*, run_id, owner: str, version: int) -> Carried | None:
    with _lock:
        return _kept.pop((str(run_id), owner, version), None)


def clear() -> None:
    with _lock:
        _kept.clear()
