"""The amounts words name, and what "in full", "half" or "the rest" come to."""

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from agent.vocabulary.reading import CENT, Lexicon, prepare

# A number as amounts are written: "129", "129.00", "129,00", "1,299.00", "1.299,00", with a
# currency before or after it ("¥129", "129元", "CNY 129", "129 yuan").
_NUMBER = re.compile(
    r"(?<![a-z0-9_.,\-#/:])(?P<whole>\d{1,3}(?:[.,]\d{3})+|\d+)(?:[.,](?P<cents>\d{1,2}))?"
    r"(?!\d|[.,]\d|[\-/:]\d)(?P<currency>\s?(?:cny|rmb|yuan|usd|eur|jpy|kuai|元|块|円|원|€|euros?"
    r"|dollars?)(?![a-z]))?"
)
# What a number counts when it is not money: "3 weeks", "2 items", "20%", "5th".
AMOUNT_UNIT = Lexicon(
    "%, percent, per cent, prozent, por ciento, pour cent, per cento, procent, day*, week*, "
    "month*, year*, hour*, minute*, item*, piece*, pcs, unit*, times, order*, x, st, nd, rd, th, "
    # the size of an attached file, as the ticket thread shows it ("cracked mug.png, 117 KB")
    "kb, mb, gb, kib, mib, byte*, "
    "am, pm, h, días, día, semana*, meses, años, horas, tag, tage, tagen, woche*, monat*, "
    "stunde*, stück, jour*, semaine*, mois, ans, heure*, giorni, settiman*, mesi, ore, dag, "
    "dagen, dagar, weken, maand*, uur, dias, dni, dzień, tygodni*, miesi*, godzin*, veck*, "
    "månad*, timm*, dage, uge*, 天, 个, 周, 月, 次, 日, 件, 号, 点, 일, 개, 주, 시, 週, 個, "
)
# Words before a number that make it a fact, not the amount to refund: "she paid 129".
AMOUNT_CONTEXT = Lexicon(
    "paid, pays, cost, costs, cost her, price, priced at, worth, total of, totaled, totalled, "
    "spent, out of, of the, from the, instead of, not, earlier, already, previous, refunded, "
    "got, order, order no, order number, order id, pedido, bestellung, commande, ordine, "
    "bestelling, encomenda, zamówienie, beställning, ticket, 订单, 订单号, 注文, 주문, pagó, "
    "pagado, costó, precio, bezahlt, gezahlt, kostet, preis, payé, coûte, prix, pagato, costa, "
    "prezzo, betaald, kost, prijs, pagou, custou, preço, zapłaciła, zapłacił, cena, betalade, "
    "betalt, kostade, pris, 付了, 花了, 价格, 售价, 原价, 支払, 価格, 결제, 가격, "
)
FULL = Lexicon(
    "full, fully, in full, entire, entirely, whole, all of it, everything back, the lot, total, "
    "complete, completo, completa, todo, entero, íntegro, voll*, ganz*, gesamt*, komplett*, "
    "alles, tout, totalité, intégral*, complet*, entier*, totale, tutto, intero, integrale, "
    "volledig*, helemaal, geheel, totaal, hele, tudo, integral, inteiro, pełny, pełna, pełen, "
    "całość, całą, całkowit*, wszystko, cały, allt, hela, fullt, helt, alt, fuldt, полн*, весь, "
    "всю, 全额, 全部, 全款, 全退, 退全, 全額, 전액, 전부, "
)
HALF = Lexicon(
    "half, halve, mitad, hälfte, halb*, moitié, metà, helft, metade, połowa, połowę, połowy, "
    "hälften, halva, halvdelen, halvparten, половин*, 一半, 半额, 半价, 半額, 半分, 절반, 반액, "
)
REMAINING = Lexicon(
    "remaining, remainder, the rest, rest of, what's left, whats left, what is left, "
    "whatever's left, whatever is left, whatever left, left over, leftover, the balance, "
    "refundable balance, left on, resto, lo que queda, restante*, saldo, den rest, restlich*, "
    "übrig*, verbleibend*, restbetrag, reste, restant*, ce qui reste, solde, rimanente, "
    "quel che resta, residuo, de rest, resterend*, restbedrag, wat over is, o que falta, "
    "o que sobra, reszta, resztę, reszty, pozostał*, resten, återstående, det som är kvar, "
    "resterende, остаток, 剩余, 剩下, 余款, 其余, 余额, 残り, 残額, 残金, 나머지, 잔액, "
)
# Some of it, without saying how much: "a bit for the trouble", "一部分".
PART = Lexicon(
    # A share, or a cost that is part of the price.
    "a third, a quarter, third of, quarter of, tercio, tercera parte, drittel, viertel, tiers, "
    "quart, terzo, quarto, derde, kwart, terço, trzecia, ćwierć, tredjedel, fjärdedel, 三分之一, "
    "四分之一, 3分の1, 3분의 1, shipping, postage, delivery fee, delivery cost, envío, "
    "gastos de envío, versand*, frais de port, spedizione, verzendkosten, frete, wysyłk*, frakt, "
    "porto, 运费, 邮费, 送料, 배송비, minus, except, excluding, deduct*, menos, abzüglich, "
    "moins, meno, 扣除, 减去, "
    # Some of it, without saying how much.
    "something, a bit, a little, some money, some of, partial*, part of, a portion, portion, "
    "whatever seems fair, whatever is fair, a discount, some compensation, compensation, "
    "percent, per cent, algo, un poco, una parte, parcial*, parte del, parte do, uma parte, "
    "etwas, ein bisschen, ein wenig, teilweise, einen teil, quelque chose, un peu, partiel*, "
    "une partie, qualcosa, un po, parziale, parte dell, iets, een beetje, gedeeltelijk*, "
    "een deel, um pouco, trochę, część, częściow*, lite, delvis, en del, litt, noe, prozent, "
    "por ciento, pour cent, per cento, procent, 一些, 一部分, 部分, 一点, 适当, 一部, 少し, "
    "일부, 조금, "
)
_PERCENT = re.compile(r"\d\s*%")


@dataclass(frozen=True)
class AmountWords:
    """What the words say of the amount besides a number."""

    full: bool  # the whole price: "full refund", "reembolso completo", "全额"
    half: bool
    remaining: bool  # what is left: "the rest", "lo que queda", "剩下的"
    part: bool  # some of it, how much not said: "a bit", "20%"


def amounts_named(text: str) -> set[Decimal]:
    """The amounts the words name: numbers with or without a currency, never an order number
    (8 digits or more), a count ("3 weeks"), a percentage, a clause ("R-2"), or a fact said
    about the order ("she paid 129")."""
    prepared = prepare(text)
    found = set()
    for match in _NUMBER.finditer(prepared):
        whole = match.group("whole")
        if len(whole) >= 8 and whole.isdigit():
            continue
        after = prepared[match.end() :]
        if not match.group("currency") and AMOUNT_UNIT.starts(after):
            continue
        if AMOUNT_CONTEXT.ends(_words_before(prepared, match.start())):
            continue
        amount = _decimal(whole, match.group("cents"))
        if amount is not None:
            found.add(amount)
    return found


# Currencies an amount may be written in, by ISO code; "¥" is both yuan and yen.
_CURRENCY_MARKS = (
    ("CNY", Lexicon("cny, rmb, yuan, kuai, 元, 块, 人民币")),
    ("JPY", Lexicon("jpy, yen, 円")),
    ("USD", Lexicon("usd, dollar*, us$")),
    ("EUR", Lexicon("eur, euro*")),
    ("GBP", Lexicon("gbp, pound*")),
)
_CURRENCY_SIGNS = {"¥": {"CNY", "JPY"}, "$": {"USD"}, "€": {"EUR"}, "£": {"GBP"}}


def currencies_named(text: str) -> set[str]:
    """The currencies the words write amounts in (ISO codes): "¥" stands for yuan and yen."""
    prepared = prepare(text)
    found = {code for code, marks in _CURRENCY_MARKS if marks.pattern.search(prepared)}
    for sign, codes in _CURRENCY_SIGNS.items():
        if sign in prepared:
            found |= codes
    return found


def _words_before(text: str, end: int) -> str:
    """The words before a number, without its currency sign or code."""
    before = text[max(0, end - 40) : end]
    return re.sub(r"(?:[¥$€£:]|\b(?:cny|rmb|usd|eur|of|was|is|at)\b|\s)+$", "", before)


def _decimal(whole: str, cents: str | None) -> Decimal | None:
    try:
        return Decimal(f"{re.sub(r'[.,]', '', whole)}.{cents or '0'}").quantize(CENT)
    except InvalidOperation:
        return None


def amount_words(text: str) -> AmountWords:
    prepared = prepare(text)
    return AmountWords(
        full=bool(FULL.pattern.search(prepared)),
        half=bool(HALF.pattern.search(prepared)),
        remaining=bool(REMAINING.pattern.search(prepared)),
        part=bool(PART.pattern.search(prepared) or _PERCENT.search(prepared)),
    )


def amount_meant(text: str, *, paid: Decimal, balance: Decimal) -> tuple[str, Decimal] | None:
    """The amount the words mean without naming one, where the order's figures settle it:
    what is left (the refundable balance), the full price of an order nothing was refunded on,
    or half of that price. None when they name an amount, or when it stays open (the full price
    of an order partly refunded: that price, or what is left?)."""
    if amounts_named(text):
        return None
    said = amount_words(text)
    if said.remaining:
        return "the remaining balance", balance
    if said.half:
        return ("half the price", (paid / 2).quantize(CENT)) if balance == paid else None
    if said.full and balance == paid:
        return "the full price", paid
    return None


def amount_established(amount: Decimal, text: str, *, paid: Decimal, balance: Decimal) -> bool:
    """Whether the words settle `amount`: they named it, or mean it (`amount_meant`), or ask for
    the whole refund without naming part of it and it is the order's balance or price."""
    if amount in amounts_named(text):
        return True
    meant = amount_meant(text, paid=paid, balance=balance)
    if meant is not None:
        return amount == meant[1]
    said = amount_words(text)
    return not (said.part or said.half) and amount in (balance, paid)
