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

import re
from collections.abc import Iterable
from decimal import Decimal, InvalidOperation

from django.conf import settings

from agent.context import RunContext, ToolContext
from agent.errors import ErrorCode, NextAction, ToolError
from agent.models import AgentMessage, ToolCallLog
from agent.vocabulary import FULL, REMAINING, reasons_described
from config.money import CENT, money_str
from orders.models import Order
from orders.selectors import refundable_balance
from refunds.models import RefundRequest

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


# --- What the agent asked ------------------------------------------------------------------

# Words that ask for money to go back to the customer (English and Chinese).
_REQUEST = re.compile(
    r"\b(?:refund(?:s|ed|ing)?|propose|proposal|reimburse|money back|go ahead|(?:push|put) "
    r"(?:it )?through|credit (?:her|him|them)|compensate|comp (?:her|him|them)"
    r"|(?:give|pay|send|hand) (?:\S+ ){0,3}back)\b"
    # 退 followed by an amount or by whom it goes to ("退300元", "先退100", "退给她"), and
    # the words for paying back or compensating.
    r"|退款|退钱|退还|退回|退\s*[\d一二三四五六七八九十百千两半全]|退给|退她|退他|返还|赔偿|补偿",
    re.IGNORECASE,
)
# "refund" as part of a thing asked about, not something asked for.
_ABOUT_REFUNDS = re.compile(
    r"\brefund\s+(?:policy|policies|history|status|window|rules?|requests?|process|clause)\b",
    re.IGNORECASE,
)
_ASKS_SOMEONE = re.compile(
    r"^\W*(?:please\b|pls\b|kindly\b|(?:can|could|would|will) you\b)", re.IGNORECASE
)
# Sentence ends, with the Chinese full stop and the full-width ! and ?.
_ENDS = ".!?;\u3002\uff01\uff1f"
_QUESTION_MARKS = ("?", "\uff1f")
_SENTENCE = re.compile(rf"[^{_ENDS}\n]+[{_ENDS}]*")


def asks_for_refund(text: str) -> bool:
    """Whether the agent's `text` asks for a refund: a sentence that says so and is not a
    question about refunds ("who approves a refund?"), though it may be a request put as one
    ("could you refund the mug?")."""
    for match in _SENTENCE.finditer(text or ""):
        sentence = match.group().strip()
        if not _REQUEST.search(_ABOUT_REFUNDS.sub(" ", sentence)):
            continue
        if not sentence.endswith(_QUESTION_MARKS) or _ASKS_SOMEONE.search(sentence):
            return True
    return False


# Amounts written by the agent: "50", "124.50", "1,299.00", "CNY 129" (order numbers, 8 digits
# and more, are not amounts).
_AMOUNT = re.compile(r"(?<![\d.,])(\d{1,3}(?:,\d{3})+|\d{1,7})(?:[.,](\d{1,2}))?(?![\d,])")
_PART = re.compile(
    r"\b(?:partial|part of|a part|a bit|a little|some|something|portion|half|whatever seems)\b"
    r"|部分|一半|一些",
    re.IGNORECASE,
)
_WHOLE = re.compile(
    r"\b(?:full|fully|entire|whole|all of|rest|remaining|remainder|balance|left)\b|全部|全额|剩余",
    re.IGNORECASE,
)
_HALF = re.compile(r"\bhalf\b|一半", re.IGNORECASE)


def amounts_named(text: str) -> set[Decimal]:
    found = set()
    for whole, cents in _AMOUNT.findall(text or ""):
        try:
            found.add(Decimal(f"{whole.replace(',', '')}.{cents or '0'}").quantize(CENT))
        except InvalidOperation:
            continue
    return found


def amount_established(amount: Decimal, text: str, *, paid: Decimal, balance: Decimal) -> bool:
    """Whether the agent's `text` settles `amount`: they named it; or they asked for the rest
    or the whole (or did not ask for a part) and it is the remaining balance or the full
    price; or they asked for half and it is half of either."""
    if amount in amounts_named(text):
        return True
    if _HALF.search(text or "") and amount in {
        (paid / 2).quantize(CENT),
        (balance / 2).quantize(CENT),
    }:
        return True
    partial = _PART.search(text or "") and not _WHOLE.search(text or "")
    return not partial and amount in (balance, paid)


def amount_meant(text: str, *, paid: Decimal, balance: Decimal) -> tuple[str, Decimal] | None:
    """What the agent's words ask for when they name no amount but "what is left" (the
    remaining balance) or "the full refund" of an order nothing was refunded on (its price)."""
    if amounts_named(text):
        return None
    if REMAINING.search(text):
        return "the remaining balance", balance
    if FULL.search(text) and balance == paid:
        return "the full price", paid
    return None


# A reason the agent named as such: "reason other", "as wrong item", "the not-received refund".
_REASON_WORDS = {
    RefundRequest.Reason.NOT_RECEIVED: r"not[ _-]received|non-?delivery",
    RefundRequest.Reason.WRONG_ITEM: r"wrong[ _-]item",
    RefundRequest.Reason.DAMAGED: r"reason[ :]+damaged|as damaged",
    RefundRequest.Reason.OTHER: r"reason[ :]+other|as other",
}


def reasons_named(text: str) -> set[str]:
    return {
        str(reason)
        for reason, words in _REASON_WORDS.items()
        if re.search(words, text or "", re.IGNORECASE)
    }


def agent_words(ctx: RunContext) -> str:
    """What the support agent typed into this run: its user messages. The ticket's customer
    messages reach the model in the system context and are not among them."""
    texts = AgentMessage.objects.filter(run=ctx.run, role=AgentMessage.Role.USER).order_by("seq")
    return "\n".join(texts.values_list("content", flat=True))


def words_flags(words: str, order: Order, args: dict) -> list[str]:
    """Where the support agent's `words` and the proposal in `args` part, as a reviewer reads
    it: no request for a refund found, an amount they named or meant that is not the one
    proposed, a reason they gave or described that is not the one proposed."""
    flags = []
    if not asks_for_refund(words):
        flags.append(
            "The desk's reader found no request for a refund in the agent's words: check that "
            "they asked for one."
        )
    amount, currency = args["amount"], order.currency
    balance = refundable_balance(order)
    named = sorted(amounts_named(words))
    # An amount they named that is not the one proposed is worth a look even where the guard
    # would take the balance ("refund 60 on the blender" proposed as its 399.00 balance).
    other_named = named and amount not in named and not _WHOLE.search(words)
    if other_named or not amount_established(
        amount, words, paid=order.amount_paid, balance=balance
    ):
        meant = amount_meant(words, paid=order.amount_paid, balance=balance)
        if meant is not None:
            said = f"ask for {meant[0]}, {money_str(meant[1])} {currency}"
        elif named:
            said = f"name {', '.join(money_str(value) for value in named)}"
        else:
            said = "ask for part of the order"
        flags.append(f"The agent's words {said}; the proposal is {money_str(amount)} {currency}.")
    reasons = reasons_named(words) or reasons_described(words)
    if len(reasons) == 1 and args["reason"] not in reasons:
        flags.append(
            f"The agent's words give the reason {reasons.pop()}; the proposal says "
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
    if not asks_for_refund(words):
        raise ask_agent(
            ErrorCode.AGENT_REQUEST_REQUIRED,
            "The support agent has not asked for a refund; a customer asking for one is not "
            "enough. Tell the agent what you found and ask whether to propose it.",
        )
    balance = refundable_balance(order)
    if not amount_established(args["amount"], words, paid=order.amount_paid, balance=balance):
        meant = amount_meant(words, paid=order.amount_paid, balance=balance)
        if meant is not None:
            raise ask_agent(
                ErrorCode.AMOUNT_UNCLEAR,
                f"The agent asked for {meant[0]}, {money_str(meant[1])} {order.currency}, not "
                f"{money_str(args['amount'])}. Propose {money_str(meant[1])}, or ask them.",
                "create_refund",
            )
        raise ask_agent(
            ErrorCode.AMOUNT_UNCLEAR,
            f"The agent did not name {money_str(args['amount'])}, and it is not the order's "
            f"full price ({money_str(order.amount_paid)}) or remaining balance "
            f"({money_str(balance)}) asked for as such. Ask the agent how much to propose.",
        )
    # Named as such ("as other") before described ("it arrived in pieces"); words describing
    # two reasons leave the choice to the model.
    reasons = reasons_named(words) or reasons_described(words)
    if len(reasons) == 1 and args["reason"] not in reasons:
        raise ask_agent(
            ErrorCode.REASON_UNCLEAR,
            f"The agent's words give the reason {reasons.pop()}, not {args['reason']}. Propose "
            "with the agent's reason, or ask them.",
            "create_refund",
        )
