"""Which tools a step offers the model (DESIGN §16).

Every run: create_refund only once a lookup in the run has shown an order (the handler checks
again which order: agent/tools/guards.py). In small-model mode (its "tools" piece:
agent/runtime/small_model.py) the list is cut to what can apply at this step, since small
models pick wrongly among tools that cannot: read_tool_result only after a result came back
cut, and create_refund only when the support agent asked for a refund and said how much, or
the desk's own planner would propose now: a request that leaves the amount open is for the
model to ask about.
"""

from collections.abc import Iterable

from agent.runtime.small_model import clear_refund_request, uses
from agent.tools.guards import looked_up_orders
from agent.tools.registry import tools_for_role

PROPOSE = "create_refund"
PAGE_THROUGH = "read_tool_result"


def offered_tools(
    role: str, *, calls: Iterable[dict], agent_words: str, planned: str | None = None
) -> list[dict]:
    """The `tools` list for a step of a run with this role. `calls`: the run's logged calls
    (rows with tool_name, ok, result); `agent_words`: what the support agent typed; `planned`:
    the call the desk's planner would make now (small_model.planned_call)."""
    calls = list(calls)
    hidden = set()
    if not looked_up_orders((c["tool_name"], c["ok"], c["result"]) for c in calls):
        hidden.add(PROPOSE)
    if uses("tools"):
        if not any(isinstance(c["result"], dict) and c["result"].get("truncated") for c in calls):
            hidden.add(PAGE_THROUGH)
        if not (clear_refund_request(agent_words) or planned == PROPOSE):
            hidden.add(PROPOSE)
    return [tool for tool in tools_for_role(role) if tool["function"]["name"] not in hidden]
