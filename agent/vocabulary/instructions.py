"""The instruction detector's words (agent/untrusted.py `instruction_signals`): what text
written to steer a tool-using assistant says, feature by feature: overriding instructions,
addressing the AI, role play, authority flags and claims, tool syntax, urgency, secrecy,
exfiltration, commands, privileged actions, third parties, money moved. How much each weighs,
and how they add up to a flag, stays with the detector; here are only the words, in English
as the detector reads them.
"""

import re

OVERRIDE = re.compile(
    r"\b(?:ignore|disregard|forget|override|bypass|skip)\b[\w\s,'-]{0,30}?"
    r"\b(?:previous|prior|above|earlier|preceding|original|all|any|your|the)\b[\w\s'-]{0,20}?"
    r"\b(?:instructions?|rules|prompts?|guidelines|directions|polic(?:y|ies)|constraints)\b"
    r"|\bstrictly (?:adhere|follow|comply)\b"
    r"|\b(?:new|updated|real|actual) instructions?\s*(?::|follow|are)"
    r"|\bfollowing instructions? (?:instead|supersedes?|overrides?)",
    re.IGNORECASE,
)
ADDRESSES_AI = re.compile(
    r"\b(?:note|message|instructions?|memo|attention|reminder)\s+(?:for|to)\s+(?:the\s+)?"
    r"(?:\w+\s+)?(?:ai|assistant|model|llm|chat\s?bot|bot|gpt|copilot)\b"
    r"|\b(?:dear|hey|hello|hi)\s+(?:\w+\s+)?(?:ai|assistant|model|llm|chat\s?bot|gpt)\b"
    r"|\bsystem\s+(?:message|prompt|note|instruction|override|notice|command)s?\b"
    r"|\[\s*(?:system|admin|developer|assistant)\b|<\s*/?\s*(?:system|instructions?)\s*>"
    r"|^\s*#{2,}\s*(?:system|admin|instructions?|note)\b"
    r"|\b(?:if you are|as) an? (?:ai|language model|llm|assistant)\b"
    r"|(?:^|[.!?]\s)\s*(?:dear\s+|hey\s+|hi\s+)?(?:ai|assistant|chatbot|bot|gpt|llm)\s*[,:]",
    re.IGNORECASE | re.MULTILINE,
)
ROLE_PLAY = re.compile(
    r"\byou are now\b|\bfrom now on,? you\b|\bact as (?:an? |the )?(?:admin|administrator|"
    r"system|developer|supervisor|root|manager)\b|\bpretend (?:to be|you are)\b"
    r"|\b(?:developer|admin|god|debug|maintenance) mode\b|\bjailbreak\b",
    re.IGNORECASE,
)
AUTHORITY_FLAG = re.compile(
    r"\b(?:approved|confirmed|authori[sz]ed|verified|admin|is_admin|override|bypass|force|"
    r"skip_review|pre_?approved|sudo|role|user_id|customer_id|actor)\s*[=:]\s*"
    r"[\"']?(?:true|yes|1|admin|root|supervisor|reviewer|\d+)\b",
    re.IGNORECASE,
)
TOOL_SYNTAX = re.compile(
    # snake_case function called or named as a thing to call
    r"\b(?:call|invoke|run|execute|use|trigger)\s+(?:the\s+)?[`'\"]?[a-z]+_[a-z_]+\b"
    r"|\b[a-z]+_[a-z_]+\s*\(\s*[\w\"'{]"
    # a named tool, function or API ("using the FooTool tool", "through 'X' tool")
    r"|\b(?:using|use|via|through|with|call|invoke)\s+(?:the\s+)?[`'\"]?[A-Za-z0-9]+[`'\"]?\s+"
    r"(?:tool|function|api|plugin|endpoint)\b",
    re.IGNORECASE,
)
URGENCY = re.compile(r"\b(?:IMPORTANT|URGENT|ATTENTION|WARNING|CRITICAL)\b\s*(?:!{2,}|:)|!{3,}")
SECRECY = re.compile(
    r"\b(?:do not|don'?t|never|without)\s+(?:\w+\s+)?(?:mention|mentioning|tell|telling|"
    r"inform|informing|notify|notifying|alert|alerting|disclose|report|reporting|log|logging)"
    r"\b(?:\s+(?:this|it|that|anyone|them|the (?:agent|user|customer|reviewer|human|staff)))"
    r"|\bkeep (?:this|it) (?:secret|confidential|hidden|between us)\b"
    r"|\bwithout (?:the (?:user|agent|owner|customer)'?s? )?(?:knowledge|knowing|consent)\b",
    re.IGNORECASE,
)
AUTHORITY_CLAIM = re.compile(
    r"\bpre-?approved\b|\b(?:management|supervisor|administrator|admin|manager|security team|"
    r"ceo|owner)\s+(?:has|have)\s+(?:\w+\s+)?(?:authori[sz]ed|approved|confirmed|instructed)\b"
    r"|\b(?:authori[sz]ed|approved) by (?:the )?(?:management|supervisor|admin|administrator|"
    r"manager|security|system)\b|\bon behalf of (?:the )?(?:admin|administrator|management|"
    r"supervisor|system)\b",
    re.IGNORECASE,
)
# Gather data, then ship it somewhere: the shape of an exfiltration request.
GATHER_THEN_SEND = re.compile(
    r"\b(?:retrieve|retrive|get|fetch|list|find|search|download|access|check|collect|gather|"
    r"look up|export|read|pull)\b.{0,200}?\b(?:send|email|e-mail|forward|share|upload|post|"
    r"transmit)\b.{0,80}?\bto\b",
    re.IGNORECASE | re.DOTALL,
)
SEND_TO_ADDRESS = re.compile(
    r"\b(?:send|email|e-mail|forward|share|upload|transmit|mail)\b.{0,160}?"
    r"\b(?:to|with)\b[^.?!]{0,40}?[\w.+-]+@[\w-]+\.\w",
    re.IGNORECASE | re.DOTALL,
)

# A sentence that opens as a command or a "can you ..." request to whoever reads it.
COMMAND_VERBS = (
    "access|add|allow|apply|approve|assign|book|buy|call|cancel|change|check|clear|close|"
    "copy|create|deactivate|delete|deposit|disable|dispatch|download|email|enable|erase|"
    "execute|export|fetch|fill|find|forward|generate|get|give|grant|guide|initiate|install|"
    "invite|issue|leave|list|lock|make|mark|move|open|order|pay|play|post|process|provide|"
    "purchase|redirect|refund|remove|reset|retrieve|retrive|revoke|run|save|schedule|search|"
    "sell|send|set|share|submit|transfer|turn|unlock|update|upload|use|wipe|withdraw|write"
)
COMMAND = re.compile(
    r"^\W*(?:(?:first|then|now|next|also|finally|and)\s*,?\s+)?"
    r"(?:(?:please|kindly|pls)\s*,?\s+|(?:can|could|would|will)\s+you\s+(?:please\s+)?)?"
    rf"(?:{COMMAND_VERBS})\b",
    re.IGNORECASE,
)
POLITE_REQUEST = re.compile(
    r"^\W*(?:(?:first|then|now|next|also|finally|and)\s*,?\s+)?(?:please|kindly|pls)\b"
    r"|^\W*(?:can|could|would|will)\s+you\b",
    re.IGNORECASE,
)
# Actions on accounts, money, access, devices and data that an assistant with tools could
# take on someone's behalf. Asking the shop for a refund, a return or an exchange is not here:
# that is what customers write to a refund desk.
PRIVILEGED_ACTION = re.compile(
    r"\b(?:grant|revoke|unlock|disable|deactivate|bypass|transfer|deposit|withdraw|wire|sell|"
    r"delete|erase|wipe|leak|exfiltrate)\b"
    r"|\b(?:initiate|make|send|schedule)\s+(?:a\s+|the\s+)?(?:\w+\s+)?(?:payment|transfer|wire)\b"
    r"|\bpay\s+(?:the\s+|a\s+|this\s+)?(?:bill|invoice|payee)\b"
    r"|\b(?:move|copy|share|send|upload|export|forward|fill)\b[^.?!]{0,60}?\b(?:files?|folders?|"
    r"documents?|data|records?|password|credentials|details|information|history|list)\b"
    r"|\b(?:change|update|modify|set|edit|remove|add|create)\b[^.?!]{0,60}?\b(?:settings?|state|"
    r"records?|profile|password|credentials|permissions?|access|security|policy|data|"
    r"whitelist|blacklist|two-factor|2fa)\b"
    r"|\bgive\s+(?:\w+\s+){0,3}(?:access|permission|rights|priority|control)\b"
    # membership is access: leaving or joining a channel, group or workspace
    r"|\b(?:leave|join|exit)\s+(?:the\s+|my\s+)?\S+\s+(?:channel|group|workspace|"
    r"organi[sz]ation|server|team)\b",
    re.IGNORECASE,
)
THIRD_PARTY = re.compile(
    r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b"
    r"|\b(?:account|acct|wallet|iban|routing)\s*(?:number|no\.?|id|#)?\s*[:#]?\s*['\"]?"
    r"[A-Za-z]{0,4}[-\d]{4,}"
    r"|\bpayee\b|\bmy (?:friend|colleague|partner|associate|contact)\b|\bguest\b"
    r"|\bfor the user with\b|\bto (?:a |this |my )?(?:new|alternate|alternative|backup|"
    r"other|external|personal) (?:email|account|address|wallet)\b",
    re.IGNORECASE,
)
MONEY = re.compile(
    r"(?:[$€£¥]\s?\d[\d,]*(?:\.\d+)?|\b\d[\d,]*(?:\.\d+)?\s*(?:usd|eur|gbp|cny|rmb|btc|eth|"
    r"bitcoins?|dollars|euros|units)\b)",
    re.IGNORECASE,
)
MONEY_VERB = re.compile(
    r"\b(?:transfer|deposit|withdraw|wire|send|pay|payment|sell|buy|move)\b", re.IGNORECASE
)
