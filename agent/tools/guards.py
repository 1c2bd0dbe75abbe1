"""Guards in front of create_refund that keep a model from proposing what nobody established
(DESIGN §16): a small model acts without looking, proposes from the customer's own text, and
guesses amounts. Each guard refuses with a structured error naming what to do instead, and
nothing is proposed.

* Look before you act: the order must have been looked up successfully earlier in the same
  run or MCP session (get_order, or list_customer_orders naming it).
* What the agent's words said (runs only; an MCP host's user talks to their host, not to the
  desk) is read, never obeyed as a rule: whether they ask for a refund, an amount they name
  ("the agent's words name 60.00; the proposal is 399.00") and a reason they give or describe
  become a note the reviewer sees beside the proposal (`requester_note`). A reader of words
  refuses nothing (DESIGN §18): a capable model asked in any language or wording has its
  proposal accepted, and the state guards (lookup, balance, policy, role limits) still hold.
  Only small-model mode with its "guards" piece refuses on them (`require_agent_request`):
  a model of a billion parameters proposes from the customer's text and guesses amounts.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal

from django.conf import settings

from agent.context import RunContext, ToolContext
from agent.errors import ErrorCode, NextAction, ToolError
from agent.models import AgentMessage, ToolCallLog
from agent.vocabulary import (
    amount_established,
    amount_meant,
    amount_words,
    amounts_named,
    asks_for_refund,
    reasons_described,
)
from config.money import money_str
from orders.models import Order
from orders.selectors import refundable_balance

# The lookups that show the model an order of the bound customer.
LOOKUP_TOOLS = ("get_order", "list_customer_orders")


def orders_in_result(tool_name: str, result: object) -> set[str]:
    """The order numbers a successful lookup showed: get_order's order, or every order of a
    list_customer_orders page. A refusal, or a result cut short, shows none."""
    if not isinstance(result, dict) or result.get("ok") is False or result.get("truncated"):
        return set()
    if tool_name == "get_order":
        order_id = result.get("order_id")
        return {order_id} if isinstance(order_id, str) else set()
    if tool_name == "list_customer_orders":
        orders = result.get("orders")
        return {
            order["order_id"]
            for order in (orders if isinstance(orders, list) else [])
            if isinstance(order, dict) and isinstance(order.get("order_id"), str)
        }
    return set()


def looked_up_orders(calls: Iterable[tuple[str, bool, object]]) -> set[str]:
    """Orders shown by the successful lookups among (tool name, ok, result) of logged calls."""
    return {
        order_id
        for name, ok, result in calls
        if ok and name in LOOKUP_TOOLS
        for order_id in orders_in_result(name, result)
    }


def _logged_lookups(ctx: ToolContext) -> set[str]:
    scope = {"run": ctx.run} if isinstance(ctx, RunContext) else {"mcp_session": ctx.mcp_session}
    rows = ToolCallLog.objects.filter(**scope, ok=True, tool_name__in=LOOKUP_TOOLS)
    return looked_up_orders(rows.values_list("tool_name", "ok", "result"))


def require_lookup(ctx: ToolContext, order: Order) -> None:
    """Refuse (LOOKUP_REQUIRED) a proposal on an order this run or session has not looked up."""
    if order.order_id in _logged_lookups(ctx):
        return
    raise ToolError(
        ErrorCode.LOOKUP_REQUIRED,
        f"Look the order up first: call get_order for {order.order_id}, check what it shows "
        "(status, paid, refundable balance), then propose. Nothing was proposed.",
        retryable=True,
        next_actions=["get_order"],
    )


# --- What the agent asked (read through agent/vocabulary/) ------------------------------


def agent_words(ctx: RunContext) -> str:
    """What the support agent typed into this run: its user messages. The ticket's customer
    messages reach the model in the system context and are not among them."""
    texts = AgentMessage.objects.filter(run=ctx.run, role=AgentMessage.Role.USER).order_by("seq")
    return "\n".join(texts.values_list("content", flat=True))


@dataclass(frozen=True)
class WordsReading:
    """What the support agent's words say of one proposal on `order`, as agent/vocabulary/
    reads them. Shared by the reviewer's note and small-model mode's guard."""

    asks: bool  # they ask for a refund
    amount_settled: bool  # they name the amount, or mean it ("the rest", "full")
    # an amount they named that is not the proposal's, while asking for no whole: worth a look
    # even where the balance would settle it ("refund 60 on the blender" proposed as 399.00)
    other_amount_named: bool
    named: list[Decimal]
    meant: tuple[str, Decimal] | None  # "the remaining balance", 129.00
    reason: str | None  # the one reason they name or describe, if exactly one

    @classmethod
    def of(cls, words: str, order: Order, amount: Decimal) -> "WordsReading":
        balance = refundable_balance(order)
        named = sorted(amounts_named(words))
        said = amount_words(words)
        reasons = reasons_described(words)
        return cls(
            asks=asks_for_refund(words),
            amount_settled=amount_established(
                amount, words, paid=order.amount_paid, balance=balance
            ),
            other_amount_named=bool(named)
            and amount not in named
            and not (said.full or said.remaining),
            named=named,
            meant=amount_meant(words, paid=order.amount_paid, balance=balance),
            reason=next(iter(reasons)) if len(reasons) == 1 else None,
        )


def words_flags(words: str, order: Order, args: dict) -> list[str]:
    """Where the support agent's `words` and the proposal in `args` part, as a reviewer reads
    it: no request for a refund found, an amount they named or meant that is not the one
    proposed, a reason they gave or described that is not the one proposed."""
    amount, currency = args["amount"], order.currency
    reading = WordsReading.of(words, order, amount)
    flags = []
    if not reading.asks:
        flags.append(
            "The desk's reader found no request for a refund in the agent's words: check that "
            "they asked for one."
        )
    if reading.other_amount_named or not reading.amount_settled:
        if reading.meant is not None:
            said = f"ask for {reading.meant[0]}, {money_str(reading.meant[1])} {currency}"
        elif reading.named:
            said = f"name {', '.join(money_str(value) for value in reading.named)}"
        else:
            said = "ask for part of the order"
        flags.append(f"The agent's words {said}; the proposal is {money_str(amount)} {currency}.")
    if reading.reason is not None and args["reason"] != reading.reason:
        flags.append(
            f"The agent's words give the reason {reading.reason}; the proposal says "
            f"{args['reason']}."
        )
    return flags


# The agent's words kept on a version for its reviewer, at most this long.
NOTE_WORDS_MAX_CHARS = 2000


def requester_note(ctx: ToolContext, order: Order, args: dict) -> dict:
    """What the support agent's own words said, for the reviewer beside the proposal (DESIGN
    §16): `{"words", "flags"}`, or {} for a proposal made outside a run (an MCP host)."""
    if not isinstance(ctx, RunContext):
        return {}
    words = agent_words(ctx)
    if not words:
        # Only a run made without run_start (the desk's own code, tests) has no request.
        return {}
    return {"words": words[:NOTE_WORDS_MAX_CHARS], "flags": words_flags(words, order, args)}


def ask_agent(code: ErrorCode, message: str, *also: str) -> ToolError:
    return ToolError(
        code, f"{message} Nothing was proposed.", next_actions=[*also, NextAction.ASK_AGENT]
    )


def small_model_guards() -> bool:
    """Whether small-model mode refuses a proposal the agent's words do not establish: its
    "guards" piece, on with AGENT_SMALL_MODEL unless AGENT_SMALL_MODEL_PIECES leaves it out."""
    return settings.AGENT_SMALL_MODEL and "guards" in settings.AGENT_SMALL_MODEL_PIECES


def require_agent_request(ctx: ToolContext, order: Order, args: dict) -> None:
    """Small-model mode's own guard (DESIGN §16, opt-in, never for other models): refuse a
    proposal the support agent's words do not establish, AGENT_REQUEST_REQUIRED,
    AMOUNT_UNCLEAR or REASON_UNCLEAR, each with next_actions ["ask_agent"]."""
    if not small_model_guards() or not isinstance(ctx, RunContext):
        return
    words = agent_words(ctx)
    if not words:
        return
    reading = WordsReading.of(words, order, args["amount"])
    if not reading.asks:
        raise ask_agent(
            ErrorCode.AGENT_REQUEST_REQUIRED,
            "The support agent has not asked for a refund; a customer asking for one is not "
            "enough. Tell the agent what you found and ask whether to propose it.",
        )
    if not reading.amount_settled:
        if reading.meant is not None:
            raise ask_agent(
                ErrorCode.AMOUNT_UNCLEAR,
                f"The agent asked for {reading.meant[0]}, {money_str(reading.meant[1])} "
                f"{order.currency}, not {money_str(args['amount'])}. Propose "
                f"{money_str(reading.meant[1])}, or ask them.",
                "create_refund",
            )
        raise ask_agent(
            ErrorCode.AMOUNT_UNCLEAR,
            f"The agent did not name {money_str(args['amount'])}, and it is not the order's "
            f"full price ({money_str(order.amount_paid)}) or remaining balance "
            f"({money_str(refundable_balance(order))}) asked for as such. Ask the agent how "
            "much to propose.",
        )
    # Words describing two reasons leave the choice to the model.
    if reading.reason is not None and args["reason"] != reading.reason:
        raise ask_agent(
            ErrorCode.REASON_UNCLEAR,
            f"The agent's words give the reason {reading.reason}, not {args['reason']}. "
            "Propose with the agent's reason, or ask them.",
            "create_refund",
        )
