"""The desk's vocabulary: what it reads in a support agent's words, shared by the offline planner
(agent/providers/offline), the tools' guards (agent/tools/guards.py) and the run's records: the
reasons the words describe, in the policy's vocabulary (damaged, not_received, wrong_item,
other), whether they ask for what is left or the full price, and the policy topics a question
names.
"""

import re

NOT_RECEIVED = re.compile(
    r"\b(?:never (?:arrived|came|turned up|showed up|got (?:it|there)|received|delivered)"
    r"|not (?:yet )?(?:arrived|received|delivered|come)|non-?delivery|undelivered"
    r"|(?:hasn'?t|has not|haven'?t|have not|didn'?t|did not|still hasn'?t|still has not)"
    r"(?: yet)? (?:arrived|been delivered|received|come|turned up|shown up|got (?:it|there))"
    r"|lost in (?:the )?(?:post|mail|transit)|(?:parcel|package|order|it) (?:is|was|got) lost"
    r"|still (?:no|waiting)|tracking (?:hasn'?t|has not) (?:moved|updated)"
    r"|missing (?:parcel|package|order|delivery|lamp|item)|the missing)\b"
    r"|没收到|未收到|没有收到|还没到|没到货|未到货|还没收到|一直没到|没送到|丢件|丢失了|快递丢",
    re.I,
)
WRONG_ITEM = re.compile(
    r"\bwrong (?:item|colou?r|size|model|book|design|product|thing|one|version|style|variant"
    r"|edition|shade|article|goods|parcel|package|pair|type|kind|title)s?\b"
    r"|\bsent (?:her |him |them |me |us )?(?:the )?wrong\b|\bas wrong[ _]item\b"
    r"|\bwrong[ _]item\b|\b(?:received|got|sent|delivered|came with)\b[^.?!]{0,40}\binstead of\b"
    r"|\bnot (?:the (?:one|design|model|colou?r|size|item|book|thing)|what) (?:she|he|they|i|we"
    r"|the customer) (?:ordered|bought|asked for|paid for)\b"
    r"|\bisn'?t (?:the (?:one|design|model|colou?r|size|item|book)|what) (?:she|he|they|i|we"
    r"|the customer) (?:ordered|bought|asked for)\b"
    r"|\bdifferent (?:item|model|size|colou?r|product|book|version|design)\b[^.?!]{0,25}"
    r"\b(?:ordered|bought|asked for|paid for)"
    r"|发错|寄错|颜色不对|尺码不对|尺寸不对|型号不对|款式不对|不是我(?:买|订|要)的|货不对",
    re.I,
)
DAMAGED = re.compile(
    r"\b(?:broken|broke|breaks|damaged?|damage|cracked|cracks?|shattered|smashed|crushed"
    r"|dented|scratched|torn|ripped|leak(?:s|ing|ed)?|in pieces|chipped|bent|snapped)\b"
    r"|\bas damaged\b|坏了|摔坏|碎了|破了|破损|损坏|裂了|裂开|压坏|有裂痕|划痕",
    re.I,
)
# A fault in use is "damaged" only where the policy says so (see planner._policy_counts_faults).
FAULTY = re.compile(
    r"\b(?:stopped (?:working|charging|turning on)|(?:does ?n[o']?t|do not|did not|didn'?t"
    r"|won'?t|will not|can'?t|cannot) (?:work|charge|turn on|switch on|power on|start|boot)"
    r"|not (?:working|charging|turning on)|faulty|defective|defect|malfunction\w*"
    r"|dead on arrival|doa|dead|glitch\w*|keeps? (?:crashing|dropping|disconnecting))\b"
    r"|不工作|不能用|用不了|充不了电|不充电|充不进电|开不了机|开不了|无法开机|故障|失灵|没反应",
    re.I,
)
OTHER = re.compile(
    r"\b(?:changed (?:her|his|their|my) mind|changed mind|no longer (?:wants?|needs?)"
    r"|(?:does ?n[o']?t|don'?t) (?:want|need) (?:it|them|the \w+)|goodwill|gesture"
    r"|as a courtesy|courtesy|reason other|as other|unwanted|too late for|unhappy|not happy"
    r"|dislikes?|(?:does ?n[o']?t|don'?t) like|disappointed"
    r"|not as (?:described|expected|pictured))\b"
    r"|不想要了|不要了|不需要了|改变主意|反悔",
    re.I,
)
EXPLICIT_REASON = re.compile(
    r"\b(?:reason|as|with reason|because of|for)\s*[:=]?\s*[\"']?"
    r"(?P<r>damaged|not[ _]received|wrong[ _]item|other)\b",
    re.I,
)

REMAINING = re.compile(
    r"\b(?:remaining|the rest|whatever(?:'s| is)? left|what(?:'s| is) left|the balance"
    r"|refundable balance|left on)\b|剩余|剩下",
    re.I,
)
FULL = re.compile(r"\b(?:full|entire|whole|in full|all of it|everything)\b|全额|全部", re.I)

# Policy questions, by topic: the words searched for. Several topics may be asked at once.
POLICY_TOPICS = (
    (
        re.compile(
            r"eligib|which (?:could|can|of)|could still|refundable|which orders|可以退", re.I
        ),
        "refund window non-refundable categories digital balance",
    ),
    (
        re.compile(r"window|how long|how many days|days|still|too late|期限|多少天", re.I),
        "refund window days after delivery",
    ),
    (
        re.compile(r"limit|allowed|most|intern|role|may i|can i propose|额度|上限|权限", re.I),
        "authority limits per role propose",
    ),
    (
        re.compile(r"approv|review|four.eyes|sign.? off|authori[sz]|审批|审核", re.I),
        "approval reviewer four-eyes",
    ),
    (
        re.compile(r"partial|part of|instead of the full|部分", re.I),
        "partial refunds amount balance",
    ),
    (
        re.compile(r"gift ?card|digital|download|e-?book|categor|礼品卡|电子", re.I),
        "non-refundable categories digital goods gift cards",
    ),
    (re.compile(r"cancel|取消", re.I), "cancelled orders reason order state"),
    (
        re.compile(r"not received|reason|damaged|wrong item|原因", re.I),
        "reason must fit the order state",
    ),
)
CLAUSE_REF = re.compile(r"\bR-\d+\b", re.I)


def reasons_described(text: str) -> set[str]:
    """Every reason the words describe, in the policy's vocabulary ("arrived in pieces" and
    "broken" are both damaged). A fault in use is none of them (whether it counts as damaged is
    the policy's to say), and words of feeling ("unhappy") say "other" only where nothing else
    happened, as read_reason reads them."""
    found = {match.group("r").lower().replace(" ", "_") for match in EXPLICIT_REASON.finditer(text)}
    for reason, pattern in (
        ("wrong_item", WRONG_ITEM),
        ("not_received", NOT_RECEIVED),
        ("damaged", DAMAGED),
    ):
        if pattern.search(text):
            found.add(reason)
    if not found and not FAULTY.search(text) and OTHER.search(text):
        found.add("other")
    return found


def policy_keywords(words: str) -> str:
    """The clause refs and policy topics `words` name, as a search's keywords ("" for none)."""
    refs = [ref.upper() for ref in CLAUSE_REF.findall(words)]
    topics = [query for pattern, query in POLICY_TOPICS if pattern.search(words)]
    return " ".join(dict.fromkeys([*refs, *topics]))[:200]
