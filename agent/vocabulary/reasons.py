"""The reasons words name or describe, in the policy's vocabulary."""

from agent.vocabulary.reading import Lexicon, prepare, sentences

NOT_RECEIVED = Lexicon(
    # English ("hasn't" reads as "has not")
    "never arriv*, never came, never come, never turned up, never showed up, never got, "
    "never receiv*, never deliver*, not arriv*, not yet arriv*, not receiv*, not yet receiv*, "
    "not deliver*, not been deliver*, not yet deliver*, not come, not yet come, not turned up, "
    "not shown up, not show* up, not get it, not got it, not here, not there yet, undeliver*, "
    "non-delivery, nondelivery, non delivery, still waiting, no sign of, lost in ~ post, "
    "lost in ~ mail, lost in transit, is lost, was lost, got lost, tracking ~ not moved, "
    "tracking ~ not updated, tracking ~ stuck, missing parcel, missing package, missing order, "
    "missing delivery, the missing, still no, "
    # Spanish, Portuguese
    "no ha llegado, no llegó, nunca llegó, no llega, no le ha llegado, no le llegó, "
    "no ha recibido, no recibió, nunca recibió, no lo ha recibido, no recibido, sin recibir, "
    "no entregad*, no ha sido entregad*, se perdió, extraviad*, não chegou, nunca chegou, "
    "ainda não chegou, não recebeu, nunca recebeu, não recebi, não foi entregue, não entregue, "
    # German, French, Italian
    "nie angekommen, nicht angekommen, noch nicht angekommen, nicht geliefert, nie geliefert, "
    "nicht erhalten, nie erhalten, nicht bekommen, nie bekommen, noch nicht da, "
    "nicht zugestellt, verloren gegangen, kam nie an, kam nicht an, jamais arrivé*, pas arrivé*, "
    "pas encore arrivé*, jamais reçu*, pas reçu*, pas été livré*, jamais été livré*, non livré*, "
    "jamais livré*, pas livré*, colis perdu, mai arrivat*, non è arrivat*, non arrivat*, "
    "non è mai arrivat*, non ricevut*, mai ricevut*, non consegnat*, mai consegnat*, smarrit*, "
    # Dutch, Polish, Swedish, Norwegian, Danish
    "nooit aangekomen, niet aangekomen, nog niet aangekomen, niet ontvangen, nooit ontvangen, "
    "niet geleverd, nooit geleverd, niet bezorgd, nooit bezorgd, kwijtgeraakt, zoekgeraakt, "
    "nie dotarł*, nie doszł*, nie przyszł*, nie przyszedł, nie otrzymał*, nie dostał*, "
    "nie dostarczon*, zgubion*, zaginął, zaginęła, aldrig kommit, inte kommit, inte levererat*, "
    "aldrig levererat*, inte fått, aldrig fått, inte mottagit, försvunnit, aldri kommet, "
    "ikke kommet, ikke mottatt, aldri mottatt, ikke levert, aldrig modtaget, ikke modtaget, "
    "ikke leveret, aldrig kommet, ikke ankommet, "
    # Russian, Turkish
    "не пришл*, не пришёл, не доставлен*, не получил*, не получен*, не дошл*, не дошёл, gelmedi, "
    "ulaşmadı, teslim edilmedi, "
    # Japanese, Korean, Chinese
    "届いていない, 届いてない, 届かない, 届きません, 届いていません, 未着, まだ届, "
    "到着していない, 配達されていない, 受け取っていない, 도착하지 않, 도착 안, 안 왔, 오지 않, "
    "받지 못, 못 받, 배송되지 않, 배송 안, 분실, 没收到, 未收到, 没有收到, 还没到, 没到货, "
    "未到货, 还没收到, 一直没到, 没送到, 丢件, 丢失了, 快递丢, 没寄到, 还没送到, "
)
WRONG_ITEM = Lexicon(
    "wrong item*, wrong colour, wrong color, wrong size, wrong model, wrong book, wrong design, "
    "wrong product*, wrong thing, wrong one, wrong version, wrong style, wrong variant, "
    "wrong edition, wrong shade, wrong article, wrong goods, wrong parcel, wrong package, "
    "wrong pair, wrong type, wrong kind, wrong title, sent ~ wrong, got the wrong, "
    "received the wrong, delivered the wrong, received ~ instead of, got ~ instead of, "
    "sent ~ instead of, came with ~ instead of, not ~ she ordered, not ~ he ordered, "
    "not ~ they ordered, not ~ i ordered, not ~ we ordered, not ~ customer ordered, "
    "not ~ she bought, not ~ he bought, not ~ she asked for, not ~ he asked for, "
    "not ~ she paid for, different item, different model, different size, different colour, "
    "different color, different product, different book, different version, different design, "
    "equivocad*, no es el que pidió, no es lo que pidió, color equivocado, talla equivocada, "
    "producto incorrecto, artículo incorrecto, falsch* artikel, falsch* farbe, falsch* größe, "
    "falsch* produkt, falsch* modell, falsch* ware, falsch* geliefert, falsch* buch, "
    "nicht das bestellte, mauvais article, mauvaise couleur, mauvaise taille, mauvais modèle, "
    "mauvais produit, pas le bon, pas la bonne, pas celui commandé, erroné*, sbagliat*, "
    "articolo errato, prodotto errato, non è quello ordinato, verkeerd*, niet wat ze besteld*, "
    "niet wat hij besteld*, errad*, não é o que pediu, produto diferente, zły produkt, "
    "zły kolor, zły rozmiar, zły model, niewłaściw*, pomyłk*, fel vara, fel färg, fel storlek, "
    "fel produkt, fel modell, feil vare, feil farge, feil størrelse, feil produkt, forkert vare, "
    "forkert farve, forkert størrelse, не тот товар, не тот, перепутал*, 違う商品, 間違った, "
    "別の商品, 注文と違う, 注文したものと違う, 誤配, 違うもの, 色違い, サイズ違い, 다른 상품, "
    "잘못된 상품, 잘못 배송, 주문한 것과 다른, 다른 제품, 잘못 온, 오배송, 发错, 寄错, 送错, "
    "颜色不对, 尺码不对, 尺寸不对, 型号不对, 款式不对, 不是我买的, 不是我订的, 不是我要的, "
    "不是她买的, 不是她订的, 货不对, 发的不对, "
    # Not the model, or not what was ordered: "não é o modelo que ela encomendou".
    "not the model, not the same model, no es el modelo, no es lo que ~ pidió, "
    "no es el que ~ pidió, modelo equivocado, modelo distinto, modelo diferente, "
    "não é o modelo, não é o que ~ encomendou, não é o que ~ pediu, modelo errado, "
    "nicht das ~ bestellt*, nicht das modell, nicht was ~ bestellt*, anderes modell, "
    "pas le modèle, pas ce qu ~ commandé, autre modèle, non è il modello, "
    "non è quello che ~ ordinat*, modello diverso, niet het model, niet wat ~ besteld*, "
    "ander model, nie ten model, nie to ~ zamówił*, inny model, inte den modell, "
    "inte det ~ beställde, annan modell, 모델이 아니, 주문한 모델이 아니, 주문한 게 아니, "
    "주문한 것이 아니, 주문한 상품이 아니, 다른 모델, モデルが違, 注文したモデルと違, "
    "注文した物と違, 別のモデル, 型号错了, 不是她要的, 不是她订的型号, "
)
DAMAGED = Lexicon(
    "broken, broke, breaks, damage, damaged, cracked, crack, cracks, shattered, smashed, "
    "crushed, dented, scratched, torn, ripped, leak, leaks, leaking, leaked, in pieces, chipped, "
    "chip, scratch, scratches, in ~ pieces, ébréchure, graffi*, kras, krassen, rysa, rysę, 깨져, "
    "bent, snapped, destroyed, busted, in bits, to bits, shards, burst, squashed, mangled, "
    "wrecked, scuffed, roto, rota, rotos, rotas, rompió, dañad*, rajad*, quebrad*, estropead*, "
    "astillad*, en pedazos, hecho pedazos, hecha pedazos, hecha trizas, destrozad*, abollad*, "
    "rayad*, agrietad*, danificad*, rachad*, trincad*, estragad*, amassad*, arranhad*, "
    "em pedaços, lascad*, rasgad*, kaputt*, beschädigt*, zerbrochen*, gebrochen*, gerissen, "
    "gesprungen, zersplittert, zerkratzt, eingedellt, zerdrückt, in scherben, in stücken, "
    "angeschlagen, abgebrochen, zerstört, cassé*, abîmé*, endommagé*, brisé*, fissuré*, "
    "ébréché*, en morceaux, en miettes, fêlé*, rayé*, déchiré*, écrasé*, cabossé*, rotto, rotta, "
    "rotti, rotte, danneggiat*, incrinat*, scheggiat*, in pezzi, frantumat*, spaccat*, "
    "ammaccat*, graffiat*, crepat*, kapot, beschadigd*, gebroken, gebarsten, gescheurd, "
    "in stukken, is stuk, was stuk, kwam stuk, gedeukt, bekrast, stłuczon*, uszkodzon*, "
    "pęknięt*, rozbit*, połaman*, złaman*, zniszczon*, porysowan*, potłuczon*, pękł*, trasig*, "
    "skadad*, sönder, spräck*, krossad*, knust, ødelagt, skadet, i stykker, sprukket, разбит*, "
    "сломан*, поврежден*, повреждён*, треснул*, kırık, hasarlı, 割れ, 壊れ, 破損, ひび, 欠け, "
    "潰れ, 깨졌, 깨진, 파손, 부서졌, 부서진, 금이 갔, 망가졌, 찌그러, 坏了, 坏的, 坏掉, "
    "摔坏, 碎了, 破了, 破损, 损坏, 裂了, 裂开, 压坏, 有裂痕, 划痕, 摔碎, 磕坏, "
)
# A fault in use: "damaged" only where the policy says so, the policy's to decide.
FAULTY = Lexicon(
    "died, dies, stopped working, stopped charging, stopped turning on, stop working, not work, "
    "not working, not charge, not charging, not turn on, not turning on, not switch on, "
    "not power on, not start, not boot, faulty, defective, defect, defects, malfunction*, "
    "dead on arrival, doa, dead, glitch*, keeps crashing, keeps dropping, keeps disconnecting, "
    "no sound, no power, no funciona, dejó de funcionar, defectuos*, no enciende, no carga, "
    "averiad*, no prende, não funciona, parou de funcionar, defeituos*, com defeito, não liga, "
    "não carrega, funktioniert nicht, funktionieren nicht, geht nicht, defekt*, lädt nicht, "
    "startet nicht, ausgefallen, fehlerhaft, ne marche plus, ne marchent plus, ne marche pas, "
    "ne fonctionne plus, ne fonctionnent plus, ne fonctionne pas, en panne, défectueu*, "
    "ne s'allume, ne charge, non funziona, non funzionano, ha smesso di funzionare, difettos*, "
    "guast*, non si accende, non carica, werkt niet, werken niet, doet het niet, defect, "
    "laadt niet, nie działa, nie działają, przestał* działać, wadliw*, nie ładuje, zepsut*, "
    "fungerar inte, slutat fungera, laddar inte, funkar inte, virker ikke, fungerer ikke, "
    "не работает, не работают, перестал* работать, не заряжается, не включается, неисправ*, "
    "çalışmıyor, arızalı, bozuk, 動かない, 故障, 充電できない, 電源が入らない, 不良, 作動しない, "
    "使えない, 작동하지 않, 작동 안, 고장, 충전이 안, 충전 안, 안 켜, 켜지지 않, 불량, 不工作, "
    "不能用, 用不了, 充不了电, 不充电, 充不进电, 开不了机, 开不了, 无法开机, 失灵, 没反应, "
)
OTHER = Lexicon(
    "changed her mind, changed his mind, changed their mind, changed my mind, changed mind, "
    "change of mind, no longer want*, no longer need*, not want it, not want them, not need it, "
    "not need them, goodwill, gesture, courtesy, unwanted, unhappy, not happy, dislike*, "
    "not like, disappointed, not as described, not as expected, not as pictured, "
    "cambió de opinión, ya no lo quiere, ya no la quiere, ya no lo necesita, no le gusta, "
    "buena voluntad, cortesía, gesto comercial, arrepentid*, insatisfech*, decepcionad*, "
    "meinung geändert, anders überlegt, will es nicht mehr, gefällt ihr nicht, "
    "gefällt ihm nicht, kulanz*, unzufrieden, enttäuscht, changé d'avis, n'en veut plus, "
    "ne lui plaît pas, geste commercial, bonne volonté, déçu*, mécontent*, cambiato idea, "
    "non lo vuole più, non le piace, non gli piace, buona volontà, delus*, insoddisfatt*, "
    "van gedachten veranderd, wil het niet meer, bevalt niet, coulance, teleurgesteld, "
    "ontevreden, mudou de ideia, não quer mais, não gostou, boa vontade, insatisfeit*, "
    "zmienił* zdanie, rozmyślił*, nie podoba, niezadowolon*, rozczarowan*, ångrat sig, "
    "ångrar sig, gillar inte, missnöjd, besviken, angret, fortryd*, misfornøyd, skuffet, "
    "передумал*, не понравил*, 気が変わった, 不要になった, いらなくなった, 気に入らない, "
    "마음이 바뀌, 단순 변심, 변심, 마음에 들지 않, 不想要了, 不要了, 不需要了, 改变主意, 反悔, "
    "不喜欢, 不满意, 七天无理由, "
    # A goodwill gesture, an apology, compensation for a delay.
    "gesto de cortesia, gesto de boa vontade, uit coulance, als gebaar, gest dobrej woli, "
    "som en gest, som kompensation, in segno di, per scusarci, como compensación, "
    "als entschädigung, en compensation, als compensatie, como compensação, 보상으로, 보상 차원, "
    "서비스 차원, 호의로, 사과의 의미, 사과 차원, お詫び, 心ばかり, 補償として, 作为补偿, "
    "表示歉意, 安抚, 致歉, "
)
# A reason named as such: "reason: other", "as wrong item", "the not-received refund".
NAMED_REASONS = {
    "not_received": Lexicon("not received", "not-received", "non-delivery", "nondelivery"),
    "wrong_item": Lexicon("wrong item", "wrong-item"),
    "damaged": Lexicon("reason damaged", "as damaged", "reason is damaged"),
    "other": Lexicon("reason other", "as other", "reason is other"),
}
# Most specific first: words that say the wrong item came also say something came.
DESCRIBED_REASONS = {"wrong_item": WRONG_ITEM, "not_received": NOT_RECEIVED, "damaged": DAMAGED}


def reasons_named(text: str) -> set[str]:
    """The reasons the words name in the policy's vocabulary ("as wrong item", "reason other")."""
    prepared = prepare(text)
    return {reason for reason, words in NAMED_REASONS.items() if words.pattern.search(prepared)}


def reasons_described(text: str) -> set[str]:
    """Every reason the words name or describe, in the policy's vocabulary ("arrived in pieces"
    and "broken" are both damaged). A fault in use is none of them (whether it counts as
    damaged is the policy's to say), and words of feeling ("unhappy") say "other" only where
    nothing else happened."""
    prepared = prepare(text)
    found = reasons_named(prepared)
    found |= {
        reason for reason, words in DESCRIBED_REASONS.items() if words.pattern.search(prepared)
    }
    if not found and not FAULTY.pattern.search(prepared) and OTHER.pattern.search(prepared):
        found.add("other")
    return found


def fault_in_use(text: str) -> bool:
    """Whether the words tell of a fault in use ("stopped charging", "no funciona")."""
    return bool(FAULTY.search(text))


def reason_words(text: str) -> str:
    """The words a reason was read from, to quote: the first reason or fault phrase found."""
    prepared = prepare(text)
    for words in (*NAMED_REASONS.values(), *DESCRIBED_REASONS.values(), FAULTY, OTHER):
        match = words.pattern.search(prepared)
        if match:
            return match.group(0)
    return ""


def counts_faults_as_damage(clause_text: str) -> bool:
    """Whether a policy clause counts a fault in use as damage: one sentence that speaks of
    both ("An item that stopped working within the window counts as damaged")."""
    return any(
        DAMAGED.pattern.search(sentence) and FAULTY.pattern.search(sentence)
        for sentence in sentences(prepare(clause_text))
    )
