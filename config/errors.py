"""The domain's one error type, free of any HTTP framework: services raise these, and each
front end maps them (the API in config/api_errors.py, the HTML views by showing the message).

`status_code` is the HTTP status an API answers with; `code` is stable for clients.
"""

import math
from http import HTTPStatus


class ApplicationError(Exception):
    """A refusal the caller can act on. Subclasses pick the HTTP status and a stable code."""

    status_code = HTTPStatus.BAD_REQUEST
    code = "invalid"

    def __init__(self, message: str, *, code: str | None = None, extra: dict | None = None):
        super().__init__(message)
        self.message = message
        if code:
            self.code = code
        self.extra = extra or {}


class Conflict(ApplicationError):
    status_code = HTTPStatus.CONFLICT
    code = "conflict"


class Refused(ApplicationError):
    status_code = HTTPStatus.UNPROCESSABLE_ENTITY
    code = "refused"


class Forbidden(ApplicationError):
    status_code = HTTPStatus.FORBIDDEN
    code = "permission_denied"


class RateLimited(ApplicationError):
    """Over a fair-use limit. `retry_after` is how many whole seconds until the caller may try
    again; the API sends it as the Retry-After header and in `extra`."""

    status_code = HTTPStatus.TOO_MANY_REQUESTS
    code = "rate_limited"

    def __init__(
        self, message: str, *, retry_after: int, code: str | None = None, extra: dict | None = None
    ):
        super().__init__(message, code=code, extra={**(extra or {}), "retry_after": retry_after})
        self.retry_after = retry_after


def wait_in_words(seconds: float) -> str:
    """A wait as a person reads it: "40 seconds", "1 minute", "12 minutes" (rounded up, so
    trying again when told to is never too early)."""
    whole = max(math.ceil(seconds), 1)
    if whole < 60:
        return f"{whole} second{'s' if whole != 1 else ''}"
    minutes = math.ceil(whole / 60)
    return f"{minutes} minute{'s' if minutes != 1 else ''}"


class TryAgain(Conflict):
    """The database gave up on this change because of another one made at the same moment (a
    deadlock, or a transaction it could not serialise), and it still did after a few tries
    (config/transactions.py). Nothing was changed; the same request may well succeed now."""

    code = "conflict_try_again"

    def __init__(self, message: str = "", *, code: str | None = None, extra: dict | None = None):
        super().__init__(
            message or "Another change to the same records got in the way; try again.",
            code=code,
            extra=extra,
        )
