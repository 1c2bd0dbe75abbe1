"""One error type for the domain, one JSON shape for HTTP clients: {"message", "code", "extra"}."""

import logging

from django.core.exceptions import PermissionDenied
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response

logger = logging.getLogger(__name__)


class ApplicationError(Exception):
    """A refusal the caller can act on. Subclasses pick the HTTP status and a stable code."""

    status_code = status.HTTP_400_BAD_REQUEST
    code = "invalid"

    def __init__(self, message: str, *, code: str | None = None, extra: dict | None = None):
        super().__init__(message)
        self.message = message
        if code:
            self.code = code
        self.extra = extra or {}


class Conflict(ApplicationError):
    status_code = status.HTTP_409_CONFLICT
    code = "conflict"


class Refused(ApplicationError):
    status_code = status.HTTP_422_UNPROCESSABLE_ENTITY
    code = "refused"


class Forbidden(ApplicationError):
    status_code = status.HTTP_403_FORBIDDEN
    code = "permission_denied"


def error_body(message: str, code: str, extra: dict | None = None) -> dict:
    return {"message": message, "code": code, "extra": extra or {}}


def api_exception_handler(exc, context):
    """Map every exception an API view raises to the error shape; never leak a traceback."""
    if isinstance(exc, ApplicationError):
        return Response(error_body(exc.message, exc.code, exc.extra), status=exc.status_code)
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, PermissionDenied):
        exc = exceptions.PermissionDenied()
    if isinstance(exc, exceptions.APIException):
        headers = {}
        if getattr(exc, "auth_header", None):
            headers["WWW-Authenticate"] = exc.auth_header
        if getattr(exc, "wait", None):
            headers["Retry-After"] = str(int(exc.wait))
        detail, codes = exc.detail, exc.get_codes()
        if isinstance(detail, dict) and list(detail) == ["non_field_errors"]:
            message, code, extra = str(detail["non_field_errors"][0]), codes[
                "non_field_errors"][0], {}
        elif isinstance(detail, dict):
            message, code, extra = "The request is not valid.", exc.default_code, {
                "fields": detail}
        elif isinstance(detail, list):
            message, code, extra = "The request is not valid.", exc.default_code, {
                "errors": detail}
        else:
            message, code, extra = str(detail), codes, {}
        return Response(error_body(message, str(code), extra), status=exc.status_code,
                        headers=headers)
    logger.exception("Unhandled API error in %s", context.get("view").__class__.__name__)
    return Response(error_body("Something went wrong on our side.", "server_error"),
                    status=status.HTTP_500_INTERNAL_SERVER_ERROR)
