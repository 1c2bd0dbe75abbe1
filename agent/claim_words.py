# ruff: noqa: RUF001 (Chinese and typographic punctuation is what these texts are written in)
"""The words the claim check (agent/answer_check.py) reads refund claims by, one entry per
language. Adding a language is adding an entry: nothing else in the check names a language.

Each entry is regular-expression text (case-insensitive), in four groups:
  * what a claim is about: `money` (refund, money, amount, …) and `self_money`, verbs that are
    about money on their own ("refunded", "erstattet", "退款");
  * what it says happened: `done` (processed, issued, sent, completed, …: true once the refund
    succeeded), `approved` (true from approval on), `underway` (on its way: true from approval
    on, while the money moves);
  * how a completed state is said: `perfect`, the auxiliaries of a finished or passive verb
    ("has been", "wurde", "a été", "ha sido"), and `gap`, how many words may stand between the
    auxiliary and its verb (English keeps them together; German puts the verb last);
  * what takes a claim back, scoped to the clause it stands in: `negation` (before the claim's
    verb), `condition` (anywhere in the clause, or opening the sentence), `habitual` (a
    present-tense statement about how refunds usually go, not about this one).
`phrases` are whole claims a language says without an auxiliary ("Refund completed", "went
through", "已退款"), as (kind, pattern) pairs.
"""

from dataclasses import dataclass, field

REFUNDED = "refunded"
APPROVED = "approved"
ON_ITS_WAY = "on_its_way"

# An amount with its currency, in any language: "899.00 CNY", "¥899", "899 元", "899,00 €".
AMOUNT = (
    r"(?:[¥￥$€£]\s?\d[\d,.]*|\d[\d,.]*\s?(?:cny|rmb|usd|eur|gbp|jpy|yuan|元|块|euros?|"
    r"dollars?|€|円)(?![a-z]))"
)


@dataclass(frozen=True)
class ClaimWords:
    money: str
    self_money: str
    done: str
    approved: str
    underway: str
    perfect: str
    negation: str
    condition: str
    gap: int = 2
    # The auxiliaries of `perfect` that say how things are now, not what happened: a claim made
    # with them is taken back by a condition opening the sentence too ("Once approved, your
    # refund is sent to your card").
    present: str = r"(?!x)x"
    habitual: str = r"(?!x)x"
    # What may be approved besides money: "your refund request was approved".
    request: str = r"requests?|applications?|claims?"
    # Words that, right after a money word, make it about something else: "refund request".
    not_money_after: str = r"(?!x)x"
    phrases: tuple[tuple[str, str], ...] = field(default_factory=tuple)
    # Scripts without spaces between words (Chinese, Japanese) are matched character-wise.
    spaced: bool = True


EN_MONEY = r"refunds?|reimbursements?|money|funds|amount|credit|repayment|" + AMOUNT
# "We have …", "I've …", "Our team has just …" before an active verb.
WE = (
    r"\b(?:we|i|our\s+team|the\s+team)(?:'ve|’ve|'d|’d)?\s+(?:(?:have|has|had|just|already|"
    r"now|successfully|also|gone\s+ahead\s+and)\s+)*"
)

LANGUAGES: dict[str, ClaimWords] = {
    "en": ClaimWords(
        money=EN_MONEY,
        self_money=r"refunded|reimbursed|credited|repaid|paid\s+(?:you\s+)?back|paid\s+out",
        done=r"processed|issued|sent|completed?|returned|transferred|released|finali[sz]ed|"
        r"done|settled|wired|deposited|paid|successful|executed|arrived|landed|cleared|"
        r"posted",
        approved=r"approved|authori[sz]ed|accepted|confirmed|granted|signed\s+off",
        underway=r"on\s+(?:its|their|the)\s+way|in\s+transit|being\s+(?:processed|sent|issued|"
        r"transferred|paid|wired)|underway|initiated|under\s+way|en\s+route",
        # "is being processed" says it is under way, not done (`underway`).
        perfect=r"(?:has|have|had|was|were|is|are|been|'s|'ve|’s|’ve)(?!\s+being\b)",
        present=r"is|are|'s|’s",
        gap=3,
        negation=r"not|n't|n’t|never|no|nothing|none|neither|nor|cannot|without|yet\s+to|"
        r"unable|(?:should|may|might|could|would|must)(?:\s+not)?\s+(?:have|be)",
        condition=r"if|once|when|whenever|after|until|unless|whether|as\s+soon\s+as|"
        r"provided|in\s+case|assuming|pending|awaiting|waiting|hope|hopefully|"
        r"for\s+(?:approval|review|sign-?off)|"
        r"to\s+(?:our|the|a)\s+(?:\w+\s+)?(?:team|reviewer|supervisor|manager|department)",
        habitual=r"usually|normally|typically|generally|always|often|refunds\s+(?:are|get)|"
        r"(?:all|each|every|any)\s+refunds?|"
        # A kind of refund, not one ("including refunds that are approved or being paid out").
        r"(?:refunds|requests|ones)\s+(?:that|which)",
        not_money_after=r"\s+(?:requests?|application|claims?|proposals?|forms?|polic\w+|"
        r"window|status|review|team|process|options?|rules?)\b",
        phrases=(
            (REFUNDED, r"\b(?:went|gone)\s+through\b(?P<needs_money>)"),
            (REFUNDED, WE + r"(?:refunded|reimbursed|credited|repaid|paid\s+(?:\S+\s+)?back)\b"),
            (
                REFUNDED,
                WE + r"(?:issued|processed|sent|returned|transferred|wired|completed|"
                r"released|deposited|paid)\s+(?:\S+\s+){0,3}?(?:" + EN_MONEY + r")\b",
            ),
            (
                REFUNDED,
                r"\b(?:refund|reimbursement)\s+(?:successful|complete[d]?|processed|"
                r"issued|done|sent|confirmed)\b",
            ),
            (REFUNDED, r"\b(?:successfully|fully)\s+(?:refunded|reimbursed|credited)\b"),
            (REFUNDED, r"\brefunded\s+(?:in\s+full|successfully)\b"),
            (
                REFUNDED,
                r"\byou(?:'ve|’ve|\s+have)\s+(?:(?:already|now|just)\s+)?"
                r"(?:received|got(?:ten)?)\b(?P<needs_money>)",
            ),
            (
                ON_ITS_WAY,
                r"\b(?:we|i)(?:'re|’re|\s+are|\s+am|'m|’m)\s+(?:now\s+)?"
                r"(?:processing|sending|issuing|transferring|refunding|paying)\b(?P<needs_money>)",
            ),
            (
                ON_ITS_WAY,
                r"(?:'ll|’ll|\bwill)\s+(?:now\s+)?(?:receive|see|get)\b"
                r"(?P<needs_money>)(?P<open>)",
            ),
            (
                APPROVED,
                r"\b(?:we|i)(?:'ve|’ve|\s+have)?\s+(?:just\s+|already\s+)?"
                r"(?:approved|authori[sz]ed)\b(?P<needs_money>)",
            ),
        ),
    ),
    "zh": ClaimWords(
        request=r"申请|请求",
        money=r"退款|款项|款|钱|费用|金额|货款|" + AMOUNT,
        self_money=r"退款|退还|退回|返还|退费|返款|打款|退钱|原路退|到账|退给|退了",
        done=r"处理|完成|办理|发放|发出|支付|打到|转入|转账|成功|完毕|好了",
        approved=r"批准|通过|核准|同意|审核通过|审批通过",
        underway=r"在路上|途中|正在(?:为您)?(?:办理|处理|退款|退还)|处理中|办理中|退款中",
        perfect=r"已经|已|了|成功|完成|完毕",
        gap=30,
        negation=r"未|没|不|无|尚|别|并非",
        condition=r"如果|假如|若|一旦|等到|之后|以后|(?:完成|处理|批准|通过|到账|审核|"
        r"审批|确认)后|只要|是否|需要|要是|吗|(?<!期)待",
        not_money_after=r"(?:申请|请求|提议|建议|提案|方案|单|审核|审批|政策|流程|状态|规则|的)",
        phrases=(
            (
                REFUNDED,
                r"已(?:经)?(?:为您|给您|帮您|向您)?(?:全额|全部|部分)?"
                r"(?:办理|安排|完成|处理)?(?:了)?(?:退款|退还|退回|返还|退费|打款|返款|退钱)",
            ),
            (REFUNDED, r"退款(?:已|已经)?(?:成功|完成|办理完成|处理完成|处理完毕|到账)"),
            (REFUNDED, r"(?:退|返)(?:还|回)?(?:给)?(?:您|你)?了"),
        ),
        spaced=False,
    ),
    "ja": ClaimWords(
        request=r"申請|リクエスト",
        money=r"返金|代金|お金|金額|" + AMOUNT,
        self_money=r"返金|払い戻",
        done=r"完了|処理|済み|済|発行|送金|振込|振り込",
        approved=r"承認",
        underway=r"手続き中|処理中|返金中",
        perfect=r"ました|しました|済み|済|されました|いたしました|完了",
        gap=10,
        negation=r"ません|ない|未|まだ",
        condition=r"場合|次第|たら|後|予定|ば",
        phrases=((REFUNDED, r"返金(?:を)?(?:いた)?し(?:ました)|返金済|返金(?:が|は)?完了"),),
        spaced=False,
    ),
    "de": ClaimWords(
        request=r"antrag|anfrage",
        money=r"(?:rück)?erstattung\w*|rückzahlung\w*|geld\w*|betrag\w*|beträge|gutschrift\w*|"
        r"summe|zahlung|" + AMOUNT,
        self_money=r"(?:zurück|rück)?erstattet|gutgeschrieben|ausgezahlt|zurückgezahlt|"
        r"zurücküberwiesen|rückvergütet|zurückgebucht",
        done=r"bearbeitet|veranlasst|durchgeführt|abgeschlossen|überwiesen|angewiesen|"
        r"ausgeführt|erledigt|ausgestellt|verarbeitet|gesendet|gesandt|versandt|verschickt|"
        r"bezahlt|abgewickelt|vorgenommen|zurückgeschickt|erfolgt|eingegangen",
        approved=r"genehmigt|bewilligt|freigegeben|akzeptiert|bestätigt",
        underway=r"unterwegs|auf\s+dem\s+weg|in\s+bearbeitung|wird\s+(?:gerade\s+)?"
        r"(?:bearbeitet|überwiesen|ausgezahlt)",
        perfect=r"wurde|wurden|ist|sind|hat|haben|habe|hatte|hatten|war|waren|worden",
        present=r"ist|sind",
        gap=9,
        negation=r"nicht|kein\w*|nichts|nie|niemals|noch\s+nicht|weder",
        condition=r"wenn|falls|sobald|nachdem|sofern|ob|bis|vorausgesetzt|erst|voraussichtlich"
        r"|bevor|nach\s+(?:der|dem)\s+\w+",
        habitual=r"normalerweise|in\s+der\s+regel|üblicherweise|innerhalb|meist",
        not_money_after=r"s?(?:antrag|anfrage|richtlinie\w*|status)\b",
    ),
    "fr": ClaimWords(
        request=r"demandes?|requêtes?",
        money=r"remboursements?|argent|montants?|sommes?|paiements?|fonds|avoirs?|" + AMOUNT,
        self_money=r"remboursée?s?|créditée?s?|reversée?s?",
        done=r"effectuée?s?|traitée?s?|émise?s?|envoyée?s?|versée?s?|virée?s?|"
        r"terminée?s?|finalisée?s?|réalisée?s?|procédé|exécutée?s?|payée?s?|"
        r"accordée?s?|restituée?s?|retournée?s?",
        approved=r"approuvée?s?|validée?s?|acceptée?s?|autorisée?s?|confirmée?s?",
        underway=r"en\s+route|en\s+chemin|en\s+cours(?:\s+de\s+\w+)?|est\s+parti",
        perfect=r"a|ont|avons|ai|avez|as|est|sont|été|fut|furent|était",
        present=r"est|sont",
        gap=5,
        negation=r"ne|n['’]|pas|jamais|aucune?|rien|ni|non",
        condition=r"si|s['’]il|lorsque|lorsqu['’]\w+|quand|dès\s+que|une\s+fois|après|avant|"
        r"jusqu['’]à|sous\s+réserve|dès|prévu|devrait",
        habitual=r"généralement|habituellement|normalement|sous\s+\d+|en\s+général",
        not_money_after=r"\s+(?:demandes?|politique|dossier)\b",
    ),
    "es": ClaimWords(
        request=r"solicitud|solicitudes|petici[oó]n",
        money=r"reembolsos?|dinero|importes?|montos?|pagos?|devoluci[oó]n|devoluciones|"
        r"cantidad|fondos|abonos?|" + AMOUNT,
        self_money=r"reembolsad[oa]s?|devuelt[oa]s?|abonad[oa]s?|acreditad[oa]s?|"
        r"reintegrad[oa]s?",
        done=r"procesad[oa]s?|emitid[oa]s?|enviad[oa]s?|completad[oa]s?|realizad[oa]s?|"
        r"efectuad[oa]s?|transferid[oa]s?|tramitad[oa]s?|pagad[oa]s?|finalizad[oa]s?|"
        r"ejecutad[oa]s?",
        approved=r"aprobad[oa]s?|autorizad[oa]s?|aceptad[oa]s?|confirmad[oa]s?",
        underway=r"en\s+camino|en\s+curso|en\s+tr[aá]mite|en\s+proceso",
        perfect=r"ha|han|hemos|he|has|habéis|sido|fue|fueron|está|están",
        present=r"está|están",
        gap=5,
        negation=r"no|nunca|ningún|ninguna|ninguno|nada|todavía\s+no|aún\s+no|ni",
        condition=r"si|cuando|una\s+vez|en\s+cuanto|tan\s+pronto|despu[eé]s|hasta|siempre\s+que|"
        r"antes|cuanto",
        habitual=r"normalmente|generalmente|habitualmente|suele|dentro\s+de",
        not_money_after=r"\s+(?:solicitud|petici[oó]n|pol[ií]tica)\b",
    ),
    "it": ClaimWords(
        request=r"richiest[ae]",
        money=r"rimbors[oi]|denaro|soldi|importo|somma|pagamento|" + AMOUNT,
        self_money=r"rimborsat[oaie]|accreditat[oaie]|restituit[oaie]",
        done=r"elaborat[oaie]|emess[oaie]|inviat[oaie]|completat[oaie]|effettuat[oaie]|"
        r"eseguit[oaie]|trasferit[oaie]|pagat[oaie]|processat[oaie]",
        approved=r"approvat[oaie]|autorizzat[oaie]|accettat[oaie]",
        underway=r"in\s+arrivo|in\s+corso|in\s+viaggio",
        perfect=r"ha|hanno|abbiamo|ho|è|sono|stato|stata|stati|state|era",
        gap=5,
        negation=r"non|mai|nessun\w*|niente|nulla",
        condition=r"se|quando|una\s+volta|appena|dopo|finché|prima",
        habitual=r"normalmente|solitamente|generalmente|entro",
    ),
    "pt": ClaimWords(
        request=r"pedidos?|solicitaç(?:ão|ões)",
        money=r"reembolsos?|dinheiro|valor|quantia|pagamento|estorno|devolução|" + AMOUNT,
        self_money=r"reembolsad[oa]s?|estornad[oa]s?|devolvid[oa]s?|creditad[oa]s?",
        done=r"processad[oa]s?|emitid[oa]s?|enviad[oa]s?|conclu[ií]d[oa]s?|efetuad[oa]s?|"
        r"realizad[oa]s?|transferid[oa]s?|pag[oa]s?|finalizad[oa]s?",
        approved=r"aprovad[oa]s?|autorizad[oa]s?|aceit[oa]s?",
        underway=r"a\s+caminho|em\s+andamento|em\s+processamento",
        perfect=r"foi|foram|tem|têm|temos|tenho|está|estão|sido",
        gap=5,
        negation=r"não|nunca|nenhum\w*|nada",
        condition=r"se|quando|assim\s+que|depois|até|uma\s+vez|antes",
        habitual=r"normalmente|geralmente|dentro\s+de|costuma",
    ),
    "nl": ClaimWords(
        request=r"aanvraag|verzoek",
        money=r"terugbetaling|restitutie|geld|bedrag|terugstorting|" + AMOUNT,
        self_money=r"terugbetaald|teruggestort|gerestitueerd|gecrediteerd|vergoed",
        done=r"verwerkt|uitgevoerd|overgemaakt|verstuurd|verzonden|voltooid|afgerond|betaald",
        approved=r"goedgekeurd|geaccepteerd",
        underway=r"onderweg|in\s+behandeling",
        perfect=r"is|zijn|werd|werden|heeft|hebben|heb|was|waren",
        gap=8,
        negation=r"niet|geen|nooit|niets|nog\s+niet",
        condition=r"als|indien|zodra|wanneer|nadat|tot|mits|voordat",
        habitual=r"meestal|normaal|doorgaans|binnen",
    ),
}
