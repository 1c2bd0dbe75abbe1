from config.errors import ApplicationError, Conflict, Forbidden, Refused


class StaleConfirmation(Conflict):
    """The version or fingerprint the reviewer saw is no longer the one to decide (409)."""

    code = "stale_confirmation"


class RefundRefused(Refused):
    """Policy or the order's remaining balance refuses the refund (422)."""

    code = "refund_refused"


class CurrencyNotSupported(RefundRefused):
    """The published policy sets no limits for the refund's currency (422, clause R-5)."""

    code = "currency_not_supported"


class ReviewForbidden(Forbidden):
    """Not a reviewer, or reviewing one's own request (403)."""

    code = "review_forbidden"


class WithdrawForbidden(Forbidden):
    """Neither the request's requester nor a supervisor (403)."""

    code = "withdraw_forbidden"


class NotWithdrawable(Conflict):
    """The request is no longer awaiting review: a reviewer, or the clock, got there first
    (409, with its status in extra)."""

    code = "refund_not_withdrawable"


class OrderFrozen(Conflict):
    """An edit of an order's payment fields while a refund on it is in flight (409)."""

    code = "order_payment_frozen"


class AmountNotExpressible(ApplicationError):
    """The amount is not a whole number of the currency's minor unit, or needs more decimal
    places than the desk stores (400)."""

    code = "amount_not_expressible"
