"""Small-model mode (DESIGN §16): what the desk does for a model of a billion parameters or so,
piece by piece, each on with AGENT_SMALL_MODEL unless AGENT_SMALL_MODEL_PIECES leaves it out.

* "tools": a step offers only the tools that can apply at it (agent/runtime/offered.py).
* "examples": worked examples as messages after the rules (agent/runtime/examples.py).
* "must_call": a step whose work is a tool call must make one (`tool_choice: "required"`,
  which OpenAI and llama.cpp's server both enforce, the latter with a grammar;
  agent/providers/required_call.py for servers that only keep to a JSON schema): the first
  call of a request about orders, refunds or policy; every call while the agent asked for a
  refund, said how much, and no call of the run tried to propose it yet (or the one that did
  was refused with create_refund among what to do next: once); and any call the desk's own
  planner would still make at that point (a listing is not yet the order). Which call is the
  model's to choose. A small model otherwise answers from the ticket text alone
  and tells of lookups and proposals it never made.
* "context": the model sees a fifth of the transcript.
* "records": under the answer, the facts of the run's tool results it leaves out: the orders
  shown, the proposal made and that it waits for a reviewer, the clauses read
  (agent/runtime/records.py).
* "search": a policy search also reads the support agent's own words, whose best clause comes
  first (agent/tools/reads.py): a small model copies the example's keywords.
* "fallback": when the model gives no answer that can be posted (twice, or at a forced ending),
  the run answers with the desk's own planner's answer from the same messages, which reads the
  run's tool results as they are, instead of a list of the calls made (desk_answer).
* "did": the model answers in JSON, `{answer, did: [...]}`, and what it says it did is checked
  against the tool log: a claimed action the log does not show is dropped and told to the agent
  as the model's claim, never as a fact (agent/runtime/structured_answer.py).
* "guards": a proposal the agent's words leave unclear (no request for a refund, an amount or
  a reason they did not give) is refused with a structured error, and the model then asks
  (agent/tools/guards.py require_agent_request). The only readers of words that refuse: a
  model of a billion parameters proposes from the customer's text and guesses amounts, and
  small-model mode is the operator's choice. For every other model these are notes for the
  reviewer.
"""

from django.conf import settings

from agent.providers import get_offline_provider
from agent.providers.llm import ModelReply
from agent.vocabulary import ORDER_WORDS, asks_for_refund, mentions_refunds
from agent.vocabulary.requests import read_intent

# Under an answer the desk wrote because the model gave none it could post ("fallback").
DESK_ANSWERED = (
    "(The model gave no answer that could be posted: this one is the desk's own, from the run's "
    "records.)"
)
# A refused proposal is pushed to be tried again this many times in all, at most.
MOST_PROPOSAL_ATTEMPTS = 2
PIECES = (
    "tools",
    "examples",
    "must_call",
    "context",
    "records",
    "search",
    "fallback",
    "guards",
    "did",
)


def uses(piece: str) -> bool:
    """Whether small-model mode is on with `piece` among its pieces."""
    assert piece in PIECES, piece
    return settings.AGENT_SMALL_MODEL and piece in settings.AGENT_SMALL_MODEL_PIECES


def needs_desk_data(agent_words: str) -> bool:
    """Whether the support agent's request is about an order, a refund or the policy, as the
    desk's own reading of requests (the offline planner's) sees it: then the answer has to
    come from a tool result."""
    intent = read_intent(agent_words)
    if intent.closing:
        return False
    return bool(
        intent.order_ids
        or intent.bad_order_refs
        or intent.wants_refund
        or intent.defers_to_customer
        or intent.asks_status
        or intent.asks_policy
        or intent.asks_list
        or intent.asks_approval
        or intent.question
        or mentions_refunds(agent_words)
        or ORDER_WORDS.search(agent_words)
    )


def tool_choice(*, final: bool, calls: list[dict], agent_words: str, planned: str | None) -> str:
    """The step's `tool_choice`: "none" for the last call, "required" where the "must_call"
    piece asks for a call, else "auto". `calls`: the run's logged calls (rows with tool_name);
    `planned`: the call the desk's planner would make now (planned_call)."""
    if final:
        return "none"
    if not uses("must_call"):
        return "auto"
    if not calls:
        return "required" if needs_desk_data(agent_words) else "auto"
    if clear_refund_request(agent_words) and proposal_due(calls):
        return "required"  # a lookup first, while create_refund is not offered yet
    return "required" if planned else "auto"


def planned_call(messages: list[dict], tools: set[str]) -> str | None:
    """In small-model mode, the tool the desk's own planner, reading the same messages, would
    call now (None: it would answer, or the mode is off). A request can need more than the run
    looked up ("find the jacket and tell me whether it can be refunded" is a listing, the order
    and the policy); which call the model makes is its own choice."""
    if not settings.AGENT_SMALL_MODEL:
        return None
    return _called(_desk_reply(messages, tools, tool_choice="auto"))


def proposal_due(calls: list[dict]) -> bool:
    """Whether a refund the agent clearly asked for still waits for a create_refund call: none
    was made, or the one made was refused with create_refund among what to do next (another
    reason, a mistyped argument), once."""
    attempts = [call for call in calls if call["tool_name"] == "create_refund"]
    if not attempts:
        return True
    last = attempts[-1]
    error = last["result"].get("error") if isinstance(last["result"], dict) else None
    retry = isinstance(error, dict) and "create_refund" in error.get("next_actions", [])
    return len(attempts) < MOST_PROPOSAL_ATTEMPTS and not last["ok"] and retry


def clear_refund_request(agent_words: str) -> bool:
    """Whether the agent asked for a refund and said how much (an amount, the full price or what
    is left): a request that leaves it open is for the model to ask about, not to be pushed
    into a proposal."""
    if not asks_for_refund(agent_words):
        return False
    intent = read_intent(agent_words)
    how_much = intent.amount_given or intent.full or intent.remaining
    return how_much and not intent.defers_to_customer


def desk_answer(messages: list[dict], tools: set[str]) -> str:
    """The answer the desk's own planner gives to the same messages, making no call (what the
    run's tool results show, and the question the request leaves open), marked as the desk's."""
    answer = _desk_reply(messages, tools, tool_choice="none").content
    return f"{answer}\n\n{DESK_ANSWERED}"


def _desk_reply(messages: list[dict], tools: set[str], *, tool_choice: str) -> ModelReply:
    """What the desk's own planner, asked as a provider like any other, replies to the same
    messages with the same tools offered. The tools go by name alone: that is all the planner
    reads of them."""
    offered = [{"type": "function", "function": {"name": name}} for name in sorted(tools)]
    return get_offline_provider().complete(
        messages=messages, tools=offered, tool_choice=tool_choice
    )


def _called(reply: ModelReply) -> str | None:
    """The tool a reply calls; None when it answers."""
    return reply.tool_calls[0]["function"]["name"] if reply.tool_calls else None
