# Over 400 lines: data, mostly: the lexicons of asking for a refund, in every language the
# desk reads, beside the few rules that weigh them against each other.
"""Whether words ask for a refund, relay a wish for one, or only speak of refunds."""

import re

from agent.vocabulary.reading import _UNSPACED, Lexicon, _words, clauses, prepare, sentences

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
