"""Money is Decimal in the currency's major unit, carried in JSON as a string (DESIGN §1,
invariant 4).

Providers get integers in the currency's minor unit by its ISO 4217 exponent (JPY 0, CNY 2,
KWD 3). The desk stores amounts with two decimal places (RefundRequest.amount and
Order.amount_paid), so it holds an amount only if the currency can express it and it needs no
more than two places: 12.5 JPY is refused (no minor unit), and so is 12.345 KWD (a third
decimal the desk cannot store or check against what was paid, which has two places too).
"""

from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

CENT = Decimal("0.01")

# The places of RefundRequest.amount and Order.amount_paid.
STORED_PLACES = 2

# ISO 4217 exponents that are not 2 (the minor unit is 10 ** -exponent of the major unit).
MINOR_UNIT_EXPONENTS = {
    **dict.fromkeys(
        (
            "BIF",
            "CLP",
            "DJF",
            "GNF",
            "ISK",
            "JPY",
            "KMF",
            "KRW",
            "PYG",
            "RWF",
            "UGX",
            "UYI",
            "VND",
            "VUV",
            "XAF",
            "XOF",
            "XPF",
        ),
        0,
    ),
    **dict.fromkeys(("BHD", "IQD", "JOD", "KWD", "LYD", "OMR", "TND"), 3),
    **dict.fromkeys(("CLF", "UYW"), 4),
}
DEFAULT_EXPONENT = 2


def to_cents(value: Decimal | int | str) -> Decimal:
    return Decimal(value).quantize(CENT, rounding=ROUND_HALF_UP)


def money_str(value: Decimal) -> str:
    return str(to_cents(value))


def minor_unit_exponent(currency: str) -> int:
    return MINOR_UNIT_EXPONENTS.get(currency.upper(), DEFAULT_EXPONENT)


def desk_places(currency: str) -> int:
    """How many decimal places an amount in `currency` may have at the desk."""
    return min(minor_unit_exponent(currency), STORED_PLACES)


def _has_places(amount: Decimal, places: int) -> bool:
    try:
        return amount.is_finite() and amount == amount.quantize(Decimal(1).scaleb(-places))
    except InvalidOperation:  # too many digits to quantize: not an amount anyone holds
        return False


def desk_can_hold(amount: Decimal, currency: str) -> bool:
    """Whether `amount` is a whole number of `currency`'s minor unit and fits the desk's two
    places."""
    return _has_places(amount, desk_places(currency))


def to_minor_units(amount: Decimal, currency: str) -> int:
    """`amount` as an integer of `currency`'s minor unit: 129 JPY -> 129, 129 CNY -> 12900,
    12.34 KWD -> 12340. Raises ValueError for an amount the currency cannot express."""
    exponent = minor_unit_exponent(currency)
    if not _has_places(amount, exponent):
        raise ValueError(f"{amount} {currency} is not a whole number of its minor unit")
    return int(amount.scaleb(exponent))


def from_minor_units(units: int, currency: str) -> Decimal:
    """`units` of `currency`'s minor unit in its major unit, exactly, with at least two places:
    129 JPY -> 129.00, 12900 CNY -> 129.00, 12345 KWD -> 12.345."""
    exponent = minor_unit_exponent(currency)
    places = max(exponent, STORED_PLACES)
    return Decimal(units).scaleb(-exponent).quantize(Decimal(1).scaleb(-places))
