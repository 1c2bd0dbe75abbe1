"""The words a model's own answer is read by, before it is posted (agent/runtime/answers.py):
a refund it says it proposed, negation, an order's facts stated, and someone else's words
reported. Only small-model mode reads them: an answer that tells of work the run's tool log
does not show is asked again (DESIGN §16). Patterns rather than Lexicons, as they were written
for the shapes of those answers ("I've just submitted", "已提交退款", "j'ai proposé").
"""

import re

# A proposal the answer says the assistant made: "I proposed / have submitted …", "Proposed a
# refund of …", "已提交退款…", "ich habe … vorgeschlagen", "j'ai proposé", "he propuesto".
PROPOSED = re.compile(
    r"\b(?:i|we)(?:'ve|\s+have|\s+just|\s+now)?\s+(?:just\s+|now\s+|also\s+)?"
    r"(?:proposed|submitted|created|raised|filed|opened|logged|put\s+in|requested|initiated)\b"
    r"|(?:^\W*|\b(?:and|then)\s+)(?:proposed|submitted|created|raised)\s+(?:a|an|the)\s+"
    r"(?:\w+\s+){0,3}refund"
    r"|\brefund\s+(?:proposal|request)?\s*(?:has\s+been|was)\s+(?:proposed|submitted|created)"
    r"|(?:我|已经|已)(?:为|给)?[^。！？,，]{0,12}(?:提交|提出|创建|发起)(?:了)?[^。！？]{0,12}退款"
    r"|\b(?:ich|wir)\s+(?:habe|haben)\b[^.!?]{0,60}\b(?:vorgeschlagen|eingereicht|erstellt|beantragt)"
    r"|\b(?:j'ai|nous\s+avons)\s+(?:\w+\s+)?(?:propos|soumis|cr[ée]{2}|demand)"
    r"|\b(?:he|hemos)\s+(?:propuesto|enviado|creado|solicitado)",
    re.IGNORECASE | re.MULTILINE,
)
REFUND_WORD = re.compile(
    r"refund|退款|erstattung|remboursement|rembourser|reembolso|devoluci[oó]n", re.IGNORECASE
)
NEGATION_WORD = re.compile(
    r"\b(?:no|not|nothing|never|none|neither|nor|kein\w*|nicht|pas|aucun\w*|ningún|ninguna|nunca)\b"
    r"|n't|没有|没|未|不",
    re.IGNORECASE,
)
# What an order looks like when an answer states its facts: its number, and in the same sentence
# an amount or a state it is in.
ORDER_FACT = re.compile(
    r"(?<![\d.,])\d+[.,]\d{2}(?!\d)"
    r"|\b(?:delivered|shipped|paid|cancell?ed|processing|dispatched|in\s+transit)\b"
    r"|已发货|已送达|已签收|已付款|已支付|已取消|配送中"
    r"|\b(?:geliefert|versandt|bezahlt|storniert|livr[ée]e?|exp[ée]di[ée]e?|pay[ée]e?|annul[ée]e?"
    r"|entregad[oa]|enviad[oa]|pagad[oa]|cancelad[oa])\b",
    re.IGNORECASE,
)
# What someone else wrote, reported ("the customer says order … never arrived"): not a fact the
# answer states.
REPORTED = re.compile(
    r"\b(?:says?|said|writes|wrote|claims?|claimed|reports?|reported|mentions?|mentioned|told|"
    r"according\s+to|asks?|asked)\b|说|表示|声称|提到",
    re.IGNORECASE,
)
