"""The products words name, matched against an order's items (typos included)."""

import re
from functools import lru_cache

from agent.vocabulary.intent import asks_for_refund, is_question
from agent.vocabulary.reading import (
    _UNSPACED,
    Lexicon,
    _known_words,
    _words,
    clauses,
    edit_distance,
    fold,
    prepare,
    sentences,
)
from agent.vocabulary.reasons import fault_in_use, reasons_described
from agent.vocabulary.topics import asks_status


def _names(*parts: str) -> tuple[str, ...]:
    """Names separated by commas, as lexicon entries are."""
    return tuple(name.strip() for part in parts for name in part.split(",") if name.strip())


# What shops sell, by the English word an order's item name may use, and what else it is called
# (plurals and misspellings are read without being listed). An item is matched against the
# names of the customer's own orders, never assumed: a word here only says which thing is meant.
PRODUCT_NAMES: dict[str, tuple[str, ...]] = {
    "mug": _names(
        "cup, taza, tazón, tasse, becher, tazza, mok, beker, caneca, xícara, kubek, kubka, mugg, "
        "muggen, kopp, koppen, krus, kupa, кружка, чашка, 杯子, 马克杯, マグ, カップ, 머그, 컵, "
    ),
    "headphones": _names(
        "headphone, headset, earphones, earbuds, auriculares, cascos, kopfhörer, écouteurs, "
        "casque, cuffie, auricolari, koptelefoon, hoofdtelefoon, oordopjes, fones, słuchawki, "
        "hörlurar, hodetelefoner, høretelefoner, kulaklık, наушники, 耳机, ヘッドホン, "
        "ヘッドフォン, イヤホン, 헤드폰, 이어폰, "
    ),
    "jacket": _names(
        "raincoat, coat, chaqueta, impermeable, chubasquero, jacke, regenjacke, veste, "
        "imperméable, manteau, giacca, impermeabile, giubbotto, jas, regenjas, casaco, jaqueta, "
        "kurtka, jacka, regnjacka, jakke, куртка, 雨衣, 外套, 夹克, ジャケット, レインコート, "
        "재킷, 자켓, 우비, "
    ),
    "lamp": _names(
        "lámpara, lampe, lampada, lampa, lampan, lampen, luminária, candeeiro, лампа, 台灯, 灯, "
        "ランプ, 램프, 스탠드, "
    ),
    "blender": _names(
        "licuadora, batidora, mixer, standmixer, mixeur, frullatore, liquidificador, блендер, "
        "搅拌机, 料理机, 破壁机, ミキサー, ブレンダー, 블렌더, 믹서, "
    ),
    "laptop": _names(
        "notebook, computer, ordenador, portátil, computadora, ordinateur, portatile, "
        "computador, komputer, ноутбук, 笔记本, 电脑, ノートパソコン, パソコン, 노트북, "
    ),
    "phone": _names(
        "móvil, teléfono, celular, téléphone, telefono, telefoon, telefone, telefon, 手机, "
        "スマホ, 携帯, 휴대폰, "
    ),
    "case": _names(
        "funda, carcasa, hülle, handyhülle, coque, étui, custodia, hoesje, capinha, etui, "
        "mobilskal, чехол, 手机壳, ケース, 케이스, "
    ),
    "book": _names(
        "ebook, e-book, libro, buch, livre, boek, livro, książka, bok, книга, 电子书, 電子書籍, "
        "전자책, "
    ),
    "shoes": _names(
        "shoe, sneakers, boots, zapatos, zapatillas, schuhe, chaussures, scarpe, schoenen, "
        "sapatos, buty, skor, 鞋, 靴, 신발, "
    ),
    "shirt": _names(
        "t-shirt, tshirt, camisa, camiseta, hemd, chemise, camicia, overhemd, koszula, skjorta, "
        "衬衫, シャツ, 셔츠, "
    ),
    "dress": _names(
        "vestido, kleid, robe, vestito, jurk, sukienka, klänning, 连衣裙, ワンピース, 원피스, "
    ),
    "bag": _names(
        "backpack, handbag, bolso, mochila, tasche, rucksack, sac, borsa, zaino, tas, bolsa, "
        "torba, plecak, väska, 包, バッグ, 가방, "
    ),
    "watch": _names(
        "reloj, uhr, montre, orologio, horloge, relógio, zegarek, klocka, 手表, 時計, 시계, "
    ),
    "charger": _names(
        "cargador, ladegerät, chargeur, caricabatterie, oplader, carregador, ładowarka, laddare, "
        "充电器, 充電器, 충전기, "
    ),
    "kettle": _names(
        "hervidor, wasserkocher, bouilloire, bollitore, waterkoker, chaleira, czajnik, "
        "vattenkokare, 水壶, ケトル, 주전자, "
    ),
    "camera": _names("cámara, kamera, caméra, fotocamera, câmera, aparat, 相机, カメラ, 카메라, "),
    "speaker": _names(
        "altavoz, lautsprecher, enceinte, altifalante, głośnik, högtalare, 音箱, スピーカー, "
        "스피커, "
    ),
    "tablet": _names("tableta, tablette, 平板, タブレット, 태블릿, "),
    "toaster": _names(
        "tostadora, toaster, grille-pain, tostapane, broodrooster, torradeira, toster, brödrost, "
        "烤面包机, トースター, 토스터, "
    ),
    "chair": _names("silla, stuhl, chaise, sedia, stoel, cadeira, krzesło, stol, 椅子, 의자, "),
    "sweater": _names(
        "jumper, hoodie, jersey, pullover, maglione, trui, suéter, sweter, tröja, 毛衣, "
        "セーター, 스웨터, "
    ),
    "vase": _names("jarrón, florero, 花瓶, 꽃병, "),
    "plate": _names(
        "plato, teller, assiette, piatto, bord, prato, talerz, tallrik, 盘子, 皿, 접시, "
    ),
    "bottle": _names(
        "botella, flasche, bouteille, bottiglia, fles, garrafa, butelka, flaska, 瓶, ボトル, 병, "
    ),
}
# Words of an item's name that do not say which item it is ("Phone case": the phone's).
GENERIC_ITEM_WORDS = _words(
    """case item items set box pack kit desk home the of and for with a an e"""
)
# Words after "the", "her", ... that name no product: such a phrase never sends the planner
# looking for another order.
NOT_PRODUCT_WORDS = _words(
    """order orders refund refunds customer customers money balance amount rest item items thing
    things one damage problem issue trouble question message ticket policy reason request
    proposal status price window limit reviewer supervisor agent record note email replacement
    discount code password address weather poem shipping box parcel package photo photos pic
    delivery courier time week day days month lid screen part zip earbud charger cable battery
    handle colour color size shade design model version gesture goodwill courtesy difference
    compensation history state account number table row rows database data case clause review
    approval decision fee cost total payment way thread mind end bell reply draft store shop
    desk system list rules rule sort something bit inbox chat conversation situation fault
    defect receipt invoice tracking link attention requests proposals card bank charge
    chargeback pieces piece rim chip crack side friday monday tuesday wednesday thursday
    saturday sunday morning evening afternoon today tomorrow yesterday weekend call lot bits
    place manager team colleague patience experience feedback complaint apology mood hassle
    inconvenience delay wait picture image video evidence proof courier driver post mail
    neighbour neighbor husband wife son daughter mother father friend birthday holiday trip
    fault story words language name hotline website app life job woman women man men lady
    ladies guy guys girl boy person people client buyer kid kids child children family sister
    brother boss staff carrier postman postie glaze paint finish coating surface corner edge
    inside outside button hinge cord plug seam stitching zipper sole heel label sticker
    wrapping wrapper bubble tape seal instructions manual warranty guarantee"""
)
# Words that describe a thing without naming it: "the broken mug", "her other order".
DESCRIBING_WORDS = _words(
    """broken cracked damaged faulty defective missing wrong full partial entire whole same
    earlier latest first last other new old different similar small big large used original
    own second third another half exact exactly remaining right left next previous rain snow
    sun wind storm heat frost poor"""
)
_DETERMINER_PHRASE = re.compile(
    # A lookahead, so that "the status of the blender refund" yields both phrases. Only words
    # that point at one thing count ("a terrible week" points at none).
    r"(?:\b(?:the|her|his|their|my|that|this|your|our)"
    # "'s" of a name ("Li's mug"), not "she's", "it's", "that's" (is, has).
    r"|(?<!\bshe)(?<!\bhe)(?<!\bit)(?<!\bthat)(?<!\bwhat)(?<!\bthere)(?<!\bhere)"
    r"(?<!\bwho)(?<!\blet)(?<!\bwhere)'s)\s+"
    r"(?=(?P<words>[a-z-]+(?:\s+[a-z-]+){0,2}))"
)
_PHRASE_ENDS = _words(
    """the and for with her his their she him they this that what which from have has had was
    were are is been can could would will should about also too one all any our your you not
    but just please order orders refund customer bought ordered asks says said still more some
    than then them there here into onto over under in on at to of by as or if so it its be who
    how why when where pls plz please thanks"""
)


@lru_cache(maxsize=4096)
def product_key(word: str) -> str:
    """The product a word names, by the English word of PRODUCT_NAMES ("tazas" -> "mug"); a
    word it does not know, in its singular."""
    word = _singular(fold(word))
    for key, names in PRODUCT_NAMES.items():
        if word in {key, *(_singular(fold(name)) for name in names)}:
            return key
    return word


@lru_cache(maxsize=1024)
def things_named(text: str, *, pointed: bool = False) -> frozenset[frozenset[str]]:
    """What the words name that may be an item of the customer's orders, each as the words
    that name it: a product of PRODUCT_NAMES in any language ({"mug"} for "la taza"), or in
    English a thing named after "the", "her", ... that is no word of the desk's own
    ({"quiet", "garden"}, {"toaster"}). Matched against orders with `names_item`. With
    `pointed`, only things named after "the", "her", ... (one thing, not things in general)."""
    prepared = prepare(text)
    found = set() if pointed else {frozenset({key}) for key in _products_in(prepared)}
    for match in _DETERMINER_PHRASE.finditer(prepared):
        words = _thing_words(match.group("words").split())
        if words:
            found.add(words)
    return frozenset(found)


def products_named(text: str) -> set[str]:
    """The products of PRODUCT_NAMES the words name, by their English word."""
    return _products_in(prepare(text))


def _products_in(prepared: str) -> set[str]:
    found = set()
    words = {_singular(word) for word in re.findall(r"[^\W\d_]+", prepared)}
    # Swedish, Norwegian, Danish put "the" at the end: "mixern", "lampen", "koppet".
    words |= {
        word[: -len(end)]
        for word in list(words)
        for end in ("en", "et", "n")
        if len(word) >= 5 and word.endswith(end)
    }
    for key, names in PRODUCT_NAMES.items():
        # "case" on its own is no product ("in that case"); "funda", "Handyhülle" are.
        own = () if key in GENERIC_ITEM_WORDS else (key,)
        for name in (*own, *names):
            name = fold(name)
            if (_UNSPACED.search(name) and name in prepared) or (
                not _UNSPACED.search(name) and _singular(name) in words
            ):
                found.add(key)
    return found


def _thing_words(phrase: list[str]) -> frozenset[str]:
    """The words of a phrase after "the" that may name an item, up to a word that ends the
    phrase or a noun of the desk's own ("the refund"); a product ends it too."""
    known = _known_words()
    kept: set[str] = set()
    for word in phrase:
        if (
            word in _PHRASE_ENDS
            or word in NOT_PRODUCT_WORDS
            or _singular(word) in NOT_PRODUCT_WORDS
        ):
            break
        if product_key(word) in PRODUCT_NAMES:
            return frozenset({product_key(word)})
        if word in DESCRIBING_WORDS or word in known["words"] or word.startswith(known["stems"]):
            continue  # "the broken ...", "the full ..."
        if len(word) >= 3 and word.isalpha() and not (len(word) > 5 and word.endswith("ing")):
            kept.add(_singular(word))
    return frozenset(kept)


# Words that point back at something named before: "Refund it", "she wants them refunded".
POINTING_BACK = Lexicon("it, its, them, that, this, those, these, one, ones, same, ")


# What is said of an item, not of the things around it: "the umbrella arrived broken", "she
# ordered the teapot".
ITEM_VERBS = Lexicon(
    "arriv*, ordered, bought, purchased, received, delivered, returned, shipped, sent back, "
    "got the, got a, got her, got his, "
)
# A thing after these is what the message is about: "she called about the umbrella".
_TOPIC = re.compile(r"\b(?:about|for|regarding|re|with|on|concerning)\s+(?:the|her|his|their|my)\b")


def named_in_passing(text: str) -> bool:
    """Whether the things the words name are named only in passing: the sentences that ask
    for something (a refund, a status, an answer) name nothing and point back at nothing, and
    nothing said of a thing makes it an item: not what went wrong, arrived or was ordered, nor
    what the message is about ("the courier left the box out in the rain ... Refund her the 129
    please", but not "The umbrella arrived broken. Full refund please.")."""
    asking, telling = [], []
    for sentence in sentences(prepare(text)):
        if asks_for_refund(sentence) or asks_status(sentence) or is_question(sentence):
            asking.append(sentence)
        else:
            telling.append(sentence)
    if not asking or any(
        things_named(sentence) or POINTING_BACK.pattern.search(sentence) for sentence in asking
    ):
        return False
    return not any(
        things_named(clause)
        and (
            reasons_described(clause)
            or fault_in_use(clause)
            or ITEM_VERBS.pattern.search(clause)
            or _TOPIC.search(clause)
        )
        for sentence in telling
        for clause in clauses(sentence)
    )


def item_keys(item_name: str) -> set[str]:
    """What an order's item name names: its words as products ("Ceramic mug" -> mug,
    ceramic; "Phone case" -> phone, case)."""
    words = re.findall(r"[^\W\d_]+", fold(item_name))
    return {product_key(word) for word in words if len(word) >= 3 and word not in _PHRASE_ENDS}


def is_product(thing: frozenset[str] | set[str]) -> bool:
    """Whether a thing named is a product the vocabulary knows ("the jacket"), not just a word
    after "the" that may or may not be one."""
    return bool(set(thing) & set(PRODUCT_NAMES))


def names_item(thing: frozenset[str] | set[str], item_name: str) -> bool:
    """Whether a thing named (things_named) is this item: a word of it is a word of the item's
    name, or that word misspelt ("headphnoes", "blendr")."""
    keys = item_keys(item_name)
    return any(word in keys or any(_one_slip_apart(word, key) for key in keys) for word in thing)


def _singular(word: str) -> str:
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def _one_slip_apart(typed: str, word: str) -> bool:
    """A misspelling of a long word: one letter missing, added or swapped, first letter kept."""
    if len(word) < 5 or len(typed) < 5 or typed[0] != word[0] or abs(len(typed) - len(word)) > 1:
        return False
    return edit_distance(typed, word) == 1 and (
        len(typed) != len(word) or sorted(typed) == sorted(word)
    )
