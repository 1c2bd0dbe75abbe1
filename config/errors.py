"""The domain's one error type, free of any HTTP framework: services raise these, and each
front end maps them (the API in config/api_errors.py, the HTML views by showing the message).

`status_code` is the HTTP status an API answers with; `code` is stable for clients.
"""

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
