# Over 400 lines: the desk's one vocabulary (DESIGN §18), the word lists of many languages
# beside the few readers that use them; the lists are data, the readers are short.
# ruff: noqa: RUF001, RUF002 (Chinese, Japanese and typographic punctuation is what these texts use)
"""The desk's vocabulary: what it reads in what people write, in one place (DESIGN §18). The
offline planner (agent/providers/offline), the tools' guards (agent/tools/guards.py) and the
run's records read language only through this module, so they agree; tests/agent/
test_vocabulary_agreement.py holds them to it on a corpus of phrasings.

What it reads: whether words ask for a refund (`asks_for_refund`), the amounts they name and
what "the rest", "in full" or "half" come to (`amounts_named`, `amount_words`, `amount_meant`),
the reasons they name or describe in the policy's vocabulary (`reasons_named`,
`reasons_described`), the products they name (`names_item`), and what a question is about
(`asks_status`, `asks_policy`, `policy_keywords`, ...). Everything here flags, sorts or asks;
nothing here refuses a call (state does that).

A word list is a `Lexicon`: entries in plain words, many languages side by side. Text is folded
before it is read (case, accents, full-width forms: "Rückerstattung" reads as "ruckerstattung",
"１２９" as "129"), and a misspelt word one letter away from a word of the vocabulary is read
as that word ("refnud", "stoped").
"""

import re
import unicodedata
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from functools import cache, lru_cache

CENT = Decimal("0.01")

# --- Reading text ---------------------------------------------------------------------------

# Scripts written without spaces between words: their entries match anywhere.
_UNSPACED = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
_HAN = re.compile(r"[\u3400-\u9fff]")
_SENTENCE_END = re.compile(r"(?<=[.!?;。！？；])\s*|\n+|\s+[-–—>]+\s*(?=\S)")
# Clause ends: a comma or colon before a space ("1,299.00" and "14:00" are not), a dash, or a
# word that joins two clauses.
_CLAUSE_BREAK = re.compile(
    r"\s*(?:[,:](?=\s)|[，：、]|\s[-–—]\s|\b(?:and|then|but|so|also|y|pero|und|aber|dann|et"
    r"|mais|ma|maar|och|ale|然后|但是)\b)\s*"
)
_IDENTIFIER = re.compile(r"\b\w+_\w+\b")
_LATIN_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")
_APOSTROPHES = str.maketrans({"’": "'", "‘": "'", "`": "'", "´": "'"})


def fold(text: str) -> str:
    """Text as the vocabulary reads it: full-width forms made plain, lower case, Latin letters
    without accents, one kind of apostrophe. Scripts other than Latin keep their marks."""
    plain = unicodedata.normalize("NFKC", text or "").casefold().translate(_APOSTROPHES)
    kept: list[str] = []
    for char in unicodedata.normalize("NFD", plain):
        if unicodedata.combining(char) and kept and kept[-1] < "\u0250":
            continue
        kept.append(char)
    return unicodedata.normalize("NFC", "".join(kept))


def sentences(text: str) -> list[str]:
    return [part.strip() for part in _SENTENCE_END.split(text or "") if part and part.strip()]


def clauses(sentence: str) -> list[str]:
    return [part for part in _CLAUSE_BREAK.split(sentence) if part and part.strip()]


def has_han(text: str) -> bool:
    """Whether the text has Chinese characters (Chinese, or Japanese kanji)."""
    return bool(_HAN.search(text or ""))


def _words(text: str) -> frozenset[str]:
    """A list of single words, separated by spaces or line breaks."""
    return frozenset(text.split())


class Lexicon:
    """Words of one meaning in many languages, read in folded text.

    An entry is plain words: a word matches whole; `*` at its end lets it go on ("refund*":
    refunds, refunded); `~` stands for up to three words between ("pay ~ back"); `#` for an
    amount ("退#", "# back"). Entries in Chinese, Japanese or Korean match anywhere.
    """

    def __init__(self, *parts: str):
        # Entries are separated by commas; a part may hold many, one line of a language each.
        self.entries = tuple(
            entry.strip() for part in parts for entry in part.split(",") if entry.strip()
        )
        self.pattern = re.compile("|".join(_entry_pattern(entry) for entry in self.entries))

    def search(self, text: str) -> re.Match | None:
        return self.pattern.search(prepare(text))

    def finditer(self, text: str):
        return self.pattern.finditer(prepare(text))

    def starts(self, text: str) -> re.Match | None:
        """A match at the start of already prepared text."""
        return self._anchored()[0].match(text.lstrip(" ¿¡\"'(*-"))

    def ends(self, text: str) -> re.Match | None:
        """A match at the end of already prepared text."""
        return self._anchored()[1].search(text.rstrip())

    @cache  # noqa: B019 (lexicons live as long as the module)
    def _anchored(self) -> tuple[re.Pattern, re.Pattern]:
        return re.compile(rf"(?:{self.pattern.pattern})"), re.compile(
            rf"(?:{self.pattern.pattern})$"
        )

    def words(self) -> set[str]:
        """The entries' Latin words of five letters or more: what a misspelling is read as."""
        found = set()
        for entry in self.entries:
            for word in fold(entry).split():
                word = word.rstrip("*")
                if len(word) >= 5 and word.isalpha() and not _UNSPACED.search(word):
                    found.add(word)
        return found


_AMOUNT_IN_ENTRY = r"\s*(?:[¥$€£]\s?)?\d+(?:[.,]\d{1,2})?(?:\s?(?:元|块|円|yuan|cny|rmb))?"
_GAP = r"(?:\s+\S+){0,3}?\s+"
_BETWEEN_WORDS = r"[\s\-:=\"']+"


def _word_pattern(word: str) -> str:
    if "#" in word:
        return "".join(
            _AMOUNT_IN_ENTRY if part == "#" else re.escape(part)
            for part in re.split("(#)", word)
            if part
        )
    if _UNSPACED.search(word):
        return re.escape(word.rstrip("*"))
    if word.endswith("*"):
        return rf"(?<!\w){re.escape(word[:-1])}\w*"
    return rf"(?<!\w){re.escape(word)}(?!\w)"


def _entry_pattern(entry: str) -> str:
    pattern, gap, previous = "", False, ""
    for word in fold(entry).split():
        if word == "~":
            gap = True
            continue
        if pattern and gap:
            pattern += _GAP
        elif pattern and _UNSPACED.match(previous[-1:]) and _UNSPACED.match(word[:1]):
            pattern += r"\s*"
        elif pattern:
            pattern += _BETWEEN_WORDS
        pattern += _word_pattern(word)
        gap, previous = False, word
    return f"(?:{pattern})"


# "hasn't", "dont", "won't": English negations written one way, so that lists say "not" once.
_NOT_CONTRACTED = re.compile(
    r"\b(?:(do|does|did|has|have|had|is|are|was|were|should|would|could|must|need)n'?t"
    r"|(wo)n't|(ca)n'?t|(can)not)\b"
)


@lru_cache(maxsize=4096)
def prepare(text: str) -> str:
    """Folded text with misspellings read as the vocabulary's words, English negations spelt
    out ("hasn't" as "has not") and identifiers (table names such as refunds_refundrequest)
    left out; the reasons' names keep their meaning."""
    folded = fold(text).replace("not_received", "not received").replace("wrong_item", "wrong item")
    folded = _NOT_CONTRACTED.sub(_spelt_out_not, _IDENTIFIER.sub(" ", folded))
    return _correct_spelling(folded)


def _spelt_out_not(match: re.Match) -> str:
    verb = next(group for group in match.groups() if group)
    return {"wo": "will", "ca": "can"}.get(verb, verb) + " not"


def _correct_spelling(text: str) -> str:
    known = _known_words()
    return _LATIN_WORD.sub(lambda match: _spelt(match.group(0), known), text)


def _spelt(word: str, known: dict) -> str:
    """The vocabulary's word that `word` is a slip of (a letter missing, one too many, or two
    swapped), when exactly one fits; otherwise `word` as it is."""
    if len(word) < 5 or word in known["words"] or word.startswith(known["stems"]):
        return word
    candidates = set(known["slips"].get(word, ()))
    # A letter too many inside the word; one at its end is an ending ("proposed", "cracks").
    inner = {word[:i] + word[i + 1 :] for i in range(len(word) - 1)}
    candidates |= inner & known["words"]
    if not candidates:
        candidates = _stem_slips(word, known["long_stems"])
    return candidates.pop() if len(candidates) == 1 else word


def _stem_slips(word: str, stems: tuple[str, ...]) -> set[str]:
    """A long stem's inflected word with a slip inside the stem ("erstaten", "zerbrochn"): a
    letter missing or two swapped, the ending kept."""
    found = set()
    for stem in stems:
        # Two swapped before one missing ("aterbetlaa" is "aterbetala"); a letter too many is
        # not read here: "terugbetaald" is spelt right.
        for typed in (word[: len(stem)], word[: len(stem) - 1]):
            if typed[:1] != stem[:1] or typed == stem or edit_distance(typed, stem) != 1:
                continue
            if len(typed) == len(stem) and sorted(typed) != sorted(stem):
                continue  # a letter swapped for another is not a slip read here
            found.add(stem + word[len(typed) :])
            break
    return found


def _deletions(word: str) -> set[str]:
    return {word[:i] + word[i + 1 :] for i in range(len(word))}


def _swaps(word: str) -> set[str]:
    return {word[:i] + word[i + 1] + word[i] + word[i + 2 :] for i in range(len(word) - 1)}


@cache
def _known_words() -> dict:
    words: set[str] = set()
    stems: set[str] = set()
    for lexicon in _spelling_sources():
        words |= lexicon.words()
        stems |= {
            fold(word[:-1])
            for entry in lexicon.entries
            for word in entry.split()
            if word.endswith("*") and len(word) > 5
        }
    for names in PRODUCT_NAMES.values():
        words |= {fold(name) for name in names if len(name) >= 5 and name.isalpha()}
    # A known word typed with a letter missing, or with two letters swapped.
    slips: dict[str, set[str]] = {}
    for word in words:
        for slip in _deletions(word) | _swaps(word):
            if slip != word:
                slips.setdefault(slip, set()).add(word)
    # Words spelt right that are a slip away from one above ("quanto", "quantos"): kept.
    for lexicon in _kept_sources():
        words |= lexicon.words()
    long_stems = tuple(sorted(stem for stem in stems if len(stem) >= 7 and stem.isalpha()))
    return {"words": words, "stems": tuple(sorted(stems)), "slips": slips, "long_stems": long_stems}


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance with adjacent transpositions (typed characters swap places)."""
    rows = [list(range(len(b) + 1))]
    for i, char_a in enumerate(a, start=1):
        row = [i]
        for j, char_b in enumerate(b, start=1):
            cost = 0 if char_a == char_b else 1
            value = min(rows[-1][j] + 1, row[j - 1] + 1, rows[-1][j - 1] + cost)
            if i > 1 and j > 1 and char_a == b[j - 2] and a[i - 2] == char_b:
                value = min(value, rows[-2][j - 2] + 1)
            row.append(value)
        rows.append(row)
    return rows[-1][-1]


# --- Asking for a refund ----------------------------------------------------------------------

# Money going back to the customer, as something to do.
REFUND = Lexicon(
    # English
    "refund*, reimburs*, comp her, comp him, comp them, money back, pay ~ back, give ~ back, "
    "send ~ money back, # back, amount back, price back, everything back, it all back, "
    "back on ~ card, back to ~ card, credit her, credit him, credit them, credit the customer, "
    "credit ~ card, credit back, reverse ~ charge, reverse ~ payment, reverse ~ transaction, "
    "put ~ through, push ~ through, propose, proposal, compensate*, give ~ something, "
    "give ~ a bit, give ~ a little, offer ~ something, offer ~ compensation, "
    # Spanish, Portuguese
    "reembols*, devol*, devuel*, devolv*, reintegr*, abona*, abónale, estorn*, ressarc*, "
    "dinero de vuelta, dinheiro de volta, "
    # German
    "erstatt*, rückerstatt*, zurückerstatt*, zurückzahl*, zurücküberweis*, zurückbuch*, "
    "geld ~ zurück, # zurück, gutschr*, refundier*, "
    # French, Italian
    "rembours*, recrédit*, rendre ~ argent, rimbors*, restitu* ~ soldi, soldi ~ indietro, "
    # Dutch, Swedish, Norwegian, Danish
    "terugbetal*, terugstort*, terugboek*, geld ~ terug, betaal ~ terug, stort ~ terug, # terug, "
    "återbetal*, pengarna tillbaka, pengar tillbaka, # tillbaka, tilbakebetal*, tilbagebetal*, "
    "refusjon*, penge tilbage, pengene tilbake, "
    # Polish, Czech, Turkish, Russian
    "zwrot*, zwróć*, zwrócić, refundacj*, vrácení peněz, vrátit peníze, iade*, возврат*, "
    "вернуть деньги, верните деньги, верни деньги, возмест*, "
    # Chinese, Japanese, Korean
    "退款, 退钱, 退费, 退还, 退给, 给她退, 给他退, 帮她退, 给客户退, 退她, 退他, 全退, 都退, "
    "退全, 退一半, 退剩, 退#, 退掉, 返还, 赔偿, 补偿, 返金, 払い戻, 払戻, 환불, "
)
# Money on its own: wanted by someone, it is a refund they wish for ("she wants her money").
MONEY = Lexicon(
    "money, dinero, geld, argent, soldi, dinheiro, pieniądze, pengar*, penge*, деньги, 钱, お金, "
    "돈, "
)
# "refund" as a topic asked about, not as something to do.
REFUND_TOPIC = Lexicon(
    "refund* policy, refund* policies, refund* window, refund* rules, refund* rule, "
    "refund* status, refund* history, refund* process, refund* clause, refund* limit*, "
    "refund* period, refund* deadline, refund* requests, refund* state, refund* progress, "
    "política de reembolso*, política de devolución*, politique de remboursement, "
    "politica di rimborso, 退款政策, 退款规定, 返金ポリシー, 환불 정책, "
)
# A refund spoken of as done, under way or proposed: not one to propose now.
REFUND_STATE = Lexicon(
    "退了, refund* requested, got ~ money back, received ~ money back, already ~ money back, "
    "was ~ refunded, were ~ refunded, been ~ refunded, is ~ refunded, got ~ refunded, "
    "already ~ refunded, i refunded, we refunded, you refunded, has refunded, have refunded, "
    "had refunded, proposed, refund* went, refund* gone, refund* go through, refund* is, "
    "got ~ refund*, received ~ refund*, had ~ refund*, refund* take*, refund* are, "
    "refund* ~ pending, refund* ~ approved, refund* ~ rejected, refund* usually, "
    "refund* normally, refund* was, refund* seems, refund* still, refund* stuck, refund* has, "
    "refund* already, ya reembolsad*, fue reembolsad*, ha sido reembolsad*, wurde erstattet, "
    "ist erstattet, bereits erstattet, schon erstattet, a été rembours*, déjà rembours*, "
    "è stato rimborsat*, già rimborsat*, is ~ terugbetaald, al ~ terugbetaald, foi reembolsad*, "
    "já ~ reembolsad*, już ~ zwrócon*, redan ~ återbetal*, schon ~ erstattet, bereits ~ erstattet, "
    "ya ~ reembolsad*, déjà ~ rembours*, già ~ rimborsat*, 已退, 已经退, 退了吗, 退了没, 返金済, "
    "返金され, 환불됐, 환불되었, 환불 완료, "
)
# A refund spoken of as someone's or as a subject ("her refund", "about the refund"): a
# request only where the clause asks for it ("process her refund", "can we get her a refund").
REFUND_SPOKEN_OF = Lexicon(
    "her ~ refund, his ~ refund, their ~ refund, my ~ refund, your ~ refund, about ~ refund*, "
    "regarding ~ refund*, concerning ~ refund*, any refund*, "
)
# A clause that opens with one of these tells the assistant what to do, whatever else it says
# ("go ahead with her refund", "process her refund").
DIRECTIVE = Lexicon(
    "go ahead, proceed, process, handle, issue, do, put, push, raise, submit, file, start, "
    "create, make, propose, refund*, please, pls, plz, procesa, tramita, haz, gestiona, "
    "bearbeite, veranlasse, mach, traite, fais, lance, gestisci, fai, verwerk, doe, processa, "
    "faça, zrób, gör, "
)
# A word right before a refund that takes it back ("don't refund", "noch nicht erstatten").
NEGATION = Lexicon(
    "not, never, no, without, hold off, hold off on, no need to, stop, cancel, instead of, "
    "rather than, en lugar de, en vez de, statt, anstatt, au lieu de, invece di, in plaats van, "
    "em vez de, zamiast, istället för, 而不是, nunca, sin, todavía no, aún no, nicht, kein*, "
    "nie, ohne, ne, pas, sans, jamais, non, senza, mai, niet, geen, nooit, zonder, não, sem, "
    "bez, inte, ej, aldrig, utan, ikke, ikkje, aldri, не, нет, без, 不要, 别, 不用, 暂时不, "
    "先不, 不, "
    # Waiting with it: "vänta med återbetalningen", "warte mit der Erstattung".
    "wait with, wait on, vänta med, warte mit, warten mit, wacht met, wachten met, aspetta con, "
    "aspetta a, espera con, espera para, espere com, espera com, czekaj z, poczekaj z, vent med, "
)
# Words that may stand between a negation and the refund it takes back.
NEGATION_GAP = _words(
    """it the a an any her him them yet this that just issue propose make give process start do
    want wants need needs ask asking expect expecting get getting
    for anything now right away please full partial such le la lo el les un una todavia aun es
    das den die ihr ihm noch bitte jetzt lui encore de une het haar hem nog o ela ele ainda
    jej mu jeszcze henne honom an annu делайте делай оформляйте делать faca facas fazer faz
    haga hagas hacer mach mache machen fais faites faire fare fate fai doe doen gor gora zrob
    rob robic"""
)
# Words right after a refund that take it back ("erstatte es noch nicht", "返金しないで").
NEGATION_AFTER = Lexicon(
    "nicht, noch nicht, niet, nog niet, inte, ikke, pas, しないで, しない, しなくて, はまだ, "
    "は不要, 하지 마, 하지 않, 은 아직, 는 아직, 보류, 不用, 先不, 暂时不, 手続きしないで, "
    "処理しないで, 進めないで, 진행하지 마, 진행하지 않, 처리하지 마, 처리하지 않, 하지 말, "
    "진행 안, 처리 안, 先别, 别, "
    # Later, not now: "refund later", "erstatten wir später", "返金する前に".
    "later, not now, später, más tarde, plus tard, più tardi, mais tarde, później, senare, "
    "senere, する前, の前に, 前に, 之前, 以后再, 하기 전, 전에, 나중에, "
)
# A refund that comes after something else: "check the photos before refunding".
BEFORE = Lexicon(
    "before, avant de, avant d', avant que, antes de, antes que, bevor, ehe, prima di, "
    "prima che, voordat, alvorens, zanim, innan, inden, før, "
)
# Telling to wait: a clause that opens with one ("wait until she sends photos before refunding",
# "Attends avant de rembourser", "Warte mit der Erstattung") holds its refund back.
WAIT = Lexicon(
    "wait, hold, hold off, hang on, pause, espera, espere, esperemos, aguarda, aguarde, "
    "attends, attendez, attendons, warte, wartet, warten sie, warten wir, abwarten, aspetta, "
    "aspettate, aspettiamo, attendi, wacht, wachten we, laten we wachten, poczekaj, poczekajmy, "
    "czekaj, vänta, vent, "
    # We wait: "let's wait for the photos before we refund", "On attend les photos".
    "let's wait, let us wait, we wait, we'll wait, we will wait, we are waiting, we're waiting, "
    "i'll wait, i will wait, we should wait, on attend, nous attendons, on va attendre, "
    "esperamos, vamos a esperar, wir warten, ich warte, aspettiamo, attendiamo, wij wachten, "
    "we wachten, vamos esperar, czekamy, poczekamy, vi väntar, väntar vi, "
)
# Waiting said anywhere beside the refund (Japanese, Korean, Chinese put it after it:
# "返金はちょっと待ってください", "환불은 잠깐 기다려 주세요", "退款先等等"), or the refund
# put on hold.
WAIT_BESIDE = Lexicon(
    "待って, 待ちましょう, 保留, 기다려, 기다립시다, 기다리세요, 보류, 잠깐만, 等等, 先等, 等一下, "
    "稍等, 缓一缓, 缓一下, 暂缓, on hold, en espera, in attesa, en attente, in de wacht, "
    "auf eis, zurückstellen, em espera, wstrzymaj*, "
)
# Wanting or asking for something: the customer's wish, unless the one who wants is the agent.
WISH = Lexicon(
    "want, wants, wanted, would like, she'd like, he'd like, they'd like, asks for, asked for, "
    "asking for, requested, requests, requesting, demands, demanded, expects, hopes, hoping, "
    "insists, wishes, is asking, quiere, quiso, pide, pidió, pidiendo, solicita, solicitó, "
    "desea, exige, reclama, möchte, wünscht, verlangt, fordert, hätte gern, bittet um, "
    "besteht auf, veut, voudrait, demande, souhaite, réclame, vuole, vorrebbe, chiede, pretende, "
    "desidera, wil, wilde, vraagt, eist, zou graag, quer, queria, gostaria, pede, pediu, chce, "
    "chciała*, prosi, żąda, vill, ville, ber om, kräver, önskar, vil ha, ønsker, krever, хочет, "
    "просит, требует, 想, 要求, 希望, ほしい, 欲しい, 求め, 원하, 원합, 원해, 요청, 요구, "
    # Passing on what someone said: "she says refund or she'll complain".
    "says, said, writes, wrote, claims, told me, dice, dijo, sagt, sagte, dit, zegt, diz, disse, "
    "mówi, säger, sier, siger, 说, 言って, 말했, "
)
# The agent speaking of themselves: "I want you to refund her" is a request, not a relay.
FIRST_PERSON = Lexicon(
    "i, we, i'd, we'd, i'm, we're, let's, you, to, ich, wir, yo, nosotros, je, nous, io, noi, "
    "ik, wij, eu, nós, ja, my, jag, vi, jeg, я, мы, 我, 我们, "
)
# Words that may stand between "can you" and the refund it asks for.
_REQUEST_GAP = _words(
    """please pls just kindly quickly issue process do make give start raise put a an the full
    partial her him them this that us me bitte por favor"""
)
_ADVERBS = _words("also really just still now only too definitely actually")
# The agent letting a refund go ahead that someone else asked for.
GO_AHEAD = Lexicon(
    "go ahead, proceed, do it, please do, go for it, make it so, approved by me, you may, "
    "process it, handle it, fine by me, ok to refund, okay to refund, adelante, hazlo, procede, "
    "dale, mach das, mach es, leg los, nur zu, vas-y, allez-y, fais-le, procédez, procedi, "
    "vai pure, fallo, ga je gang, doe maar, ga door, pode fazer, vai em frente, prossiga, "
    "śmiało, zrób to, kör på, gör det, varsågod, 去办, 照办, 办理吧, 处理吧, 就退吧, 退吧, "
    "進めて, 진행해, 처리해, 退了吧, 退掉吧, "
)
# Verbs that ask to read, show or tell: a refund after them is what to read about.
READING = Lexicon(
    "export, show, list, check, look, find, tell, explain, quote, summari*, draft, print, read, "
    "see, verify, describe, muestra, comprueba, zeig*, prüf*, montre, vérifie, mostra, "
    "controlla, toon, controleer, mostre, verifique, pokaż, sprawdź, visa, kolla, 查, 查看, "
    "告诉, 显示, 確認して, 教えて, 알려, 확인해, "
)
# An indirect question before a refund: "she asks whether a gift card can be refunded".
WHETHER = Lexicon("whether, ob, 是否, かどうか, 지 여부, ")
# Thinking aloud, not asking: "wondering if we should refund her", "maybe a refund?".
HESITATION = Lexicon(
    "wonder*, not sure, unsure, do you think, should we, should i, would it be, is it ok, "
    "is it okay, any chance, maybe, perhaps, might, thinking about, considering, tal vez, "
    "quizás, quizá, vielleicht, peut-être, forse, misschien, talvez, może, kanske, kanskje, "
    "måske, 也许, 或许, かもしれ, 아마, "
)
# A question the policy answers: can a refund, or a return, be had ("can she still return the
# jacket?", "which could still get a refund").
MAY_REFUND = Lexicon(
    "can ~ return*, could ~ return*, can ~ send ~ back, which could, could still, can still, "
    "whether ~ return*, puede ~ devolver, kann ~ zurückgeben, peut ~ retourner, "
    "può ~ restituire, kan ~ retourneren, pode ~ devolver, 可以退, 能退, 返品できます, "
    "반품 가능, "
)
# A question that asks someone to do it: "could you refund the mug?".
POLITE_REQUEST = Lexicon(
    "can you, could you, would you, will you, can u, could u, would you mind, can we ~ her, "
    "can we ~ him, can we ~ them, can we ~ the customer, could we ~ her, could we ~ him, "
    "could we ~ them, puedes, podrías, puede usted, podría usted, kannst du, können sie, "
    "könntest du, könnten sie, würdest du, peux-tu, pouvez-vous, pourrais-tu, pourriez-vous, "
    "tu peux, vous pouvez, puoi, potresti, kun je, kunt u, kan je, zou je, zou u, wil je, podes, "
    "poderia, podia, consegue, możesz, mógłbyś, mogłabyś, możecie, kan du, kan ni, skulle du, "
    "能不能, 能否, 可以帮, 麻烦, できますか, いただけますか, もらえますか, くれますか, 줄 수 있, "
    "주실 수, "
)
# Words that open a question.
QUESTION_WORD = Lexicon(
    "what, what's, how, who, when, where, where's, which, why, qué, cómo, cuándo, cuánto*, "
    "dónde, por qué, se puede, wie, wann, wo, warum, wieviel, quoi, comment, quand, combien, où, "
    "pourquoi, est-ce, peut-on, cosa, quanto, dove, perché, si può, wat, hoe, wanneer, waar, "
    "waarom, o que, onde, por que, quantos, czy, co, jak, kiedy, ile, gdzie, vad, hur, när, "
    "varför, hvad, hvordan, hvor, "
)
# Verbs that open a yes-or-no question when a subject follows: "is the refund done".
QUESTION_VERB = Lexicon(
    "is, are, was, were, has, have, had, did, does, can, could, may, might, should, would, will, "
    "am, ist, sind, hat, kann, darf, gibt es, est, heeft, kan, är, har, "
)
QUESTION_SUBJECT = Lexicon(
    "a, an, i, you, we, they, she, he, it, there, this, that, the, anything, anyone, any, her, "
    "his, sie, er, es, die, der, das, ze, hij, het, hon, han, det, elle, il, "
)
# Question words that also mean "as" or "like" ("Como gesto de boa vontade, ...", "Wie
# besprochen, ..."): a question only with a question mark.
_AS_OR_HOW = frozenset({"como", "wie", "come", "comme", "hoe", "jak"})
_QUESTION_END = re.compile(r"(?:[?]|吗|呢|か|까|나요)\W*$")
# A condition that waits for something to happen, anywhere in the clause of the refund:
# "refund her once she sends it back".
CONDITION = Lexicon(
    "if, once, as soon as, unless, until, only after, only when, only if, when she, when he, "
    "when they, when we, after she, after he, after they, after we, si, una vez, en cuanto, "
    "sobald, falls, dès que, une fois, appena, una volta, zodra, assim que, depois que, jeśli, "
    "jeżeli, jak tylko, ifall, så snart, hvis, 如果, 一旦, 要是, 等她, 等他, 等客户, "
    # Until something happens.
    "tills, till dess, bis sie, bis er, bis wir, bis die, bis der, bis das, hasta que, "
    "jusqu'à ce que, jusqu'à ce qu, finché, fino a quando, totdat, tot ze, tot hij, até que, "
    "dopóki, aż, 直到, erst wenn, erst nachdem, erst sobald, nur wenn, solo cuando, solo si, "
    "seulement quand, seulement si, pas avant, not before, nicht vor, solo quando, solo dopo, "
    "alleen als, pas als, pas wanneer, als ze, als hij, als zij, als de klant, só quando, "
    "só depois, até ela, até ele, até a cliente, até o cliente, dopiero gdy, dopiero po, "
    "först när, först efter, bara om, "
)
# A condition closed by its last word, before the refund it holds back (Japanese, Korean,
# Chinese): "返送したら、返金して", "보내면 환불해", "收到再退".
CONDITION_CLOSING = Lexicon(
    "たら, ましたら, れば, 次第, 後で, 後に, あとで, てから, でから, 場合は, までは, 하면, 되면, "
    "오면, 보내면, 주면, "
    "받으면, 으면, 후에, 다음에, 之后再, 以后再, 后再, 了再, 再退, "
)
# Words that make a condition only when they open the sentence: "when she sends photos, ...".
CONDITION_OPENING = Lexicon(
    "when, after, cuando, wenn, nachdem, quand, quando, wanneer, nadat, gdy, kiedy, när, 等, "
    # Italian and Portuguese "se" (if), not Spanish "se rompió": before who or what.
    "se il, se lo, se la, se lei, se lui, se i, se le, se gli, se a, se o, se os, se as, "
    "se ela, se ele, se elas, se eles, se você, se voce, "
)
# A condition the policy answers ("if it's allowed, refund it"): checked by proposing.
POLICY_CONDITION = Lexicon(
    "allow*, eligible, possible, ok, okay, fine, permitted, within, policy, limit*, window, "
    "rule*, can, may, permitid*, posible, política, puede, erlaubt, möglich, zulässig, "
    "richtlinie, darf, autorisé*, permis, politique, peut, consentit*, possibile, permess*, "
    "politica, toegestaan, mogelijk, beleid, possível, pode, dozwolon*, możliwe, można, "
    "tillåtet, möjligt, 允许, 可以, 符合, 政策, 规定, 可能, 가능, 問題な, 문제없, 문제가 없, "
)


def asks_for_refund(text: str) -> bool:
    """Whether the words ask for a refund now: a clause that names one as something to do
    ("refund the mug", "full refund pls", "reembolso completo", "全额退款"), not as a topic, a
    state, a question, someone else's wish or something that waits for a condition; or a wish
    of the customer's that the words let go ahead ("Maria wants a refund, go ahead")."""
    prepared = _without_quotes(prepare(text))
    relayed = False
    for sentence in sentences(prepared):
        if not (_names_refund(sentence) or MONEY.pattern.search(sentence)):
            continue
        if _opens_with_condition(sentence) or _closes_condition(sentence):
            continue
        if WAIT_BESIDE.pattern.search(sentence) or any(
            WAIT.starts(clause) for clause in clauses(sentence)
        ):
            continue
        polite = _asks_politely(sentence)
        if is_question(sentence) and not polite:
            continue
        parts = clauses(sentence)
        for index, clause in enumerate(parts):
            if _waits_for_something(clause) or _negated(clause) or _only_reads(clause):
                continue
            if any(_opens_with_condition(later) for later in parts[index + 1 :]):
                continue  # "erst erstatten, wenn die Tasse zurück ist"
            if _relays_wish(clause) and not polite:
                relayed = True
            elif _names_refund(clause) and not _refund_state(clause, polite=polite):
                return True
    return relayed and bool(GO_AHEAD.pattern.search(prepared))


# Someone else's words inside the agent's: quoted, or after "she wrote:".
_QUOTED = re.compile(
    r"\"[^\"]*\"|“[^”]*”|„[^“”]*[“”]|«[^»]*»|「[^」]*」|『[^』]*』"
    r"|\b(?:wrote|writes|says|said|e-?mail|message|schreibt|écrit|scrive|schrijft|escreveu"
    r"|pisze|skriver|dice)\s*:[^\n]*|(?:写道|说)\s*[:：][^\n]*"
)


def _without_quotes(prepared: str) -> str:
    """The agent's own words: a request quoted from the customer is not the agent's."""
    return _QUOTED.sub(" ", prepared)


def relays_wish(text: str) -> bool:
    """Whether the words pass on someone else's wish for a refund ("Li also wants a refund")."""
    return any(
        _relays_wish(clause) and not _negated(clause)
        for sentence in sentences(prepare(text))
        for clause in clauses(sentence)
    )


def mentions_refunds(text: str) -> bool:
    """Whether the words speak of refunds or money going back at all."""
    return bool(REFUND.search(text))


def is_question(sentence: str) -> bool:
    """Whether a sentence asks something: a question mark (吗, か, 까), a question word first,
    or a verb first with its subject after it ("is the refund done")."""
    prepared = prepare(sentence).strip()
    if _QUESTION_END.search(prepared):
        return True
    opening = QUESTION_WORD.starts(prepared)
    if opening and opening.group(0).strip() not in _AS_OR_HOW:
        return True
    verb = QUESTION_VERB.starts(prepared)
    if verb is None:
        return False
    rest = prepared.lstrip(" ¿¡\"'(*-")[verb.end() :]
    return bool(QUESTION_SUBJECT.starts(rest))


def _names_refund(text: str) -> bool:
    return bool(REFUND.pattern.search(REFUND_TOPIC.pattern.sub(" ", text)))


def _opens_with_condition(sentence: str) -> bool:
    opening = CONDITION.starts(sentence) or CONDITION_OPENING.starts(sentence)
    if opening is None:
        return False
    condition = re.split(r"[,;，]", sentence.lstrip(" ¿¡\"'(*-")[opening.end() :], maxsplit=1)[0]
    return bool(condition.strip()) and not POLICY_CONDITION.pattern.search(condition)


def _closes_condition(sentence: str) -> bool:
    """A condition that ends before the refund it holds back ("返送したら、全額返金して")."""
    for closing in CONDITION_CLOSING.pattern.finditer(sentence):
        before = sentence[: closing.start()]
        if before.strip() in ("でき", "出来"):
            continue  # "できれば" (if it can be done): the policy's to answer
        if (
            REFUND.pattern.search(sentence, closing.start())
            and before.strip()
            and not POLICY_CONDITION.pattern.search(before)
        ):
            return True
    return False


def _waits_for_something(clause: str) -> bool:
    """A refund that waits for something to happen ("refund her once she returns it"); a
    condition the policy answers ("if it's allowed") does not wait."""
    for match in CONDITION.pattern.finditer(clause):
        condition = clause[match.end() :]
        if condition.strip() and not POLICY_CONDITION.pattern.search(condition):
            return True
    return False


def _asks_politely(sentence: str) -> bool:
    """ "can you refund ...?": a request put as a question, the refund close after the ask."""
    for ask in POLITE_REQUEST.pattern.finditer(sentence):
        refund = REFUND.pattern.search(sentence, ask.end())
        between = sentence[ask.end() : refund.start()].split() if refund else ["-"]
        if len(between) <= 4 and all(word in _REQUEST_GAP for word in between):
            return True
    return False


def _negated(clause: str) -> bool:
    for refund in REFUND.pattern.finditer(clause):
        before = clause[: refund.start()].split()
        while before and before[-1] in NEGATION_GAP and len(before) > 1:
            before.pop()
        if before and NEGATION.ends(" ".join(before[-3:])):
            return True
        if BEFORE.pattern.search(" ".join(clause[: refund.start()].split()[-4:])):
            return True  # "check the photos before refunding": not now
        after = clause[refund.end() :].split()
        while after and after[0] in NEGATION_GAP:
            after.pop(0)
        if NEGATION_AFTER.starts(" ".join(after)) or NEGATION_AFTER.starts(clause[refund.end() :]):
            return True
    return False


def _refund_state(clause: str, *, polite: bool = False) -> bool:
    """A refund the clause speaks of as done, under way or someone's, not as one to make."""
    if GO_AHEAD.pattern.search(clause) or _directs(clause):
        return False
    if REFUND_STATE.pattern.search(clause):
        return True
    return not polite and bool(REFUND_SPOKEN_OF.pattern.search(clause))


def _directs(clause: str) -> bool:
    """A clause that opens with what to do ("process her refund"), not with who did what."""
    return bool(DIRECTIVE.starts(clause)) and not (
        REFUND_STATE.starts(clause) or REFUND_SPOKEN_OF.starts(clause)
    )


def _only_reads(clause: str) -> bool:
    """A clause that asks to read or tell, the refund only its object ("export the refunds
    table", "tell me whether she can get a refund")."""
    refund = REFUND.pattern.search(clause)
    if refund is None:
        return False
    before = clause[: refund.start()]
    return bool(
        READING.starts(clause)
        or WHETHER.pattern.search(before)
        or HESITATION.pattern.search(before)
    )


# Good will is no one's wish: "als gebaar van goede wil", "de boa vontade".
GOODWILL = Lexicon(
    "good will, goede wil, goeie wil, boa vontade, buena voluntad, bonne volonté, "
    "buona volontà, dobrej woli, guten willens, god vilje, "
)


def _relays_wish(clause: str) -> bool:
    """Someone other than the agent wants a refund or money: "she wants a refund", "客户要求退
    款", "返金を希望しています"."""
    clause = GOODWILL.pattern.sub(" ", clause)
    wanted = REFUND.pattern.search(clause) or MONEY.pattern.search(clause)
    if wanted is None:
        return False
    for wish in WISH.pattern.finditer(clause[: wanted.start()]):
        who = [word for word in clause[: wish.start()].split() if word not in _ADVERBS]
        if not (who and FIRST_PERSON.pattern.fullmatch(who[-1])):
            return True
    # Chinese, Japanese and Korean may put the wish after what is wished for.
    after = clause[wanted.end() :][:8]
    unspaced = _UNSPACED.search(wanted.group(0))
    return bool(unspaced and WISH.pattern.search(after)) and not FIRST_PERSON.pattern.search(
        clause[: wanted.start()]
    )


# --- Amounts ----------------------------------------------------------------------------------

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


# --- Reasons, in the policy's vocabulary ----------------------------------------------------------

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


# --- Products -------------------------------------------------------------------------------------


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


# --- What a request is about ------------------------------------------------------------------

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


# --- Personal data ------------------------------------------------------------------------------

# Words that introduce a phone number: a bare run of digits right after one of them may be a
# phone number rather than an order id (agent/pii.py masks it if it is valid for a region).
PHONE_WORDS = Lexicon(
    "phone*, telephone, tel, mobile, cell, cellphone, whatsapp, wechat, viber, telegram, sms, "
    "call, text me, reach me, ring me, dial, contact, my number, contact number, "
    "telefon*, handy*, mobil*, rufnummer, ruf mich, téléphone, tél, portable, appelez-moi, "
    "teléfono, móvil, celular, llámame, telefone, telemóvel, zap, telefono, cellulare, chiamami, "
    "telefoon, mobiel, bel me, komórk*, numer, numara*, cep, điện thoại, sđt, đt, "
    "телефон*, тел, мобильн*, звоните, позвоните, номер, هاتف, جوال, رقمي, رقم, "
    "फ़ोन, फोन, मोबाइल, नंबर, 手机, 电话, 聯絡, 联系, 微信, 号码, 電話, 携帯, 番号, 전화, 휴대폰, "
    "핸드폰, 연락처, 번호, "
)


# --- The desk's own words ------------------------------------------------------------------------

# What the desk says to itself and never to a customer.
INTERNAL_VOCABULARY = re.compile(
    r"\brf_[0-9a-z]+|\bR-\d+\b|\bversion\s*\d|\bv\d+\b|fingerprint|\b(?=[0-9a-f]*[a-f])[0-9a-f]{16,}\b"
    r"|\b(?:get_order|list_customer_orders|search_policies|get_refund_status|create_refund|"
    r"read_tool_result)\b|\b[A-Z]{2,}(?:_[A-Z]+)+\b|\b[a-z]+_[a-z_]+\b|\bbalance\b|余额"
    r"|\buntrusted\b|\bclauses?\b|\btool\s*calls?\b|\bthe assistant\b|\bsystem prompt\b"
    r"|\bpending approval\b|\breviewer\b",
    re.IGNORECASE,
)


def internal_vocabulary(text: str) -> list[str]:
    """The desk's own words in `text`, which a customer must never read."""
    return list(dict.fromkeys(match.group(0) for match in INTERNAL_VOCABULARY.finditer(text)))


def _kept_sources() -> tuple[Lexicon, ...]:
    """Lists whose words are never read as another's misspelling (nor misspellings read as
    them): question words, conditions, waits, negations."""
    return (
        QUESTION_WORD, BALANCE_QUESTION, CONDITION, CONDITION_OPENING, WAIT, NEGATION, GO_AHEAD,
        DEFERRAL, WISH, REFUND_STATE, NEGATION_AFTER, POLITE_REQUEST, READING, HESITATION,
    )  # fmt: skip


def _spelling_sources() -> tuple[Lexicon, ...]:
    """The lists whose words a misspelling is read as."""
    return (
        REFUND, NOT_RECEIVED, WRONG_ITEM, DAMAGED, FAULTY, OTHER, FULL, REMAINING, STATUS_WORDS,
        POLICY_WORDS,
    )  # fmt: skip
