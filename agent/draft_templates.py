# ruff: noqa: RUF001 (Chinese and typographic punctuation is what these texts are written in)
"""The words of the customer drafts (agent/drafts.py), one entry per language. Adding a
language is adding an entry (and its claim words in agent/vocabulary/claims.py, so the claim
check reads what the drafts say, and the words it is told by in agent/vocabulary/languages.py).

Placeholders: {name} the customer's name, {amount} the refund with its currency, {item} what
was bought, {order_id} the order's number. `refund` has one
paragraph per status a refund can be in; a status not named falls back to "pending_approval".
"rejected_with_note" is for a rejection whose reviewer wrote why: the note may say "not yet"
("wait two days") rather than "no", and a template cannot read which, so it promises neither.
Every paragraph says the refund's state only as it is: a template that claims more than its
status fails tests/agent/test_drafts.py.
"""

TEMPLATES: dict[str, dict] = {
    "en": {
        "name": "English",
        "greeting": "Dear {name},",
        "thanks": "Thank you for your message.",
        "none": "We are looking into it and will get back to you shortly.",
        "none_for_order": "We are looking into your {item} (order {order_id}) and will get back "
        "to you shortly.",
        "refund": {
            "succeeded": "We have refunded {amount} for your {item} (order {order_id}). "
            "Depending on your bank, it can take a few business days to show on your statement.",
            "pending_approval": "We have asked for a refund of {amount} for your {item} "
            "(order {order_id}). It is being reviewed now, and we will let you know as soon as "
            "it has been refunded.",
            "approved": "Your refund of {amount} for your {item} (order {order_id}) has been "
            "approved and is being paid out. We will let you know as soon as it has been "
            "completed.",
            "outcome_unknown": "Your refund of {amount} for your {item} (order {order_id}) has "
            "been approved. We are confirming the payment with our payment provider and will "
            "let you know as soon as it has been completed.",
            "failed": "We were unable to complete the refund of {amount} for your {item} "
            "(order {order_id}). We are looking into it and will get back to you shortly.",
            "rejected": "We are sorry, but we are unable to offer a refund for your {item} "
            "(order {order_id}). If you have any questions, just reply to this email.",
            "rejected_with_note": "Your refund request for your {item} (order {order_id}) "
            "cannot go ahead as it stands. We will get back to you shortly about the next "
            "steps.",
        },
        "closing": "Kind regards,",
        "currency": {},
    },
    "zh": {
        "name": "Chinese (Simplified)",
        "greeting": "{name}，您好！",
        "thanks": "感谢您联系我们。",
        "none": "我们正在处理您的问题，会尽快给您答复。",
        "none_for_order": "我们正在核实您的{item}（订单 {order_id}），会尽快给您答复。",
        "refund": {
            "succeeded": "我们已为您退款 {amount}（{item}，订单 {order_id}）。"
            "根据银行的处理时间，款项可能需要几个工作日才会显示在您的账户中。",
            "pending_approval": "我们已为您的{item}（订单 {order_id}）提交了 {amount} 的退款申请，"
            "目前正在审核中。退款完成后我们会第一时间通知您。",
            "approved": "您的{item}（订单 {order_id}）的 {amount} 退款申请已获批准，"
            "正在为您办理退款。退款完成后我们会通知您。",
            "outcome_unknown": "您的{item}（订单 {order_id}）的 {amount} 退款申请已获批准。"
            "我们正在与支付机构核实付款情况，退款完成后会通知您。",
            "failed": "很抱歉，您的{item}（订单 {order_id}）的 {amount} 退款未能完成。"
            "我们正在处理，会尽快给您答复。",
            "rejected": "很抱歉，您的{item}（订单 {order_id}）无法办理退款。"
            "如有任何疑问，请直接回复此邮件。",
            "rejected_with_note": "您的{item}（订单 {order_id}）的退款申请目前还不能办理。"
            "我们会尽快与您联系，告知后续安排。",
        },
        "closing": "祝好！",
        "currency": {"CNY": "元"},
    },
    "de": {
        "name": "German",
        "greeting": "Guten Tag {name},",
        "thanks": "vielen Dank für Ihre Nachricht.",
        "none": "Wir kümmern uns darum und melden uns in Kürze bei Ihnen.",
        "none_for_order": "Wir prüfen Ihre Bestellung {order_id} ({item}) und melden uns in "
        "Kürze bei Ihnen.",
        "refund": {
            "succeeded": "Wir haben Ihnen {amount} für Ihre Bestellung {order_id} ({item}) "
            "erstattet. Je nach Bank kann es einige Werktage dauern, bis der Betrag auf Ihrem "
            "Konto erscheint.",
            "pending_approval": "Wir haben eine Erstattung von {amount} für Ihre Bestellung "
            "{order_id} ({item}) beantragt. Sie wird gerade geprüft; wir melden uns, sobald "
            "der Betrag erstattet ist.",
            "approved": "Ihre Erstattung von {amount} für Ihre Bestellung {order_id} ({item}) "
            "wurde genehmigt und ist unterwegs. Wir melden uns, sobald sie abgeschlossen ist.",
            "outcome_unknown": "Ihre Erstattung von {amount} für Ihre Bestellung {order_id} "
            "({item}) wurde genehmigt. Wir klären die Zahlung gerade mit unserem "
            "Zahlungsdienstleister und melden uns, sobald sie abgeschlossen ist.",
            "failed": "Leider konnten wir die Erstattung von {amount} für Ihre Bestellung "
            "{order_id} ({item}) nicht abschließen. Wir kümmern uns darum und melden uns in "
            "Kürze.",
            "rejected": "Es tut uns leid, aber für Ihre Bestellung {order_id} ({item}) können "
            "wir keine Erstattung anbieten. Bei Fragen antworten Sie einfach auf diese E-Mail.",
            "rejected_with_note": "Ihr Erstattungsantrag für Ihre Bestellung {order_id} "
            "({item}) kann so noch nicht bearbeitet werden. Wir melden uns in Kürze mit den "
            "nächsten Schritten.",
        },
        "closing": "Mit freundlichen Grüßen",
        "currency": {},
    },
    "fr": {
        "name": "French",
        "greeting": "Bonjour {name},",
        "thanks": "merci pour votre message.",
        "none": "Nous nous en occupons et revenons vers vous très vite.",
        "none_for_order": "Nous vérifions votre commande {order_id} ({item}) et revenons vers "
        "vous très vite.",
        "refund": {
            "succeeded": "Nous vous avons remboursé {amount} pour votre commande {order_id} "
            "({item}). Selon votre banque, le montant peut mettre quelques jours ouvrés à "
            "apparaître sur votre compte.",
            "pending_approval": "Nous avons demandé un remboursement de {amount} pour votre "
            "commande {order_id} ({item}). La demande est en cours d'examen ; nous vous "
            "préviendrons dès que le remboursement aura été effectué.",
            "approved": "Votre remboursement de {amount} pour votre commande {order_id} "
            "({item}) a été approuvé et est en route. Nous vous préviendrons dès qu'il sera "
            "terminé.",
            "outcome_unknown": "Votre remboursement de {amount} pour votre commande {order_id} "
            "({item}) a été approuvé. Nous vérifions le paiement auprès de notre prestataire et "
            "vous préviendrons dès qu'il sera terminé.",
            "failed": "Nous n'avons malheureusement pas pu finaliser le remboursement de "
            "{amount} pour votre commande {order_id} ({item}). Nous nous en occupons et "
            "revenons vers vous très vite.",
            "rejected": "Nous sommes désolés, mais nous ne pouvons pas proposer de "
            "remboursement pour votre commande {order_id} ({item}). Pour toute question, "
            "répondez simplement à cet e-mail.",
            "rejected_with_note": "Votre demande de remboursement pour votre commande "
            "{order_id} ({item}) ne peut pas aboutir en l'état. Nous revenons vers vous très "
            "vite pour la suite.",
        },
        "closing": "Cordialement,",
        "currency": {},
    },
    "es": {
        "name": "Spanish",
        "greeting": "Hola, {name}:",
        "thanks": "Gracias por su mensaje.",
        "none": "Lo estamos revisando y le responderemos en breve.",
        "none_for_order": "Estamos revisando su pedido {order_id} ({item}) y le responderemos "
        "en breve.",
        "refund": {
            "succeeded": "Le hemos reembolsado {amount} por su pedido {order_id} ({item}). "
            "Según su banco, puede tardar unos días hábiles en aparecer en su cuenta.",
            "pending_approval": "Hemos solicitado un reembolso de {amount} por su pedido "
            "{order_id} ({item}). Se está revisando ahora y le avisaremos en cuanto se haya "
            "reembolsado.",
            "approved": "Su reembolso de {amount} por su pedido {order_id} ({item}) ha sido "
            "aprobado y está en camino. Le avisaremos en cuanto se haya completado.",
            "outcome_unknown": "Su reembolso de {amount} por su pedido {order_id} ({item}) ha "
            "sido aprobado. Estamos confirmando el pago con nuestro proveedor y le avisaremos "
            "en cuanto se haya completado.",
            "failed": "Lamentablemente no pudimos completar el reembolso de {amount} por su "
            "pedido {order_id} ({item}). Lo estamos revisando y le responderemos en breve.",
            "rejected": "Lo sentimos, pero no podemos ofrecer un reembolso por su pedido "
            "{order_id} ({item}). Si tiene alguna pregunta, responda a este correo.",
            "rejected_with_note": "Su solicitud de reembolso del pedido {order_id} ({item}) "
            "no puede seguir adelante tal como está. Le escribiremos en breve con los "
            "próximos pasos.",
        },
        "closing": "Atentamente,",
        "currency": {},
    },
}

# Statuses whose paragraph is another's: the money is moving, as after approval.
SAME_AS = {"executing": "approved", "provider_pending": "approved"}
DEFAULT_LANGUAGE = "en"
