"""Words that tell which language a customer wrote in, for the drafts (agent/drafts.py):
common words of each language the desk drafts in, and of refund mail in it. Chinese is told
by its script and needs no list. A language the drafts gain (agent/draft_templates.py) gets an
entry here."""


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


LANGUAGE_WORDS: dict[str, frozenset[str]] = {
    # English
    "en": _words(
        "the and is are my you i it was to please for of have not this with but "
        "order arrived broken refund hello hi thanks"
    ),
    # German
    "de": _words(
        "der die das und ist ich nicht mein meine bitte mit ein eine zu es sie wurde "
        "bestellung kaputt habe hallo danke geld zurück"
    ),
    # French
    "fr": _words(
        "le la les et est je mon ma ne pas vous une un avec pour commande "
        "remboursement merci bonjour cassé reçu"
    ),
    # Spanish
    "es": _words(
        "el la los las y es mi no por favor una un con para pedido reembolso gracias "
        "hola está llegó roto"
    ),
}
