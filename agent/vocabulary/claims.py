# Over 400 lines: data, one entry of word lists per language for each of the claim check's two
# readers; nothing here runs but the dataclasses that hold them.

"""The words the claim check (agent/answer_check/) reads refund claims by, one entry per
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

`LEXICON` is the recall-first reader's (agent/answer_check/recall.py): per
language, word stems of money and refunds, the cues that money moved, was approved or is on
its way, and the words that take a cue back. It reads the texts the precise entries above
found no claim in, when no model read them.
"""

from dataclasses import dataclass, field

REFUNDED = "refunded"
APPROVED = "approved"
ON_ITS_WAY = "on_its_way"
# Only a model reads this kind: a refund was asked for, proposed or submitted.
REQUESTED = "requested"

# An amount with its currency, in any language: "899.00 CNY", "¥899", "899 元", "899,00 €".
# A figure is read whole from its first digit, once (`(?<!…)` and `*+`): "0000…" of any length
# is one try, not one per digit.
AMOUNT = (
    r"(?:[¥￥$€£]\s?\d[\d,.]*+|(?<![\d,.])\d[\d,.]*+\s?(?:cny|rmb|usd|eur|gbp|jpy|yuan|元|块|"
    r"euros?|dollars?|€|円)(?![a-z]))"
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
        r"provided|in\s+case|assuming|pending|awaiting|waiting|hope|hopefully|expect\w*|"
        r"scheduled|planned|"
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
        # Not "en cours d'examen": under review is not under way.
        underway=r"en\s+route|en\s+chemin|est\s+parti|en\s+cours(?!\s+d['’](?:examen|étude|"
        r"analyse)|\s+de\s+(?:validation|vérification|révision))(?:\s+de\s+\w+)?",
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


# --- The recall-first reader --------------------------------------------------------------


@dataclass(frozen=True)
class Lexicon:
    """One language's words for the recall-first reader, as regular-expression text matched
    case-insensitively. In a spaced language `money` entries are stems (`rembours` finds
    "remboursé") and the other entries whole words (an entry may end in `\\w*` to be a stem);
    in the others every entry is matched where it stands.

      * `money`: what speaks of refunds or money;
      * the cues: `done` (the money moved: refunded, processed, sent, back on your card),
        `approved` (a refund or its request approved), `underway` (on its way);
        and `near_money`, `done` cues too general to count without a money word in their own
        clause ("已", "しました", "arrived");
      * what takes a cue back, in the clause it stands in: `hedge` (negation, condition,
        future, modal, habit), `process` (a request or a review: "your refund request was sent
        to the team"; it takes back `done` and `underway`, not `approved`), `paper` (a document
        or a message: "we sent you an e-mail about your refund"), `other` (goods that are sent
        or processed, a parcel, a replacement: a clause about one that names no money claims
        nothing), and `opening`, the conditions that, in a sentence's first clause, take the
        whole sentence back ("Once approved, the money is back on your card in 3 days").
    """

    money: str
    done: str
    approved: str
    underway: str
    hedge: str
    process: str
    near_money: str = r"(?!x)x"
    paper: str = r"(?!x)x"
    other: str = r"(?!x)x"
    opening: str = r"(?!x)x"
    spaced: bool = True


# "No", but not the Portuguese "no" (in the) before its noun: "no seu cartão".
NO = r"no(?!\s+(?:seu|sua|teu|tua|cartão|banco|dia|valor|prazo|mesmo))"

LEXICON: dict[str, Lexicon] = {
    "en": Lexicon(
        money=r"refund|reimburs|repay|money|funds|payment|amount|credit|cash|charge|"
        r"paid\s+back|balance",
        done=r"processed|issued|sent|gone\s+out|went\s+out|gone\s+through|went\s+through|"
        r"(?:is|are|was)\s+back|back\s+(?:in|on|to|into)\s+(?:your|the)|credited|"
        r"reimbursed|refunded|repaid|paid\s+(?:you\s+)?back|paid\s+out|returned|transferred|"
        r"completed?|done|settled|released|deposited|wired|executed|finali[sz]ed|"
        r"sorted(?:\s+out)?|taken\s+care\s+of|all\s+set|put\s+(?:\w+\s+)?back|reversed|"
        r"(?:is|are)\s+through|got\s+(?:\w+\s+){0,2}back|(?:is|are)\s+(?:now\s+|already\s+)?"
        r"(?:in|on)\s+your\s+(?:account|card|bank)",
        near_money=r"arrived|landed|cleared|posted|hit|finished",
        approved=r"approved|authori[sz]ed|accepted|granted|signed\s+off|green[- ]?lit|"
        r"green\s+light|"
        r"okayed|ok['’]?d",
        underway=r"on\s+(?:its|their|the|your)\s+way|in\s+transit|en\s+route|under\s*way|"
        r"initiated|being\s+(?:processed|sent|issued|"
        r"transferred|paid|wired|refunded|credited|returned)|we['’]re\s+(?:sending|"
        r"refunding|processing|paying|transferring)",
        hedge=rf"not|{NO}|never|nothing|none|nobody|neither|nor|cannot|unable|if|once|unless|until|whether|when|whenever|as\s+soon\s+as|provided|"
        r"will|would|could|might|may|shall|should\s+(?:be|get)|can\s+be|"
        r"going\s+to|pending|awaiting|waiting|expect\w*|usually|normally|typically|"
        r"generally|always|often|refunds\s+(?:are|take|get)|policy|eligible|ineligible|"
        r"asked|asking|wonder\w*|hope\w*|let\s+(?:me|us)\s+(?:check|know)|to\s+be|"
        r"to\s+(?:complete|process|issue|finali[sz]e|send|refund)",
        process=r"requests?|requested|application|claim|claims|review\w*|forwarded|look\w*\s+into|investigat\w*|"
        r"escalat\w*|submitted|proposal|proposed",
        paper=r"e-?mails?|emailed|messages?|labels?|letter|form|link|instructions|photos?|"
        r"invoice|receipt|details|survey",
        other=r"package|parcel|order|item|items|replacement|tracking|shipment|delivery|"
        r"returns?|goods",
        opening=r"if|once|when|whenever|after|as\s+soon\s+as|unless|until|provided|"
        r"assuming",
    ),
    "zh": Lexicon(
        money=r"退(?!货|出)|(?<![这该新同那一])款(?!式)|钱|返还|到账|元|人民币|金额",
        done=r"完成|完毕|搞定|到账|到帐|原路返回|退回|退还|返还|打款|转账|成功|办好|处理好|退给|"
        r"返回",
        near_money=r"已|了(?!解)",
        approved=r"批准|审核通过|审批通过|通过了|同意|核准|获批",
        # Not "正在处理" alone: "we are looking into it" as often as "it is being paid".
        underway=r"在路上|途中|退款中|正在(?:为您)?(?:退款|退还|退回|打款)|已发起",
        hedge=r"未|没|不|无法|尚|如果|假如|若|一旦|等到|之后|以后|后|将|会|要|可能|预计|"
        r"待|通常|一般|是否|吗|请",
        process=r"申请|审核|审批|提交|请求|核实",
        paper=r"邮件|短信|链接|标签|表格|通知|发票",
        other=r"退货|包裹|快递|商品|换货|物流|订单(?!的?退款)",
        opening=r"如果|假如|若|一旦|等到|只要",
        spaced=False,
    ),
    "ja": Lexicon(
        money=r"返金|払い戻|代金|お金|金額|円|ご返金",
        done=r"済み|済|完了|戻りました|振り込みました|入金|返却",
        near_money=r"しました|されました|いたしました",
        approved=r"承認",
        underway=r"手続き中|処理中|返金中|進行中",
        hedge=r"ません|ない|未|まだ|予定|次第|場合|後|あと|でしょう|たら|れば|通常|か[？?]",
        process=r"申請|審査|確認中|リクエスト",
        paper=r"メール|ご案内|リンク",
        other=r"商品|荷物|配送",
        opening=r"もし|承認され(?:次第|たら)",
        spaced=False,
    ),
    "ko": Lexicon(
        money=r"환불|돈|금액|결제\s*취소|입금|반환",
        done=r"완료|입금(?:되었|됐|했)|돌려드렸|처리(?:되었|됐|했)",
        near_money=r"되었습니다|됐습니다|드렸습니다|했습니다",
        approved=r"승인(?:되었|됐|했|\s*완료)",
        underway=r"진행\s*중|처리\s*중",
        hedge=r"않|못|안\s|아직|예정|면\s|경우|후에|후\s|겠|수\s*있|보통|일반적으로|까요|나요",
        process=r"요청|신청|검토|접수",
        paper=r"이메일|메일|문자|링크",
        other=r"상품|택배|배송",
        spaced=False,
    ),
    "de": Lexicon(
        money=r"erstatt|rückerstatt|zurückerstatt|geld|betrag|beträge|rückzahl|gutschrift|"
        r"gutgeschrieben|überweis|zurückgezahlt|ausgezahlt|summe|zahlung",
        done=r"erstattet|rückerstattet|zurückerstattet|gutgeschrieben|zurückgezahlt|"
        r"ausgezahlt|zurücküberwiesen|überwiesen|bearbeitet|veranlasst|erledigt|"
        r"abgeschlossen|durchgeführt|erfolgt|ausgeführt|angewiesen|verbucht|zurückgebucht|"
        r"raus|rausgegangen|herausgegangen|zurück\s+auf|wieder\s+auf|ausgelöst|getätigt|"
        r"(?:ist|sind)\s+(?:\w+\s+)?(?:auf\s+ihrem\s+konto|zurück|durch)",
        near_money=r"angekommen|eingegangen",
        approved=r"genehmigt|bewilligt|freigegeben|akzeptiert|bestätigt|stattgegeben",
        underway=r"unterwegs|auf\s+dem\s+weg|angestoßen|eingeleitet|in\s+die\s+wege\s+geleitet",
        hedge=r"nicht|kein\w*|nichts|nie|niemals|weder|wenn|falls|sobald|nachdem|bis|ob|"
        r"sofern|wird|werden|würde\w*|könnte\w*|kann|können|soll\w*|dürfte|voraussichtlich|"
        r"normalerweise|in\s+der\s+regel|üblicherweise|meist\w*|ausstehend",
        process=r"antrag\w*|anfrage\w*|beantragt|prüf\w*|geprüft|weitergeleitet",
        paper=r"e-mail|mail|nachricht|etikett|formular|link",
        other=r"paket\w*|sendung|bestellung|artikel|ware|rücksendung|ersatz\w*|lieferung",
        opening=r"wenn|falls|sobald|nachdem|sofern",
    ),
    "fr": Lexicon(
        money=r"rembours|argent|montant|somme|crédit|virement|paiement|fonds",
        done=r"remboursée?s?|effectuée?s?|traitée?s?|émise?s?|envoyée?s?|versée?s?|"
        r"virée?s?|créditée?s?|restituée?s?|terminée?s?|finalisée?s?|réglée?s?|reversée?s?|"
        r"payée?s?|c['’]est\s+fait|de\s+retour\s+sur|partie?s?|"
        r"(?:est|sont)\s+(?:déjà\s+)?sur\s+votre\s+(?:compte|carte)",
        approved=r"approuvée?s?|validée?s?|acceptée?s?|accordée?s?|autorisée?s?",
        underway=r"en\s+route|en\s+chemin|lancée?s?|initiée?s?|en\s+cours\s+de\s+"
        r"(?:virement|versement|remboursement)",
        hedge=r"ne|n['’]|pas|jamais|aucune?|rien|lorsque|lorsqu['’]\w+|quand|dès\s+que|"
        r"une\s+fois|s['’]il|jusqu['’]à|sera|seront|serait|pourra|pourrait|peut|"
        r"va|vont|devrait|généralement|habituellement|normalement|en\s+général|attente",
        process=r"demande\w*|examen|transmise?s?|soumise?s?|dossier",
        paper=r"e-mail|courriel|message|étiquette|formulaire|lien",
        other=r"colis|commande|article|remplacement|livraison|retour",
        opening=r"lorsque|quand|dès\s+que|une\s+fois|si|après",
    ),
    "es": Lexicon(
        money=r"reembols|devol|dinero|importe|abono|reintegr|monto|cantidad|pago|fondos",
        done=r"reembolsad[oa]s?|reembolsamos|devuelt[oa]s?|devolvimos|abonad[oa]s?|abonamos|"
        r"acreditad[oa]s?|acreditamos|reintegrad[oa]s?|transferid[oa]s?|transferimos|"
        r"procesad[oa]s?|procesamos|emitid[oa]s?|emitimos|enviad[oa]s?|enviamos|"
        r"completad[oa]s?|realizad[oa]s?|realizamos|efectuad[oa]s?|hecho|listo|"
        r"ingresad[oa]s?|ingresamos|pagad[oa]s?|de\s+vuelta\s+en|"
        r"está\s+(?:ya\s+)?en\s+(?:tu|su)\s+(?:cuenta|tarjeta)|"
        r"ya\s+(?:tienes|tiene)\s+(?:tu|su|el)\s+(?:dinero|reembolso)",
        approved=r"aprobad[oa]s?|aprobamos|autorizad[oa]s?|aceptad[oa]s?",
        underway=r"en\s+camino|en\s+curso|en\s+trámite|iniciad[oa]s?|tramitando|procesando",
        hedge=rf"{NO}|nunca|ningún|ninguna|ninguno|nada|cuando|una\s+vez|"
        r"en\s+cuanto|tan\s+pronto|hasta|siempre\s+que|será|serán|sería|podría|puede|"
        r"va\s+a|van\s+a|vamos\s+a|normalmente|generalmente|habitualmente|suele\w*|"
        r"pendiente",
        process=r"solicitud\w*|solicitad[oa]|petición|revis\w*",
        paper=r"correo|mensaje|etiqueta|formulario|enlace",
        other=r"paquete|envío|artículo|reemplazo",
        opening=r"si|cuando|una\s+vez|en\s+cuanto|tras",
    ),
    "it": Lexicon(
        money=r"rimbors|soldi|denaro|importo|somma|accredit|pagamento",
        done=r"rimborsat[oaie]|accreditat[oaie]|restituit[oaie]|effettuat[oaie]|"
        r"eseguit[oaie]|elaborat[oaie]|emess[oaie]|inviat[oaie]|trasferit[oaie]|"
        r"completat[oaie]|pagat[oaie]|bonificat[oaie]|versat[oaie]|fatto|tornat[oiae]|"
        r"è\s+(?:già\s+)?sul\s+tuo\s+conto",
        approved=r"approvat[oaie]|autorizzat[oaie]|accettat[oaie]|concess[oaie]",
        underway=r"in\s+arrivo|in\s+corso|in\s+viaggio|avviat[oaie]",
        hedge=r"non|mai|nessun\w*|niente|nulla|quando|una\s+volta|appena|finché|"
        r"qualora|sarà|saranno|potrebbe|può|verrà|verranno|normalmente|solitamente|"
        r"di\s+solito|attesa",
        process=r"richiest[ae]|esame|valutazione",
        paper=r"e-?mail|messaggio|etichetta|modulo|link",
        other=r"pacco|spedizione|articolo|sostituzione",
        opening=r"se|quando|una\s+volta|appena|dopo",
    ),
    "pt": Lexicon(
        money=r"reembols|estorn|dinheiro|devolv|valor|quantia|crédito|pagamento",
        done=r"reembolsad[oa]s?|reembolsamos|estornad[oa]s?|estornamos|devolvid[oa]s?|"
        r"devolvemos|creditad[oa]s?|creditamos|processad[oa]s?|emitid[oa]s?|enviad[oa]s?|"
        r"transferid[oa]s?|conclu[ií]d[oa]s?|efetuad[oa]s?|realizad[oa]s?|feito|"
        r"de\s+volta|está\s+(?:já\s+)?(?:na|no)\s+(?:sua|seu|tua|teu)\s+(?:conta|cartão)",
        approved=r"aprovad[oa]s?|autorizad[oa]s?|aceit[oa]s?",
        underway=r"a\s+caminho|em\s+andamento|em\s+processamento|iniciad[oa]s?",
        hedge=r"não|nunca|nenhum\w*|nada|quando|assim\s+que|caso|até\s+que|"
        r"uma\s+vez|desde\s+que|será|serão|seria|poderá|pode|vai|vão|normalmente|"
        r"geralmente|costuma\w*|pendente",
        process=r"solicitaç\w+|análise",
        paper=r"e-mail|mensagem|etiqueta|formulário|link",
        other=r"pacote|encomenda|envio|artigo|substituição",
        opening=r"se|quando|assim\s+que|depois",
    ),
    "nl": Lexicon(
        money=r"terugbetal|terugstort|geld|bedrag|restitut|gecrediteerd|vergoed",
        done=r"terugbetaald|teruggestort|overgemaakt|gerestitueerd|gecrediteerd|vergoed|"
        r"verwerkt|uitgevoerd|verstuurd|verzonden|voltooid|afgerond|betaald|geregeld|"
        r"staat\s+(?:al\s+|weer\s+)?op\s+(?:je|uw)|terug\s+op",
        approved=r"goedgekeurd|geaccepteerd|toegekend",
        underway=r"onderweg|gestart",
        hedge=r"niet|geen|nooit|niets|zodra|wanneer|indien|nadat|totdat|wordt|worden|"
        r"zal|zullen|zou|kan|kunnen|meestal|normaal|doorgaans",
        process=r"aanvraag|verzoek|beoordel\w*",
        paper=r"e-mail|bericht|label|formulier|link",
        other=r"pakket|zending|bestelling|artikel|vervanging",
        opening=r"als|zodra|wanneer|indien|nadat",
    ),
    "sv": Lexicon(
        money=r"återbetal|pengar|belopp|återbetalning",
        done=r"återbetala(?:t|ts|d)|skickats|skickat|genomförts|genomförd|behandlats|"
        r"betalats|överförts|satts\s+in|insatt|krediterats|klar|tillbaka\s+på",
        approved=r"godkänts|godkänd|beviljats|beviljad",
        underway=r"på\s+väg|påbörjad",
        hedge=r"inte|ej|aldrig|ingen|inget|när|så\s+snart|förutsatt|kommer\s+att|"
        r"ska|skulle|kan|vanligtvis|normalt",
        process=r"begäran|ansökan|granska\w*",
        paper=r"e-post|mejl|meddelande|etikett|formulär|länk",
        other=r"paket|försändelse|beställning",
        opening=r"om|när|så\s+snart",
    ),
    "pl": Lexicon(
        money=r"zwrot|zwróc|pieniąd|pieniędz|środk|kwot|należnoś",
        done=r"zwrócon[oaey]|zwróciliśmy|zwrócił\w*|zrealizowan\w*|przelan\w*|"
        r"przelaliśmy|wysłan\w*|wysłaliśmy|zaksięgowan\w*|przetworzon\w*|wypłacon\w*|"
        r"dokonan\w*|gotowe|wrócił\w*|trafił\w*",
        approved=r"zatwierdzon\w*|zaakceptowan\w*|przyznan\w*",
        underway=r"w\s+drodze|rozpoczęt\w*",
        hedge=r"nie|jeśli|jeżeli|gdy|kiedy|jak\s+tylko|będzie|zostanie|zostaną|"
        r"może|mogą|zazwyczaj|zwykle|normalnie|oczekuj\w*",
        process=r"wniosek|wniosku|prośb\w*|rozpatr\w*|zgłoszen\w*|weryfik\w*",
        paper=r"e-mail\w*|wiadomoś\w*|etykiet\w*|formularz\w*|link\w*",
        other=r"paczk\w*|przesyłk\w*|zamówieni\w*",
        opening=r"jeśli|jeżeli|gdy|kiedy|po",
    ),
    "ru": Lexicon(
        money=r"возврат|возвращ|верн|деньг|средств|сумм|оплат",
        done=r"вернули|возвращен[аоы]?|возвращён|оформлен[аоы]?|выполнен[аоы]?|"
        r"зачислен[аоы]?|отправлен[аоы]?|перечислен[аоы]?|обработан[аоы]?|проведен[аоы]?|"
        r"проведён|произведен[аоы]?|поступил[аои]?|готово|отправили|перевели|"
        r"уже\s+на\s+(?:вашей|вашем|карте|счете|счёте)",
        approved=r"одобрен[аоы]?|утвержден[аоы]?|подтвержден[аоы]?",
        underway=r"в\s+пути|уже\s+идут",
        hedge=r"не|нет|если|когда|как\s+только|после|будет|будут|может|могут|"
        r"обычно|ожида\w*",
        process=r"заявк\w*|запрос\w*|рассмотр\w*|провер\w*",
        paper=r"письм\w*|сообщени\w*|ссылк\w*",
        other=r"посылк\w*|заказ\w*|доставк\w*",
        opening=r"если|когда|как\s+только|после",
    ),
    "tr": Lexicon(
        money=r"iade|para|ücret|tutar|ödeme",
        done=r"iade\s+edildi|iade\s+ettik|yapıldı|gönderildi|gönderdik|tamamlandı|"
        r"yatırıldı|yatırdık|işlendi|aktarıldı|geçti|ödendi",
        approved=r"onaylandı|onayladık|kabul\s+edildi",
        underway=r"yolda|başlatıldı",
        hedge=r"değil|eğer|halinde|durumunda|sonra|edilecek|yapılacak|olacak|"
        r"genellikle|normalde|mı|mi|mu|mü|bekle\w*",
        process=r"talep\w*|incele\w*|başvuru\w*",
        paper=r"e-posta|mesaj|etiket|form|bağlantı",
        other=r"kargo|paket|sipariş\w*",
        opening=r"eğer",
    ),
}

# Words that, in what a model says a claim is about (in English), name no order and no product
# of their own: "your order", "the purchase", "the refund", "129 CNY".
NAMES_NOTHING = (
    r"an?|the|your|my|our|their|this|that|of|for|on|its?|all|whole|full|no|number|orders?|"
    r"purchases?|products?|refunds?|money|payments?|amount|package|parcel|goods|stuff|things?|"
    r"cny|usd|eur|delivery|shipment|account|card|bank|visa|mastercard|paypal|credit|"
    r"transaction|request|ticket|claim"
)

# Contractions, in any spaced language: they follow their word without a space.
CONTRACTED_HEDGE = r"n['’]t(?!\w)|['’]ll(?!\w)|['’]d\s+(?:be|have)(?!\w)"
CONTRACTED_DONE = r"['’]s\s+back(?!\w)"
# Where the recall-first reader cuts a sentence into clauses: punctuation, a dash, and the
# words that join two clauses.
CLAUSE_JOINS = (
    r"and|but|so|und|aber|doch|sondern|et|mais|donc|y|pero|e|ma|però|mas|maar|och|men|"
    r"ale|а|и|но|ve|ama|fakat"
)
# Where the precise reader cuts a sentence into clauses: punctuation, a dash, or a conjunction
# that starts a new subject.
CLAUSE_BREAK = (
    r",(?!\d)|[;:，；：]|\s[-–—]+\s|\s(?:and|but|so|while|whereas|und|aber|doch|et|mais|donc|y|pero|"
    r"e|ma|en|maar)\s+(?=(?:you|we|i|it|they|he|she|this|that|the|your|our|sie|wir|ich|es|er|"
    r"vous|nous|je|il|elle|usted|nosotros|le|la|el|lo|su|votre|notre|ihre|ihr|der|die|das|"
    r"den|dem|u|wij|jij|het|de)\b)"
)
# A condition opening a sentence that is only an opener ("Once again, …", "After all, …").
NOT_A_CONDITION = r"^\W*(?:once\s+(?:again|more)|after\s+all)\b"
# Words of a product name too common to name it alone ("phone case": not "in case").
GENERIC_NAME_WORDS = frozenset(
    {"case", "item", "items", "pack", "set", "box", "order", "thing", "kit"}
)
