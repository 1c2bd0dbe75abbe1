"""The one claim check (DESIGN §13, §18): what a text tells the customer about their refunds,
judged against the refunds that exist. It reads the assistant's answers, the customer drafts
and the replies people send.

A claim is a statement that money was refunded, paid back, processed, issued, sent or completed
(`refunded`), is on its way (`on_its_way`), that a refund was approved (`approved`) or, read by
a model only, asked for (`requested`). Three readers find them:

* **The model** (agent/claim_reading.py), when one is configured: it reads the text's meaning,
  in any language, and names the order or product each claim is about.
* **The precise reader** (`statements_in`), always: per language of agent/vocabulary/claims.py, a
  completion verb with what makes it finished (an auxiliary such as "has been", "wurde", "已",
  or a phrase such as "went through"), about money. What takes a claim back is read in the
  clause it stands in: a negation before its verb ("nothing has been refunded yet"), a
  condition ("once approved, …", "… as soon as it has been approved"), a question, a habit
  ("refunds are usually processed within 5 days"). The rest of the sentence does not matter:
  "Your refund has been processed and you can expect it in 3 days" is a claim.
* **The recall-first reader** (`lexicon_statements`), only where no model answered (none is
  configured, or its call failed, ran past CLAIM_CHECK_TIMEOUT_S or returned something that is
  not a reading) and only for `check_text(..., fallback=True)`: public replies
  (`contradicted_claims`, the 409 and its "Send it anyway") and drafts a model wrote (a flag
  there means the templates are used). It reads the sentences the precise reader found no
  claim in, clause by clause, and stops exactly these: a clause with a cue of
  agent/vocabulary/claims.py's LEXICON (`done`: the money moved, processed, sent, back on your
  card, 退款搞定了, ging raus, devolvimos; `approved`; `underway`), in any of its languages, that
    - speaks of refunds or money: a money stem (refund, reimburs, 退, 款, 返金, 환불, erstatt,
      rembours, reembols, devol, estorn, terugbetal, возврат, zwrot, iade, …) or an amount
      with its currency, in the clause, else in its sentence or the sentence before ("Good
      news about your refund. It went out today."), unless the clause is about something else
      that is sent or processed (a parcel, an e-mail, a replacement) and names no money;
    - and is not taken back: no hedge word in the clause (a negation, a condition, a future or
      a modal, a habit, "pending"), no condition in the sentence's first clause ("Once
      approved, …"), not a question; for `done` and `underway`, no word of a request or a
      review in the clause ("your refund request has been sent to the team").
  The customer's own figures (what they paid, what was proposed: "your 129 is back") are
  money too, with or without a currency. A text in which no reader found a claim is read once
  more, sentence by sentence: one that speaks of the customer's refund or money with no cue
  and with nothing that takes a claim back (no hedge, request or review, document or goods,
  opening condition, question) is read as the weakest claim, that the refund was approved
  ("Regarding your 129.00 CNY refund for the mug: all good on our side.").
  Such a clause claims what its strongest cue says (done > underway > approved) and is judged
  as the others are: a reply that says money moved is asked to confirm unless every refund it
  is judged against succeeded; one that says a refund was approved or is on its way, unless
  every one is approved or further on; any such reply while the customer has no refund.
  Assistant answers (internal notes, flagged, never blocked) and the desk's template drafts
  are not read by it: an answer's reply to the customer is, when it is sent.

Each claim is judged per order: the order it names (by its id, or by the name of something the
customer bought, matched loosely enough for a typo: "headphnes"), or, naming none, every order
with a request on the ticket (on the customer's other tickets when this one has none); of each
order the latest request that was not withdrawn or expired counts. A claim about an order or a
product the customer does not have is false (`"actual": "not_ordered"`), never judged against
another order's refund. An amount in the claim narrows it to the requests of that amount. A
claim is true only if every request it is judged against has a status that makes it so; a
claim with no request behind it is false.

Where each part lives: text.py (sentences, questions, order ids, a found claim), precise.py
(the precise reader), recall.py (the recall-first reader), shop.py (the customer's orders and
requests, and how a claim names one), judging.py (each claim judged; check_text),
verdicts.py (what a run's answer and a public reply are told). The words of each language
are data in agent/vocabulary/claims.py.
"""

from agent.answer_check.judging import ASK, Claim, Reading, TextCheck, check_text, read_for_check
from agent.answer_check.precise import claims_in, statements_in
from agent.answer_check.recall import lexicon_statements
from agent.answer_check.text import ORDER_ID, SENTENCE_END, Statement
from agent.answer_check.verdicts import AnswerCheck, check_answer, contradicted_claims

__all__ = [
    "ASK",
    "ORDER_ID",
    "SENTENCE_END",
    "AnswerCheck",
    "Claim",
    "Reading",
    "Statement",
    "TextCheck",
    "check_answer",
    "check_text",
    "claims_in",
    "contradicted_claims",
    "lexicon_statements",
    "read_for_check",
    "statements_in",
]
