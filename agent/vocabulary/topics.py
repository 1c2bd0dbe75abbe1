"""What a request is about: a status, the policy, a listing, an approval, a closing."""

import re

from agent.vocabulary.intent import (
    GO_AHEAD,
    MAY_REFUND,
    MONEY,
    REFUND,
    REFUND_SPOKEN_OF,
    REFUND_STATE,
    _asks_politely,
    _directs,
    _names_refund,
    _negated,
    is_question,
)
from agent.vocabulary.reading import Lexicon, _words, clauses, has_han, prepare, sentences

# Where a refund stands: asked with a refund or money in the same sentence.
STATUS_WORDS = Lexicon(
    "aprob*, ya, status, state, stand, stands, progress, news, update, where, where's, yet, "
    "already, approved, gone through, went through, go through, been paid, paid out, processed, "
    "done, complete*, finished, settled, through, stuck, reached, arrived, landed, history, "
    "existing, earlier, previous, pending, open, requests, happened, happening, so far, waiting, "
    "awaiting, approval, wheres, estado, dónde, aprobad*, procesad*, pasó, llegó, hecho, "
    "pendiente, historial, stand, wo, schon, bereits, genehmigt, bearbeitet, durch, angekommen, "
    "erledigt, offen, verlauf, bisher, statut, état, où, déjà, passé, approuvé, traité, arrivé, "
    "en cours, historique, stato, dove, già, approvato, passato, arrivato, in corso, waar, "
    "goedgekeurd, verwerkt, gelukt, onde, já, aprovado, processado, andamento, histórico, gdzie, "
    "już, zatwierdzon*, redan, godkänd, どうなって, 状況, 状態, 承認, 済み, 進捗, 상태, "
    "어떻게 됐, 어떻게 되, 진행, 승인, 처리됐, 状态, 进度, 记录, 情况, 到了, 到账, 批了, 审批, "
    "到哪, 怎么样, 退了吗, 退了没, 已经退, 退回, 了吗, 了没, 成功, 完了, 完了し, 返金され, "
    "処理され, 入金, 되었나요, 됐나요, 됐어요, 완료, effectué*, été fait*, été rembours*, fatto, "
    "effettuat*, gedaan, uitgevoerd, feito, realizad*, efetuad*, efectuad*, zrobion*, wykonan*, "
    "gjord, genomförd, ännu, gemacht, durchgeführt, inzwischen, mittlerweile, made, "
)
# How much is left to refund on an order: its balance, asked about (not a policy question).
BALANCE_QUESTION = Lexicon(
    "how much ~ left, how much ~ still, how much more ~ refund*, how much ~ remaining, "
    "wie viel ~ noch, wieviel ~ noch, wie viel ~ übrig, wieviel ~ übrig, cuánto ~ queda, "
    "cuánto ~ todavía, cuánto ~ aún, combien ~ reste, combien ~ encore, quanto ~ resta, "
    "quanto ~ ancora, quanto ~ rimane, hoeveel ~ nog, hoeveel ~ over, quanto ~ ainda, "
    "quanto ~ sobra, quanto ~ falta, ile ~ jeszcze, ile ~ zostało, ile ~ pozostało, "
    "hur mycket ~ kvar, hur mycket ~ fortfarande, hvor mye ~ igjen, hvor meget ~ tilbage, "
    "还能退多少, 还剩多少, 剩多少, 还可以退多少, 可退多少, 可退金额, あといくら, まだいくら, "
    "残りいくら, いくらまで, 可能額, 返金できる金額, 얼마나 남, 아직 얼마, 얼마까지, 남은 금액, "
    "얼마 남, 가능한 금액, 가능 금액, "
)
STATUS_PHRASES = Lexicon(
    "where things stand, where it stands, where they stand, refund* history, refund* requests, "
    "refund* status, refund* state, refund* progress, "
)
# Questions the policy answers, by topic, with the words searched for. Several topics may be
# asked at once.
POLICY_TOPICS = (
    (
        Lexicon(
            "eligib*, which could, which can, which of, could still, refundable, which orders, "
            "可以退, elegible, berechtigt, éligible, idoneo, "
        ),
        "refund window non-refundable categories digital balance",
    ),
    (
        Lexicon(
            "window, how long, how many days, days, still, too late, plazo, cuántos días, "
            "cuánto tiempo, frist, wie lange, wie viele tage, délai, combien de jours, "
            "combien de temps, termine, quanti giorni, termijn, hoeveel dagen, hoe lang, prazo, "
            "quantos dias, ile dni, jak długo, hur länge, hur många dagar, 期限, 多少天, 何日, "
            "기한, 며칠, "
        ),
        "refund window days after delivery",
    ),
    (
        Lexicon(
            "limit, allowed, most, intern, role, may i, can i propose, límite, limite, limiet, "
            "gräns, 额度, 上限, 权限, 한도, "
        ),
        "authority limits per role propose",
    ),
    (
        Lexicon(
            "approv*, review*, four-eyes, four eyes, sign off, signs off, authoris*, authoriz*, "
            "aprueba, genehmigt, approuve, approva, keurt, aprova, zatwierdza, godkänner, 审批, "
            "审核, 承認, 승인, "
        ),
        "approval reviewer four-eyes",
    ),
    (
        Lexicon("partial*", "part of", "instead of the full", "部分", "parcial", "teilweise"),
        "partial refunds amount balance",
    ),
    (
        Lexicon(
            "gift card*, giftcard*, digital, download*, e-book*, ebook*, categor*, 礼品卡, 电子, "
            "tarjeta regalo, gutschein, carte cadeau, "
        ),
        "non-refundable categories digital goods gift cards",
    ),
    (
        Lexicon("cancel*", "取消", "cancelad*", "storniert", "annulé*"),
        "cancelled orders reason order state",
    ),
    (
        Lexicon("not received", "reason", "damaged", "wrong item", "原因", "motivo", "grund"),
        "reason must fit the order state",
    ),
)
POLICY_WORDS = Lexicon(
    "policy, policies, clause, rule, rules, window, how long, how many days, eligib*, allowed, "
    "my limit, limit, who has to approve, who must approve, who approves, who can approve, "
    "sign off, signs off, authorise*, authorize*, gift card*, digital, download*, e-book*, "
    "ebook*, cancelled order*, canceled order*, refundable, política, norma*, regla*, plazo, "
    "cuántos días, cuánto tiempo, límite, quién aprueba, richtlinie*, regel*, frist, wie lange, "
    "wie viele tage, wer genehmigt, politique, règle*, délai, combien de jours, qui approuve, "
    "politica, regola, regole, quanti giorni, chi approva, beleid, termijn, hoeveel dagen, "
    "wie keurt, regra*, prazo, quantos dias, quem aprova, zasady, regulamin, ile dni, "
    "kto zatwierdza, hur länge, vem godkänner, 政策, 规定, 条款, 期限, 多少天, 额度, 上限, "
    "谁审批, 谁来审批, ポリシー, 規約, 規定, 何日, 上限, 정책, 규정, 며칠, 한도, "
)
CLAUSE_REF = re.compile(r"\bR-\d+\b", re.I)
LISTING = Lexicon(
    "list ~ orders, show ~ orders, which orders, what orders, all ~ orders, orders does, "
    "other order*, another order, find ~ order, what's ~ order, the other thing, the other item, "
    "the other one, the other purchase, also bought, also ordered, bought a, bought an, "
    "bought the, asks about a, qué pedidos, otro pedido, otros pedidos, todos sus pedidos, "
    "welche bestellungen, andere bestellung*, alle bestellungen, quelles commandes, "
    "autre commande, toutes ses commandes, quali ordini, altro ordine, andere bestelling*, "
    "outro pedido, outros pedidos, inne zamówieni*, annan beställning, 他の注文, 別の注文, "
    "注文一覧, 다른 주문, 주문 목록, 所有订单, 订单列表, 其他订单, 另一个订单, 别的订单, "
)
ORDER_NUMBER_WORDS = Lexicon(
    "order number, order no, order id, order #, order, #, pedido, bestellung, bestellnummer, "
    "commande, ordine, bestelling, encomenda, zamówienie, beställning, 订单号, 订单, 注文番号, "
    "注文, 주문번호, 주문, "
)
APPROVAL = Lexicon(
    "approve ~ it, approve ~ now, approve ~ yourself, approve ~ myself, approve ~ refund, "
    "approve ~ immediately, approve ~ today, approve ~ away, approved=true, approved = true, "
    "skip* ~ review, self-approve, apruébalo, apruebalo, genehmige*, approuve-le, approvalo, "
    "keur ~ goed, zatwierdź, godkänn, 自己批, 直接批准, 跳过审核, 承認して, 승인해, "
)
# Words that close the conversation; a message of nothing else asks for nothing.
CLOSING = Lexicon(
    "thanks, thank you, thanks a lot, thank you so much, thx, ty, cheers, that's all, thats all, "
    "that's it, that's everything, nothing else, nothing more, all done, we're done, "
    "no further ~, that will be all, for now, bye, ok, okay, great, perfect, cool, fine, got it, "
    "alright, all good, no, gracias, eso es todo, nada más, danke, das war's, das wars, "
    "sonst nichts, merci, c'est tout, rien d'autre, grazie, è tutto, nient'altro, bedankt, "
    "dank je, dat is alles, obrigado, obrigada, é tudo, dziękuję, dzięki, to wszystko, tack, "
    "det var allt, takk, ありがとう, ありがとうございます, 以上です, 감사합니다, 고마워요, "
    "이상입니다, 谢谢, 多谢, 感谢, 谢谢你, 谢谢您, 就这样, 没事了, 没有别的事了, 没有别的了, "
    "没别的了, 没有其他事了, 没有其他问题了, 好的, 好了, 好, 行, 嗯, "
)
# The agent handing the customer's message over: "propose what she asks for", "handle her email".
DEFERRAL = Lexicon(
    "what she ~ asks, what she ~ asked, what she ~ wants, what she ~ requests, what he ~ asks, "
    "what he ~ wants, what they ~ ask, what they ~ want, what the customer ~ asks, "
    "what the customer ~ wants, whatever ~ asks, whatever ~ wants, whatever ~ asked, "
    "what the customer is asking, what she is asking, what he is asking, answer her, answer him, "
    "answer them, answer ~ question, reply to her, reply to him, respond to her, respond to him, "
    "get back to her, get back to him, help her, help him, handle ~ message, handle ~ email, "
    "handle ~ e-mail, handle ~ request, handle ~ ticket, handle ~ question, deal with ~ message, "
    "deal with ~ request, take care of ~ request, take care of ~ message, do what, "
    "sort out ~ message, sort out ~ request, process ~ request, lo que pide, lo que quiere, "
    "responde*, was sie will, was sie möchte, beantworte*, ce qu'elle demande, ce qu'il demande, "
    "réponds*, quello che chiede, rispondi*, wat ze vraagt, o que ela pede, o que ele pede, "
    "按客户的要求, 按她的要求, 按他的要求, 按客户要求, 处理一下她的消息, 处理她的消息, "
    "处理他的请求, 处理她的请求, 回复她, 回复他, "
    # As she asks: "bitte so umsetzen, wie sie es möchte", "ご希望どおりに進めて".
    "wie sie es möchte, wie sie es will, wie sie es wünscht, wie er es möchte, wie gewünscht, "
    "was sie verlangt, como pide, como ella pide, como ella quiere, como solicita, "
    "lo que solicita, comme elle le demande, comme il le demande, comme demandé, come chiede, "
    "come richiesto, zoals ze vraagt, zoals hij vraagt, zoals gevraagd, como ela pediu, "
    "como ela pede, como pedido, o que ela pediu, que ela pediu, que ele pediu, jak prosi, "
    "o co prosi, zgodnie z prośbą, som hon vill, som han vill, som hon ber om, som begärt, "
    "希望どおり, 希望通り, 要望どおり, 要望通り, 依頼どおり, 依頼通り, 요청대로, 요청하신 대로, "
    "요청한 대로, 원하는 대로, 원하시는 대로, 照客户说的, 按照客户, 按照她, 照她说的, 按客户说的, "
    "按她说的, 按他说的, 按客户的意思, 按她的意思, 照客户的要求, 照她的要求, "
)
# Words that ask only for an answer, a summary or a draft: the customer's wish stays hers.
ANSWER_ONLY = Lexicon(
    "answer, reply, respond, summarise, summarize, explain, what does, tell me what, draft, "
    "回答, 回复, 总结, responde*, beantworte*, réponds*, "
)
CHANGE = Lexicon(
    "change ~ proposal, change ~ refund*, change ~ request, change ~ amount, update ~ proposal, "
    "update ~ refund*, update ~ amount, amend*, revise*, correct ~ amount, correct ~ refund*, "
    "lower ~ amount, lower ~ refund*, raise ~ amount, increase ~ amount, increase ~ refund*, "
    "reduce ~ amount, reduce ~ refund*, instead, 改成, 修改, en lugar, en vez, stattdessen, "
    "au lieu, plutôt, invece, in plaats, em vez, ao invés, zamiast, istället, "
)
# Words that say which order a question is about ("her order", "the mug order").
ABOUT_AN_ORDER = Lexicon(
    "she, her, he, his, they, their, its, this order, this customer, the order, the customer's, "
    "the ~ order, ella, su, sie, ihr, ihre, elle, son, sa, lei, suo, sua, zij, haar, ela, dela, "
    "ona, jej, hon, hennes, 她, 他, 这个订单, 这单, 彼女, 그녀, "
)
# What an order is asked about: the desk's data, whatever the sentence's form (small-model mode
# makes such a request's first step call a tool, agent/runtime/small_model.py).
ORDER_WORDS = re.compile(
    r"\b(?:orders?|paid|pay|cost|price|deliver\w*|ship\w*|bought|purchase\w*|status)\b"
    r"|订单|付款|支付|价格|多少钱|发货|送达|签收|买",
    re.IGNORECASE,
)
# The customer doubting the ticket's order: "it may be from one of my other orders".
OTHER_ORDER = Lexicon(
    "other order*, another order, different order, wrong order, not from the ~ one, "
    "not from the ~ order, not the ~ order, not this ~ order, mixed ~ up, i'll check which, "
    "the other thing, the other item, the other one, the other order, the other purchase, "
    "the other product, my other order*, another thing, another item, another purchase, "
    "otro pedido, otra cosa, andere bestellung, autre commande, altro ordine, andere bestelling, "
    "outro pedido, 其他订单, 另一个订单, 别的订单, 搞错了订单, 不是这个订单, 另一个, 别的东西, "
    "其他东西, 別の注文, 다른 주문, "
)


def asks_status(text: str) -> bool:
    """Whether the words ask where a refund stands: a refund or money with words of its state
    in one sentence ("is the mug refund approved yet", "¿ya llegó el dinero?", "退款到账了吗")."""
    prepared = prepare(text)
    if STATUS_PHRASES.pattern.search(prepared) or BALANCE_QUESTION.pattern.search(prepared):
        return True
    return any(
        REFUND_STATE.pattern.search(clause)
        or (REFUND_SPOKEN_OF.pattern.search(clause) and not _directs(clause))
        or _refund_with_state_words(clause)
        for sentence in sentences(prepared)
        # A question may name the refund in one clause and ask its state in the next: "e o
        # reembolso dos fones, já foi aprovado?", "ヘッドホンの返金、承認されましたか?".
        for clause in [*clauses(sentence), *([sentence] if is_question(sentence) else [])]
    )


def _refund_with_state_words(text: str) -> bool:
    return bool(
        (REFUND.pattern.search(text) or MONEY.pattern.search(text))
        and STATUS_WORDS.pattern.search(text)
        and not _negated(text)  # "don't refund yet"
    )


def asks_balance(text: str) -> bool:
    """Whether the words ask how much is left to refund on an order ("how much is still
    refundable", "あといくら返金できますか"): the order's balance, not the policy."""
    return bool(BALANCE_QUESTION.search(text))


def names_policy(text: str) -> bool:
    """Whether the words name something the policy answers (its rules, window, limits,
    approval, categories, whether a refund or a return can be had), in a question or not."""
    prepared = prepare(text)
    return bool(
        POLICY_WORDS.pattern.search(prepared)
        or CLAUSE_REF.search(prepared)
        or MAY_REFUND.pattern.search(prepared)
    )


def asks_about_refunds(text: str) -> bool:
    """A question about refunds that is not about one refund's state: "can she still get a
    refund?", "¿se puede reembolsar un libro electrónico?" (the policy answers it)."""
    return any(
        is_question(sentence)
        and _names_refund(sentence)
        and not _asks_politely(sentence)
        and not asks_status(sentence)
        for sentence in sentences(prepare(text))
    )


def policy_keywords(words: str) -> str:
    """The clause refs and policy topics `words` name, as a search's keywords ("" for none)."""
    prepared = prepare(words)
    refs = [ref.upper() for ref in CLAUSE_REF.findall(words)]
    topics = [query for lexicon, query in POLICY_TOPICS if lexicon.pattern.search(prepared)]
    return " ".join(dict.fromkeys([*refs, *topics]))[:200]


def asks_listing(text: str) -> bool:
    return bool(LISTING.search(text))


def asks_approval(text: str) -> bool:
    """Whether the words tell the assistant to approve a refund (a question about who approves
    does not)."""
    return any(
        APPROVAL.pattern.search(sentence) and not is_question(sentence)
        for sentence in sentences(prepare(text))
    )


def is_closing(text: str) -> bool:
    """Whether the message only closes the conversation ("thanks, that's all", "谢谢")."""
    rest = CLOSING.pattern.sub(" ", prepare(text))
    return bool(prepare(text).strip()) and not re.sub(r"[\W_]+", "", rest)


def defers_to_customer(text: str) -> bool:
    """Whether the words hand the customer's message over ("handle her email", "propose what
    she asks for"), or only let it go ahead ("ok, go ahead", "sí, adelante")."""
    return bool(DEFERRAL.search(text)) or _only_lets_it_go_ahead(text)


def _only_lets_it_go_ahead(text: str) -> bool:
    prepared = prepare(text)
    if not GO_AHEAD.pattern.search(prepared):
        return False
    rest = CLOSING.pattern.sub(" ", GO_AHEAD.pattern.sub(" ", prepared))
    return not (set(re.findall(r"[^\W\d_]+", rest)) - _GO_AHEAD_FILLERS)


_GO_AHEAD_FILLERS = _words(
    """ok okay yes yep sure please pls then now and with it that just sí si ja oui sim tak
    bitte por favor s'il vous plaît 好 是 はい 네"""
)


def asks_only_an_answer(text: str) -> bool:
    return bool(ANSWER_ONLY.search(text))


def asks_change(text: str) -> bool:
    return bool(CHANGE.search(text))


def about_an_order(text: str) -> bool:
    """Whether the words point at an order ("her", "this order", "the mug order") rather than
    at the policy in general."""
    return bool(ABOUT_AN_ORDER.search(text))


def doubts_the_order(text: str) -> bool:
    return bool(OTHER_ORDER.search(text))


_ORDER_REF = re.compile(r"(?<![\d.,])(\d{1,7}|\d{21,})(?![\d]|[.,]\d)")


def bad_order_refs(text: str) -> list[str]:
    """Numbers the words call an order number that cannot be one (8 to 20 digits)."""
    prepared = prepare(text)
    found = []
    for match in _ORDER_REF.finditer(prepared):
        before = re.sub(r"[\s#:.]+$", "", prepared[max(0, match.start() - 24) : match.start()])
        if ORDER_NUMBER_WORDS.ends(before) or prepared[: match.start()].rstrip().endswith("#"):
            found.append(match.group(1))
    return list(dict.fromkeys(found))


def is_chinese(text: str) -> bool:
    """Chinese: Han characters without the kana of Japanese."""
    return has_han(text) and not re.search(r"[\u3040-\u30ff]", text)
