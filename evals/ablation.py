"""`eval_agent --without NAME`: the cases run with one of the assistant's guards, or one piece
of small-model mode, left out, to measure what it is worth (DESIGN §16: measure each piece,
keep only what helps). It acts only inside the eval's own worker processes (evals/worker.py),
on their throwaway shops: the desk's guards have no switch.
"""

from django.conf import settings

from agent.runtime.small_model import PIECES

# The guards every model gets, by the name --without takes.
GUARDS = {
    "lookup": "look before you act: create_refund offered and run only after a lookup",
    "ask": "only what the agent asked for: the agent's own request, amount and reason",
    "unusable": "an empty, markup-only or call-as-text final answer is asked for again",
    "unfounded": "an answer telling of proposals or order facts no tool result shows, or (in "
    "small-model mode) refund claims the records contradict, is asked for again",
}
NAMES = (*GUARDS, *PIECES)


def _none(*args, **kwargs):
    return None


def leave_out(names: list[str]) -> None:
    """Take the named guards and small-model pieces out of this process."""
    # Imported here: this module is read by the command before Django's apps are all needed.
    from agent.runtime import offered, step_answer
    from agent.tools import refund

    unknown = sorted(set(names) - set(NAMES))
    if unknown:
        raise ValueError(f"no guard or piece named {', '.join(unknown)}")
    if "lookup" in names:
        refund.require_lookup = _none
        offered.looked_up_orders = lambda calls: {"any"}
    if "ask" in names:
        refund.require_agent_request = _none
    if "unusable" in names:
        step_answer.unusable_answer = _none
    if "unfounded" in names:
        step_answer.unfounded_answer = _none
        step_answer.contradicted_answer = _none
    settings.AGENT_SMALL_MODEL_PIECES = [
        piece for piece in settings.AGENT_SMALL_MODEL_PIECES if piece not in names
    ]
