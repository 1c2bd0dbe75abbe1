# ruff: noqa: RUF001 (Chinese and typographic punctuation is what these lines are written in)
"""The words of a run's record (agent/runtime/records.py), one entry per language: what the
desk says a run did, read from its tool log, in the language the support agent wrote their
request in (agent/drafts.py detect_language), English when the desk has no words for it.

No tool's name and no error code appears here: the record is a colleague's note, and the
tool-call trail and the audit keep the names. Placeholders: {order_id}, {what} (the items
in brackets, or nothing), {amount}, {currency}, {days}, {request_id}, {action}, {why},
{clauses}, {status}.
"""

DEFAULT_LANGUAGE = "en"

RECORD_WORDS: dict[str, dict] = {
    "en": {
        "heading": "From the records of this run:",
        "what": " ({items})",
        "order": "Looked up order #{order_id}{what}: {facts}.",
        "join": ", ",
        "paid": "{amount} {currency} paid",
        "status": {
            "paid": "paid, not shipped yet",
            "shipped": "shipped",
            "delivered": "delivered",
            "cancelled": "cancelled",
        },
        "delivered_days": "delivered {days} days ago",
        "left": "{amount} {currency} left to refund",
        "proposal": "Proposed a refund of {amount} {currency} for order #{order_id}{what} "
        "(request {request_id}): waiting for a reviewer, nothing refunded yet.",
        "refused": "Could not {action}: {why}",
        "refused_bare": "Could not {action}.",
        "policy": "Policy: {clauses}.",
        "clauses_join": "; ",
        "actions": {
            "get_order": "look up order #{order_id}",
            "get_order_unnamed": "look up the order",
            "list_customer_orders": "list the customer's orders",
            "search_policies": "search the refund policy",
            "get_refund_status": "check the refund's status",
            "create_refund": "propose the refund",
            "read_tool_result": "read the rest of a result",
            "other": "do what was asked",
        },
        "unfounded": {
            "proposed_refund": "The model said it proposed a refund; no proposal was made.",
            "looked_up_order": "The model said it looked up order #{order_id}; no such lookup "
            "was made.",
            "listed_orders": "The model said it listed the customer's orders; no listing was made.",
            "read_policy": "The model said it read the refund policy; the policy was not read.",
            "checked_refund": "The model said it checked the refund's status; no check was made.",
        },
        "since": "Since this answer: {events}.",
        "since_join": "; ",
        "changes": {
            "approved": "the refund {request_id} was approved by {actor} at {time}",
            "rejected": "the refund {request_id} was rejected by {actor} at {time}",
            "withdrawn": "the refund {request_id} was withdrawn by {actor} at {time}",
            "succeeded": "the refund {request_id} was paid out at {time}",
            "failed": "the refund {request_id} failed at {time}",
            "expired": "the refund {request_id} expired at {time}",
            "other": "the refund {request_id} is now “{status}” ({time})",
        },
        "someone": "someone",
    },
    "zh": {
        "heading": "本次运行的记录：",
        "what": "（{items}）",
        "order": "已查询订单 #{order_id}{what}：{facts}。",
        "join": "，",
        "paid": "已付 {amount} {currency}",
        "status": {
            "paid": "已付款，尚未发货",
            "shipped": "已发货",
            "delivered": "已送达",
            "cancelled": "已取消",
        },
        "delivered_days": "{days} 天前送达",
        "left": "还可退 {amount} {currency}",
        "proposal": "已提出申请：为订单 #{order_id}{what} 退 {amount} {currency}"
        "（申请 {request_id}），等待审核人批准，尚未退款。",
        "refused": "未能{action}：{why}",
        "refused_bare": "未能{action}。",
        "policy": "政策：{clauses}。",
        "clauses_join": "；",
        "actions": {
            "get_order": "查询订单 #{order_id}",
            "get_order_unnamed": "查询订单",
            "list_customer_orders": "列出客户的订单",
            "search_policies": "查阅退款政策",
            "get_refund_status": "查询退款进度",
            "create_refund": "提出退款申请",
            "read_tool_result": "读取结果的其余部分",
            "other": "完成所要求的操作",
        },
        "unfounded": {
            "proposed_refund": "模型说它提出了退款申请；实际上并未提出任何申请。",
            "looked_up_order": "模型说它查询了订单 #{order_id}；实际上并未查询。",
            "listed_orders": "模型说它列出了客户的订单；实际上并未列出。",
            "read_policy": "模型说它查阅了退款政策；实际上并未查阅。",
            "checked_refund": "模型说它查询了退款进度；实际上并未查询。",
        },
        "since": "此回答之后：{events}。",
        "since_join": "；",
        "changes": {
            "approved": "退款申请 {request_id} 已由 {actor} 于 {time} 批准",
            "rejected": "退款申请 {request_id} 已由 {actor} 于 {time} 拒绝",
            "withdrawn": "退款申请 {request_id} 已由 {actor} 于 {time} 撤回",
            "succeeded": "退款申请 {request_id} 已于 {time} 付款",
            "failed": "退款申请 {request_id} 于 {time} 失败",
            "expired": "退款申请 {request_id} 于 {time} 过期",
            "other": "退款申请 {request_id} 现在为“{status}”（{time}）",
        },
        "someone": "某人",
    },
    "es": {
        "heading": "De los registros de esta ejecución:",
        "what": " ({items})",
        "order": "Consulté el pedido #{order_id}{what}: {facts}.",
        "join": ", ",
        "paid": "{amount} {currency} pagados",
        "status": {
            "paid": "pagado, aún sin enviar",
            "shipped": "enviado",
            "delivered": "entregado",
            "cancelled": "cancelado",
        },
        "delivered_days": "entregado hace {days} días",
        "left": "quedan {amount} {currency} por reembolsar",
        "proposal": "Propuse un reembolso de {amount} {currency} para el pedido #{order_id}{what} "
        "(solicitud {request_id}): espera a un revisor, aún no se ha reembolsado nada.",
        "refused": "No se pudo {action}: {why}",
        "refused_bare": "No se pudo {action}.",
        "policy": "Política: {clauses}.",
        "clauses_join": "; ",
        "actions": {
            "get_order": "consultar el pedido #{order_id}",
            "get_order_unnamed": "consultar el pedido",
            "list_customer_orders": "listar los pedidos del cliente",
            "search_policies": "consultar la política de reembolsos",
            "get_refund_status": "consultar el estado del reembolso",
            "create_refund": "proponer el reembolso",
            "read_tool_result": "leer el resto de un resultado",
            "other": "hacer lo pedido",
        },
        "unfounded": {
            "proposed_refund": "El modelo dijo que propuso un reembolso; no se hizo ninguna "
            "propuesta.",
            "looked_up_order": "El modelo dijo que consultó el pedido #{order_id}; no se hizo "
            "esa consulta.",
            "listed_orders": "El modelo dijo que listó los pedidos del cliente; no se listaron.",
            "read_policy": "El modelo dijo que consultó la política; no se consultó.",
            "checked_refund": "El modelo dijo que consultó el estado del reembolso; no se "
            "consultó.",
        },
        "since": "Desde esta respuesta: {events}.",
        "since_join": "; ",
        "changes": {
            "approved": "{actor} aprobó el reembolso {request_id} a las {time}",
            "rejected": "{actor} rechazó el reembolso {request_id} a las {time}",
            "withdrawn": "{actor} retiró el reembolso {request_id} a las {time}",
            "succeeded": "el reembolso {request_id} se pagó a las {time}",
            "failed": "el reembolso {request_id} falló a las {time}",
            "expired": "el reembolso {request_id} caducó a las {time}",
            "other": "el reembolso {request_id} está ahora «{status}» ({time})",
        },
        "someone": "alguien",
    },
    "de": {
        "heading": "Aus den Aufzeichnungen dieses Laufs:",
        "what": " ({items})",
        "order": "Bestellung #{order_id}{what} nachgeschlagen: {facts}.",
        "join": ", ",
        "paid": "{amount} {currency} bezahlt",
        "status": {
            "paid": "bezahlt, noch nicht versandt",
            "shipped": "versandt",
            "delivered": "geliefert",
            "cancelled": "storniert",
        },
        "delivered_days": "vor {days} Tagen geliefert",
        "left": "noch {amount} {currency} erstattbar",
        "proposal": "Erstattung von {amount} {currency} für Bestellung #{order_id}{what} "
        "vorgeschlagen (Antrag {request_id}): wartet auf Prüfung, noch nichts erstattet.",
        "refused": "Nicht gelungen: {action}. {why}",
        "refused_bare": "Nicht gelungen: {action}.",
        "policy": "Richtlinie: {clauses}.",
        "clauses_join": "; ",
        "actions": {
            "get_order": "Bestellung #{order_id} nachschlagen",
            "get_order_unnamed": "die Bestellung nachschlagen",
            "list_customer_orders": "die Bestellungen des Kunden auflisten",
            "search_policies": "die Erstattungsrichtlinie lesen",
            "get_refund_status": "den Stand der Erstattung prüfen",
            "create_refund": "die Erstattung vorschlagen",
            "read_tool_result": "den Rest eines Ergebnisses lesen",
            "other": "das Verlangte tun",
        },
        "unfounded": {
            "proposed_refund": "Das Modell sagte, es habe eine Erstattung vorgeschlagen; es "
            "wurde kein Vorschlag gemacht.",
            "looked_up_order": "Das Modell sagte, es habe Bestellung #{order_id} nachgeschlagen; "
            "das ist nicht geschehen.",
            "listed_orders": "Das Modell sagte, es habe die Bestellungen aufgelistet; das ist "
            "nicht geschehen.",
            "read_policy": "Das Modell sagte, es habe die Richtlinie gelesen; das ist nicht "
            "geschehen.",
            "checked_refund": "Das Modell sagte, es habe den Stand der Erstattung geprüft; das "
            "ist nicht geschehen.",
        },
        "since": "Seit dieser Antwort: {events}.",
        "since_join": "; ",
        "changes": {
            "approved": "die Erstattung {request_id} wurde um {time} von {actor} genehmigt",
            "rejected": "die Erstattung {request_id} wurde um {time} von {actor} abgelehnt",
            "withdrawn": "die Erstattung {request_id} wurde um {time} von {actor} zurückgezogen",
            "succeeded": "die Erstattung {request_id} wurde um {time} ausgezahlt",
            "failed": "die Erstattung {request_id} ist um {time} fehlgeschlagen",
            "expired": "die Erstattung {request_id} ist um {time} verfallen",
            "other": "die Erstattung {request_id} steht jetzt auf „{status}“ ({time})",
        },
        "someone": "jemandem",
    },
    "fr": {
        "heading": "D'après les enregistrements de cette exécution :",
        "what": " ({items})",
        "order": "Commande #{order_id}{what} consultée : {facts}.",
        "join": ", ",
        "paid": "{amount} {currency} payés",
        "status": {
            "paid": "payée, pas encore expédiée",
            "shipped": "expédiée",
            "delivered": "livrée",
            "cancelled": "annulée",
        },
        "delivered_days": "livrée il y a {days} jours",
        "left": "encore {amount} {currency} remboursables",
        "proposal": "Remboursement de {amount} {currency} proposé pour la commande "
        "#{order_id}{what} (demande {request_id}) : en attente d'un vérificateur, rien n'est "
        "encore remboursé.",
        "refused": "Impossible de {action} : {why}",
        "refused_bare": "Impossible de {action}.",
        "policy": "Politique : {clauses}.",
        "clauses_join": " ; ",
        "actions": {
            "get_order": "consulter la commande #{order_id}",
            "get_order_unnamed": "consulter la commande",
            "list_customer_orders": "lister les commandes du client",
            "search_policies": "consulter la politique de remboursement",
            "get_refund_status": "vérifier l'état du remboursement",
            "create_refund": "proposer le remboursement",
            "read_tool_result": "lire la suite d'un résultat",
            "other": "faire ce qui était demandé",
        },
        "unfounded": {
            "proposed_refund": "Le modèle a dit avoir proposé un remboursement ; aucune "
            "proposition n'a été faite.",
            "looked_up_order": "Le modèle a dit avoir consulté la commande #{order_id} ; ce "
            "n'est pas le cas.",
            "listed_orders": "Le modèle a dit avoir listé les commandes du client ; ce n'est "
            "pas le cas.",
            "read_policy": "Le modèle a dit avoir consulté la politique ; ce n'est pas le cas.",
            "checked_refund": "Le modèle a dit avoir vérifié l'état du remboursement ; ce n'est "
            "pas le cas.",
        },
        "since": "Depuis cette réponse : {events}.",
        "since_join": " ; ",
        "changes": {
            "approved": "le remboursement {request_id} a été approuvé par {actor} à {time}",
            "rejected": "le remboursement {request_id} a été refusé par {actor} à {time}",
            "withdrawn": "le remboursement {request_id} a été retiré par {actor} à {time}",
            "succeeded": "le remboursement {request_id} a été versé à {time}",
            "failed": "le remboursement {request_id} a échoué à {time}",
            "expired": "le remboursement {request_id} a expiré à {time}",
            "other": "le remboursement {request_id} est maintenant « {status} » ({time})",
        },
        "someone": "quelqu'un",
    },
}


def words_for(language: str) -> dict:
    """The record's words in `language`, English when the desk has none for it."""
    return RECORD_WORDS.get(language) or RECORD_WORDS[DEFAULT_LANGUAGE]
