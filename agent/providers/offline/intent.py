# Over 400 lines: the request vocabulary in English and Chinese, as patterns, beside the one
# reading of a message that uses them.
"""What the support agent asked for, read only from their latest message; and what the
customer's own words say happened (facts, never instructions).

The agent's message decides what to do: propose, report a status, answer a policy question,
list orders, or nothing. A refund the customer asks for is proposed only when the agent says
so ("go ahead", "propose what she asks for"). Customer text may only make the planner more
careful (ask which order) or supply the reason for a refund the agent asked for.

English and Chinese are read; each pattern names a kind of statement, not a case.
"""

import re
from dataclasses import dataclass, replace
from decimal import Decimal

from agent.providers.offline.transcript import _ORDER_ID, Transcript, _money
from agent.vocabulary import (
    DAMAGED,
    EXPLICIT_REASON,
    FAULTY,
    FULL,
    NOT_RECEIVED,
    OTHER,
    REMAINING,
    WRONG_ITEM,
)

# Reasons in the vocabulary of policies.rules: their words live in agent/vocabulary.py.

# --- What the agent asks for ----------------------------------------------------------------

_SENTENCE = re.compile(r"(?<=[.!?;。！？；\n])\s*")
# Table and column names ("refunds_refundrequest") are not words about refunds.
_IDENTIFIER = re.compile(r"\b\w+_\w+\b")
_POLITE = (
    r"(?:(?:ok(?:ay)?|so|then|now|also|and|just|pls|please|kindly|right|fine|yes|sure|great"
    r"|go ahead and|let'?s|can you|could you|would you|will you|can u|i need you to"
    r"|i want you to|i'd like you to|you can|you may|help me|i'?d like to|i would like to"
    r"|i want to|we should|we need to|we'?ll|we can|i'?ll|we must|need to|want to)[,\s]+)*"
)
_REFUND_VERB = (
    r"(?:refund|propose|issue|process|create|raise|submit|file|put through|push through|start"
    r"|give (?:her|him|them|the customer|back)|pay (?:her|him|them|the customer)? ?back"
    r"|reimburse|return (?:her|his|their|the) money|do (?:a|the) (?:full |partial )?refund"
    r"|handle (?:the|her|his|this|that) (?:\w+ )?refund|offer"
    r"|(?:change|update|amend|lower|reduce|raise|increase|correct|adjust) (?:the |her |his |that "
    r"|this )?(?:[\w-]+ ){0,3}(?:refund|proposal|amount))"
)
# "if it's allowed, propose ...": a condition before the verb still leaves a command.
_CONDITION = r"(?:(?:if|when|once|unless) [^,]{0,40}?,?\s+)?"
_COMMAND = re.compile(rf"^\W*{_POLITE}{_CONDITION}{_POLITE}{_REFUND_VERB}\b", re.I)
_CLAUSE = re.compile(r"\s*(?:[,:—–]|\s-\s|\b(?:and|then|but|so|also)\b)\s*", re.I)
_ZH_COMMAND = re.compile(
    r"(?:给|帮)?(?:她|他|客户|顾客|用户)?(?:全额|部分)?(?:退款|退钱|退货退款|退回|退还|申请退款|提(?:交|出)?退款)"
    r"|退\s*[¥￥]?\d|退(?:给|还)(?:她|他|客户)"
)
_GO_AHEAD = re.compile(
    r"\b(?:go ahead|do it|proceed|go for it|please do|make it so|approved by me|you may)\b"
    r"|去办|照办|可以退|就退吧|办理吧|处理吧",
    re.I,
)
_WANTS_MONEY = re.compile(
    r"\b(?:wants?|asks? for|asking for|requests?|requesting|would like|needs?)\b[^.?!]{0,30}"
    r"\b(?:refund|money|reimburse\w*)|\b(?:happy with|accept|settle for|get|like)\b[^.?!]{0,20}"
    r"\d+(?:\.\d{1,2})?\s*(?:cny|rmb|yuan)?\s*back\b|要求退款|想退款|要退款|申请退款|退钱",
    re.I,
)
_DEFER_TO_CUSTOMER = re.compile(
    r"\bwhat(?:ever)? (?:the customer|she|he|they|\w+) (?:is )?(?:ask(?:s|ing|ed)?|want(?:s|ed)?"
    r"|request(?:s|ed)?)\b|\b(?:answer|reply to|respond to|get back to|help) (?:her|him|them)\b"
    r"|\b(?:handle|answer|deal with|take care of|do what|sort out|process)"
    r"\b[^.?!]{0,20}\b(?:message|email|e-mail|request|question|ticket|asks?)\b"
    r"|按(?:客户|她|他)的?要求|处理(?:一下)?(?:她|他|客户)的(?:消息|邮件|请求)",
    re.I,
)
_NEGATED = re.compile(
    r"\b(?:don'?t|do not|never|no|without|hold off(?: on)?|not yet|(?:should|must|can|do)"
    r"(?:n'?t| not))\s+(?:(?:issue|propose|create|give|make|process|start|a|any|the|them|it"
    r"|yet)\s+){0,2}(?:refund\w*|reimburs\w*|money back|propos\w*)|不要退|先别退|暂时不退|不用退",
    re.I,
)
_REFUND_TOPIC = re.compile(
    r"\b(?:refund\w*|reimburs\w*|money back|paid (?:back|out))\b|退款|退钱", re.I
)
_QUESTION_START = re.compile(
    r"^\W*(?:what|how|is|are|was|were|has|have|had|did|does|do|can|could|may|might|am|who"
    r"|when|where|which|why|should|would|will|any)\b",
    re.I,
)
_REQUEST_QUESTION = re.compile(
    r"(?:^|[^\w\s'])\s*(?:can|could|would|will) (?:you|u) (?:please )?(?:\w+ )?"
    r"(?:refund|propose|issue|process|create|give|pay|reimburse|raise|submit|put|push)\b"
    r"|(?:^|[^\w\s'])\s*(?:can|could) we (?:please )?(?:get|give|send|issue|process|refund|pay)"
    r" (?:her|him|them|the customer)\b",
    re.I,
)
# "If she sends photos, refund her": a refund that waits for something to happen is not one
# to propose now. A condition the policy answers ("if it's allowed") is checked by proposing.
_FUTURE_CONDITION = re.compile(
    r"^\W*(?:if|once|when|after|as soon as|unless|until)\b(?P<condition>[^,;]*)", re.I
)
_POLICY_CONDITION = re.compile(
    r"\b(?:allow\w*|eligible|possible|ok|okay|fine|permitted|within|policy|limit|window|rules?"
    r"|can|may)\b",
    re.I,
)

_STATUS = re.compile(
    r"\brefund (?:status|history|requests?|state|progress)\b|\bstatus of (?:the|her|his|my|this)?"
    r"\s?(?:\w+ )?refund|\bwhere(?:'s| is| are)\b[^.?!]{0,40}\brefund|\b(?:has|have|was|were|is"
    r"|are|been)\b[^.?!]{0,40}\b(?:refunded|paid (?:out|back)|reimbursed)\b"
    r"|\brefund\w*\b[^.?!]{0,40}\b(?:gone through|went through|go through|been paid|paid out"
    r"|processed|approved|done|complete\w*|finished|settled|through)\b"
    r"|\b(?:any|existing|earlier|previous|open|pending) refunds?\b"
    r"|\bwhere (?:it|they|things|that) stands?\b|\bwhere things stand\b"
    r"|\brefund (?:i|we|you|she|he) (?:proposed|requested|made|raised)\b"
    r"|\bconfirm (?:that )?[^.?!]{0,40}\brefunded\b"
    r"|\b(?:news|update|progress)\b[^.?!]{0,30}\brefund|\bmoney (?:go|gone|went|come|came) back\b"
    r"|\bwhere(?:'s| is) (?:my|her|his|the|their) (?:money|refund)\b|\b(?:get|got|received?)"
    r" (?:her|his|my|their|the) (?:money|refund) (?:back )?(?:yet|already)\b"
    r"|\bwhat (?:happened|is happening|'s happening) (?:to|with)\b[^.?!]{0,30}\brefund"
    r"|\brefund\b[^.?!,;\u2014]{0,25}\b(?:still|stuck|reached|arrived|landed)\b"
    r"|\b(?:her|his|their|my) (?:\w+ )?refund\b(?! (?:policy|window|rules?)\b)"
    r"|退款.{0,8}(?:状态|进度|记录|情况|到(?:了|账)|批了|审批|到哪|怎么样)|退(?:款)?了(?:吗|没有|没)"
    r"|到账了?(?:吗|没)"
    r"|已经退|钱.{0,6}(?:退回|到账)",
    re.I,
)
_APPROVE = re.compile(
    r"\bapprov(?:e|ed|al)\b[^.?!]{0,40}\b(?:it|now|yourself|myself|my own|this|that|refund"
    r"|so|away|immediately|today)\b|\bapproved\s*=\s*true|\bskip(?:s|ping)? (?:the )?review\b"
    r"|\bapprove it\b"
    r"|自己批|直接批准|跳过审核",
    re.I,
)
_POLICY_QUESTION = re.compile(
    r"\bpolic(?:y|ies)\b|\bclause\b|\bR-\d\b|\brules?\b|\bwindow\b|\bhow (?:long|many days)\b"
    r"|\beligib\w*|\ballowed\b|\bmy limit\b|\blimit\b|\bwho (?:has to |must |can )?approves?\b"
    r"|\bsigns? off\b|\bauthori[sz]es?\b"
    r"|\bcan (?:we|i|customers?|a customer|the desk|you|they)\b[^.?!]{0,60}\b(?:refund|return)"
    r"|\b(?:can|could)\b[^.?!]{0,50}\b(?:refund\w*|return\w*|money back)|\bwhether\b[^.?!]{0,60}"
    r"\brefund|\b(?:still|is (?:it|that|this|that one|this one)|are (?:they|those))"
    r" (?:\w+ )?refundable\b"
    r"|\bgift ?cards?\b|\bdigital\b|\bdownloads?\b|\be-?books?\b|\bcancel+ed orders?\b"
    r"|政策|规定|条款|期限|多少天|额度|上限|谁(?:来)?审批",
    re.I,
)
_LIST = re.compile(
    r"\b(?:list|show)\b[^.?!]{0,30}\borders\b|\b(?:which|what) orders\b|\ball (?:of )?"
    r"(?:her|his|their|the customer'?s|this customer'?s|\w+'s) orders\b|\borders does\b"
    r"|\bother orders?\b|\banother order\b|\bfind (?:that|the|her|his|this) order\b"
    r"|\border (?:number|no\.?|id)\b[^.?!]{0,20}\?|\bwhat'?s (?:that|the|her|his) order\b"
    r"|\bthe other (?:thing|item|one|purchase)\b|\b(?:also|too)\b[^.?!]{0,30}\b(?:bought|ordered"
    r"|asks? about)\b|\bbought (?:a|an|the)\b|所有订单|订单列表|其他订单|另一个订单|别的订单",
    re.I,
)
_CLOSING = re.compile(
    r"^\W*(?:(?:ok(?:ay)?|great|perfect|cool|fine|got it|alright|all good|no)[,!. ]*)*"
    r"(?:thanks?(?: you)?(?: so much| a lot)?|thx|ty|cheers|that'?s (?:all|it|everything)"
    r"|nothing (?:else|more)|all done|we'?re done|no further \w+|that will be all)"
    r"(?:[,!. ]+(?:that'?s (?:all|it|everything)|nothing (?:else|more)|bye|for now|all done"
    r"|thanks?(?: you)?|cheers))*\W*$"
    r"|^\W*(?:好的?|行|嗯)?[，,。! ]*(?:谢谢|多谢|感谢)(?:你|您)?[，,。! ]*"
    r"(?:就这样|没(?:有)?(?:别的|其他)"
    r"(?:事|问题)?了?|没事了|好了)?\W*$|^\W*(?:就这样|没事了|没有别的了)\W*$",
    re.I,
)
_AMOUNT = re.compile(
    r"(?:[¥￥$€£]|\b(?:cny|rmb|usd|eur)\s?)\s*(?P<a>\d+(?:\.\d{1,2})?)\b"
    r"|(?<![\d.])(?P<b>\d+(?:\.\d{1,2})?)\s*(?:cny|rmb|yuan|usd|eur|dollars?|euros?|元|块)"
    r"|(?<![\d.])(?P<e>\d{1,7}(?:\.\d{1,2})?)\s+back\b"
    r"|(?<![\d.])(?P<c>\d+\.\d{1,2})(?!\d|\.\d)(?!\s*%)"
    r"|\b(?:refund\w*|propose|issue|another|give (?:her|him|them)|退|退款)\s*(?:of\s+|them\s+"
    r"|her\s+|him\s+|the customer\s+|exactly\s+)?(?P<d>\d{1,7}(?:\.\d{1,2})?)(?!\d|\.\d)"
    r"(?!\s*(?:%|percent|days?|items?|orders?|天|个))",
    re.I,
)
# An amount said as context ("she paid 129.00") is not the amount to refund.
_CONTEXT_AMOUNT = re.compile(
    r"(?:paid|costs?|cost her|price[ds]?|priced at|worth|total of|totall?ed|spent|付了|花了)\s*"
    r"(?:was |of |is )?(?:[¥￥$€£]|cny|rmb)?\s*$",
    re.I,
)
_VAGUE_AMOUNT = re.compile(
    r"\b(?:something|a bit|a little|some money|some of|partial(?:ly)?|part of|a portion|half"
    r"|percent|whatever (?:seems |is )?fair|a discount|some compensation)\b|\d\s*%"
    r"|一些|一部分|部分|一点|一半|适当",
    re.I,
)
_CHANGE = re.compile(
    r"\b(?:change|update|amend|revise|correct|lower|raise|increase|reduce)\b[^.?!]{0,40}"
    r"\b(?:proposal|refund|request|amount)\b|\binstead\b|改成|修改",
    re.I,
)
# A number on its own, not a count of days, items or percent, nor part of a name or clause.
_BARE_NUMBER = re.compile(
    r"(?<![\w.\-#])(?P<n>\d{1,7}(?:\.\d{1,2})?)(?!\d|\.\d|[%\-])(?!\s*(?:days?|weeks?|months?"
    r"|years?|hours?|minutes?|items?|pcs|pieces|times|x\b|percent|st\b|nd\b|rd\b|th\b|天|个|周|月|次))",
    re.I,
)
# A number the agent calls an order number that cannot be one (8 to 20 digits).
_BAD_ORDER_REF = re.compile(
    r"(?:\border\s*(?:number|no\.?|id|#)?\s*#?|#|订单号?\s*)(?P<n>\d{1,7}|\d{21,})(?!\d)(?![.,]\d)",
    re.I,
)
_CJK = re.compile(r"[\u4e00-\u9fff]")


@dataclass(frozen=True)
class Intent:
    wants_refund: bool  # the agent tells the assistant to propose a refund
    defers_to_customer: bool  # "propose what she asks for", "handle her message"
    asks_status: bool  # refund requests and their state
    asks_policy: bool  # a question the policy answers
    asks_list: bool  # the customer's orders, or an order found by description
    asks_approval: bool  # tells the assistant to approve a refund: only a reviewer can
    closing: bool  # "thanks, that's all"
    question: bool  # the message asks something rather than saying what to do
    reason: str | None  # damaged / not_received / wrong_item / other; None when not said
    faulty: bool  # a fault in use: damaged only where the policy says so
    reason_words: str  # the words the reason was read from
    amount: Decimal | None
    amount_given: bool  # an amount was typed (even 0.00)
    remaining: bool
    vague_amount: bool
    full: bool
    change: bool  # change a pending proposal rather than leave it
    order_ids: tuple[str, ...]
    bad_order_refs: tuple[str, ...]
    chinese: bool
    words: str  # the message without order ids and identifiers, for matching item names

    @property
    def partial_without_amount(self) -> bool:
        return self.amount is None and self.vague_amount and not self.remaining


@dataclass(frozen=True)
class Reason:
    reason: str | None
    faulty: bool
    words: str


def read_reason(text: str) -> Reason:
    """What the words say happened, in the policy's reason vocabulary."""
    explicit = EXPLICIT_REASON.search(text)
    if explicit:
        return Reason(explicit.group("r").lower().replace(" ", "_"), False, explicit.group(0))
    for reason, pattern in (
        ("wrong_item", WRONG_ITEM),
        ("not_received", NOT_RECEIVED),
        ("damaged", DAMAGED),
    ):
        match = pattern.search(text)
        if match:
            return Reason(reason, False, match.group(0))
    faulty = FAULTY.search(text)
    if faulty:
        return Reason(None, True, faulty.group(0))
    other = OTHER.search(text)
    if other:
        return Reason("other", False, other.group(0))
    return Reason(None, False, "")


def sentences(text: str) -> list[str]:
    return [part.strip() for part in _SENTENCE.split(text) if part.strip()]


def clauses(sentence: str) -> list[str]:
    return [part for part in _CLAUSE.split(sentence) if part and part.strip()]


def _is_question(sentence: str) -> bool:
    if _REQUEST_QUESTION.search(sentence):
        return False
    return sentence.rstrip().endswith(("?", "？", "吗")) or bool(_QUESTION_START.search(sentence))


def _commands_refund(sentence: str) -> bool:
    if _NEGATED.search(sentence):
        return False
    condition = _FUTURE_CONDITION.search(sentence)
    if condition and not _POLICY_CONDITION.search(condition.group("condition")):
        return False
    if _REQUEST_QUESTION.search(sentence):
        return True
    if _is_question(sentence):
        return False
    if any(_COMMAND.search(clause) and not _NEGATED.search(clause) for clause in clauses(sentence)):
        return True
    return bool(_CJK.search(sentence) and _ZH_COMMAND.search(sentence))


def _amount(text: str) -> tuple[Decimal | None, bool]:
    for match in _AMOUNT.finditer(text):
        if _CONTEXT_AMOUNT.search(text[: match.start()]):
            continue
        value = _money(next(group for group in match.groups() if group is not None))
        if value is not None:
            return value, True
    # A bare number in a refund command ("put through 60") is the amount: never replace it
    # with the balance. Two of them leave the amount open.
    bare = {
        _money(match.group("n"))
        for match in _BARE_NUMBER.finditer(text)
        if not _CONTEXT_AMOUNT.search(text[: match.start()])
    }
    if len(bare) == 1:
        return bare.pop(), True
    if len(bare) > 1:
        return None, True
    return None, False


def mentions_refunds(text: str) -> bool:
    """Whether `text` speaks of refunds or money going back at all."""
    return bool(_REFUND_TOPIC.search(text))


def read_intent(request: str) -> Intent:
    order_ids = tuple(dict.fromkeys(_ORDER_ID.findall(request)))
    bad_refs = tuple(dict.fromkeys(m.group("n") for m in _BAD_ORDER_REF.finditer(request)))
    words = _IDENTIFIER.sub(" ", _ORDER_ID.sub(" ", request))
    parts = sentences(words)
    refund_sentences = [part for part in parts if _commands_refund(part)]
    go_ahead = bool(_GO_AHEAD.search(words)) and bool(
        _WANTS_MONEY.search(words) or _REFUND_TOPIC.search(words)
    )
    negated = bool(_NEGATED.search(words))
    defers = bool(_DEFER_TO_CUSTOMER.search(words))
    wants_refund = (bool(refund_sentences) or go_ahead) and not (negated and not refund_sentences)
    question = any(_is_question(part) for part in parts) and not wants_refund
    amount, amount_given = _amount(words)
    reason = read_reason(words)
    relays_wish = bool(_WANTS_MONEY.search(words)) and not wants_refund and not negated
    closing = bool(_CLOSING.search(request.strip())) and not order_ids
    return Intent(
        wants_refund=wants_refund,
        defers_to_customer=defers,
        asks_status=bool(_STATUS.search(words)),
        # A refund the agent only relays ("Li also wants a refund") is weighed against the
        # policy, not proposed.
        asks_policy=(bool(_POLICY_QUESTION.search(words)) or relays_wish)
        and (question or not wants_refund),
        asks_list=bool(_LIST.search(words)),
        # "Who has to approve it?" is a policy question; "approve it now" asks for an approval.
        asks_approval=any(_APPROVE.search(part) and not _is_question(part) for part in parts),
        closing=closing,
        question=question,
        reason=reason.reason,
        faulty=reason.faulty,
        reason_words=reason.words,
        amount=amount,
        amount_given=amount_given,
        remaining=bool(REMAINING.search(words)),
        vague_amount=bool(_VAGUE_AMOUNT.search(words)),
        full=bool(FULL.search(words)),
        change=bool(_CHANGE.search(words)),
        order_ids=order_ids,
        bad_order_refs=bad_refs,
        chinese=bool(_CJK.search(request)),
        words=words,
    )


# --- The customer's words: facts about the ticket's order --------------------------------

_DOUBTS_ORDER = re.compile(
    r"\b(?:other orders?|another order|different order|wrong order|not (?:from )?(?:the|this|that)"
    r" \w+(?: \w+)? (?:one|order)|mixed (?:things|it|them) up|i'?ll check which)\b"
    r"|其他订单|另一个订单|别的订单|搞错了订单|不是这个订单",
    re.I,
)
_OTHER_THING = re.compile(
    r"\bthe other (?:thing|item|one|order|purchase|product)\b|\bmy other orders?\b"
    r"|\banother (?:thing|item|order|purchase)\b|另一个|别的东西|其他东西",
    re.I,
)


def customer_messages(transcript: Transcript) -> list[str]:
    """What the customer wrote on the ticket, oldest first (untrusted: facts only)."""
    return [body for label, body in transcript.untrusted_texts if label == "customer message"]


def ticket_subject(transcript: Transcript) -> str:
    subjects = [body for label, body in transcript.untrusted_texts if label == "ticket subject"]
    return subjects[-1] if subjects else ""


def customer_reason(
    transcript: Transcript, order_id: str | None = None, item_words: frozenset[str] = frozenset()
) -> Reason:
    """The reason the customer's messages (latest first) or the ticket subject describe for the
    order: in a message about several orders, only the sentences that name this order or its
    item count, when there are any."""
    for text in [*reversed(customer_messages(transcript)), ticket_subject(transcript)]:
        found = read_reason(_ORDER_ID.sub(" ", _about(text, order_id, item_words)))
        if found.reason or found.faulty:
            return found
    return Reason(None, False, "")


def _about(text: str, order_id: str | None, item_words: frozenset[str]) -> str:
    parts = sentences(text)
    mine = [
        part
        for part in parts
        if (order_id and order_id in part)
        or any(word in item_words for word in re.findall(r"[a-z]+", part.lower()))
    ]
    return " ".join(mine) if mine else text


def customer_doubts_order(transcript: Transcript) -> bool:
    """The customer's latest message says the ticket's order may not be the one."""
    messages = customer_messages(transcript)
    return bool(messages) and bool(
        _DOUBTS_ORDER.search(messages[-1]) or _OTHER_THING.search(messages[-1])
    )


def customer_orders_named(transcript: Transcript) -> set[str]:
    messages = customer_messages(transcript)
    return set(_ORDER_ID.findall(messages[-1])) if messages else set()


def customer_latest_asks(transcript: Transcript) -> Intent | None:
    """What the customer's latest message asks, read like an agent's request; for questions
    the assistant answers with read tools, and for the agent to confirm, never to act on."""
    messages = customer_messages(transcript)
    if not messages:
        return None
    latest = read_intent(messages[-1])
    asks_money = bool(_WANTS_MONEY.search(messages[-1]) or _COMMAND.search(messages[-1]))
    if asks_money and not latest.wants_refund:
        latest = replace(latest, wants_refund=True)
    return latest


def _order_for(transcript: Transcript, intent: Intent) -> str | None:
    if intent.order_ids:
        return intent.order_ids[0]
    return transcript.ticket_order
