"""Words that flag: what introduces a phone number, the currencies that make a number an
amount, and the desk's own words a customer must never read."""

import re

from agent.vocabulary.reading import Lexicon

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

# Currencies written as their ISO 4217 code beside an amount ("USD 6999", "1.250 KWD"), and as
# a word after it: a number beside one is an amount, not a phone or an account (agent/pii.py).
CURRENCY_CODE = re.compile(
    r"AED|AUD|BRL|CAD|CHF|CNY|CZK|DKK|EUR|GBP|HKD|HUF|IDR|ILS|INR|JPY|KRW|KWD|MXN|MYR|NOK|NZD|PHP"
    r"|PLN|RMB|RUB|SAR|SEK|SGD|THB|TRY|TWD|UAH|USD|VND|ZAR"
)
CURRENCY_WORDS = re.compile(r"元|円|圆|块|원|руб|р\.|zł|kr\b|kč|ft\b|lei\b|грн", re.IGNORECASE)


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
