from config.errors import Conflict, Forbidden, Refused


class StaleConfirmation(Conflict):
    """The version or fingerprint the reviewer saw is no longer the one to decide (409)."""

    code = "stale_confirmation"


class RefundRefused(Refused):
    """Policy or the order's remaining balance refuses the refund (422)."""

    code = "refund_refused"


class ReviewForbidden(Forbidden):
    """Not a reviewer, or reviewing one's own request (403)."""

    code = "review_forbidden"


class OrderFrozen(Conflict):
    """An edit of an order's payment fields while a refund on it is in flight (409)."""

    code = "order_payment_frozen"
