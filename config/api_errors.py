"""How errors reach HTTP clients: one JSON shape, {"message", "code", "extra"}, for DRF views
(the REST_FRAMEWORK exception handler), for unknown /api/ paths and for the errors Django
answers itself. The domain's ApplicationError family lives in config/errors.py."""

import math
from typing import cast

from django.core.exceptions import PermissionDenied, RequestDataTooBig, SuspiciousOperation
from django.db import InterfaceError, OperationalError
from django.http import Http404, HttpResponse, JsonResponse
from django.template.loader import render_to_string
from django.urls import Resolver404, resolve
from django.utils.log import log_response
from django.views import defaults
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.utils import OpenApiResponse
from rest_framework import exceptions, serializers, status
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response

from config.errors import ApplicationError, RateLimited, TryAgain, wait_in_words
from config.transactions import is_lock_conflict


def error_body(message: str, code: str, extra: dict | None = None) -> dict:
    return {"message": message, "code": code, "extra": extra or {}}


class ErrorSerializer(serializers.Serializer):
    """The body of every API error (documentation only)."""

    message = serializers.CharField()
    code = serializers.CharField()
    extra = serializers.DictField()


ERROR_DESCRIPTIONS = {
    400: "The request is not valid; extra.fields names the fields.",
    401: "Not authenticated: send `Authorization: Token <token>` or log in.",
    403: "Your role may not do this.",
    404: "Not found.",
    409: "Conflicts with the current state.",
    413: "Too large.",
    422: "Refused by a business rule.",
    429: "Over a limit: try again after Retry-After seconds (also in extra.retry_after).",
    503: "Not available on this desk right now.",
}


def error_responses(*codes: int, **descriptions: str) -> dict[int, OpenApiResponse]:
    """OpenAPI responses for the error statuses an endpoint answers; `descriptions` overrides
    the default text per status, keyed `e409="..."`."""
    return {
        code: OpenApiResponse(
            ErrorSerializer, description=descriptions.get(f"e{code}", ERROR_DESCRIPTIONS[code])
        )
        for code in codes
    }


def api_exception_handler(exc, context):
    """Map every exception an API view raises to the error shape; never leak a traceback."""
    if is_lock_conflict(exc):
        # A deadlock or serialisation failure outside config.transactions.atomic_retried: the
        # database is there, another change got in the way; nothing was changed.
        exc = TryAgain()
    if isinstance(exc, ApplicationError):
        headers = {"Retry-After": str(exc.retry_after)} if isinstance(exc, RateLimited) else {}
        return Response(
            error_body(exc.message, exc.code, exc.extra), status=exc.status_code, headers=headers
        )
    if isinstance(exc, DATABASE_UNAVAILABLE):
        return database_unavailable(context["request"], exc)
    if isinstance(exc, exceptions.Throttled):
        # (set by DRF's Throttled, missing from its type stubs)
        return _throttled(getattr(exc, "wait", None))
    if isinstance(exc, RequestDataTooBig):
        return Response(
            error_body("The request body is too large.", "too_large"),
            status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
        )
    if isinstance(exc, SuspiciousOperation):
        return Response(
            error_body("The request is not valid.", "bad_request"),
            status=status.HTTP_400_BAD_REQUEST,
        )
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, PermissionDenied):
        exc = exceptions.PermissionDenied()
    if isinstance(exc, exceptions.APIException):
        headers = {}
        auth_header = getattr(exc, "auth_header", None)
        if auth_header:
            headers["WWW-Authenticate"] = auth_header
        message, code, extra = _described(exc)
        return Response(error_body(message, code, extra), status=exc.status_code, headers=headers)
    response = Response(
        error_body("Something went wrong on our side.", "server_error"),
        status=status.HTTP_500_INTERNAL_SERVER_ERROR,
    )
    # Logged as Django logs a crash outside DRF, traceback included, and marked as logged so
    # Django does not log the 500 a second time, without it.
    request = context["request"]
    log_response(
        "Internal Server Error: %s", request.path, response=response, request=request, exception=exc
    )
    return response


def _throttled(wait: float | None) -> Response:
    """DRF's throttles: the error shape, with the wait in words and in Retry-After."""
    if wait is None:
        return Response(
            error_body("Too many requests; try again later.", "throttled"),
            status=status.HTTP_429_TOO_MANY_REQUESTS,
        )
    retry_after = max(math.ceil(wait), 1)
    return Response(
        error_body(
            f"Too many requests; try again in {wait_in_words(retry_after)}.",
            "throttled",
            {"retry_after": retry_after},
        ),
        status=status.HTTP_429_TOO_MANY_REQUESTS,
        headers={"Retry-After": str(retry_after)},
    )


def _described(exc: exceptions.APIException) -> tuple[str, str, dict]:
    """The message, code and extra of a DRF exception's detail (a string, a list of them, or
    a dict of field errors)."""
    detail, codes = exc.detail, exc.get_codes()
    if isinstance(detail, dict) and list(detail) == ["non_field_errors"]:
        # Field errors are keyed by name; the stubs also allow int keys, which DRF never uses.
        errors, error_codes = cast(dict, detail), cast(dict, codes)
        code = error_codes["non_field_errors"] if isinstance(codes, dict) else codes
        return _first(errors["non_field_errors"]), _first(code), {}
    if isinstance(detail, dict):
        return "The request is not valid.", exc.default_code, {"fields": detail}
    if isinstance(detail, list):
        return "The request is not valid.", exc.default_code, {"errors": detail}
    return str(detail), _first(codes), {}


def _first(value) -> str:
    while isinstance(value, list) and value:
        value = value[0]
    return str(value)


class JsonErrorsMixin:
    """For an API view whose content is not JSON (the OpenAPI schema is YAML by default): its
    errors are still the JSON error shape, whatever renderer the request negotiated."""

    def finalize_response(self, request, response, *args, **kwargs):
        if isinstance(response, Response) and response.exception:
            request.accepted_renderer = JSONRenderer()
            request.accepted_media_type = JSONRenderer.media_type
        return super().finalize_response(  # type: ignore[misc]  # mixed into an APIView
            request, response, *args, **kwargs
        )


# --- Outside DRF: unknown /api/ paths and errors Django handles itself ----------------------

API_PREFIX = "/api/"


def is_api(request) -> bool:
    return request.path.startswith(API_PREFIX)


@csrf_exempt
def api_not_found(request, *args, **kwargs):
    """The last /api/ route: an unknown API path is a JSON 404 whatever DEBUG says. A path that
    only lacks its trailing slash is named in `extra` rather than redirected (a redirect would
    drop a POST body)."""
    extra = {}
    if not request.path.endswith("/"):
        try:
            match = resolve(request.path + "/")
        except Resolver404:
            match = None
        if match is not None and match.func is not api_not_found:
            extra["did_you_mean"] = request.path + "/"
    return JsonResponse(
        error_body("No API endpoint at this path.", "not_found", extra),
        status=status.HTTP_404_NOT_FOUND,
    )


def page_not_found(request, exception):
    if is_api(request):
        return JsonResponse(error_body("Not found.", "not_found"), status=status.HTTP_404_NOT_FOUND)
    return defaults.page_not_found(request, exception)


def permission_denied(request, exception):
    """A 403 under /api/ is the JSON error; elsewhere the desk's page (templates/403.html),
    which says why: the views raise PermissionDenied with the reason for the person reading."""
    if is_api(request):
        return JsonResponse(
            error_body(str(exception) or ERROR_DESCRIPTIONS[403], "permission_denied"),
            status=status.HTTP_403_FORBIDDEN,
        )
    return defaults.permission_denied(request, exception)


# What a query raises when no connection can be had: the server refused it or dropped it, or
# no pool slot came free within DATABASE_POOL_TIMEOUT_S.
DATABASE_UNAVAILABLE = (OperationalError, InterfaceError)
DATABASE_RETRY_AFTER_S = 5


def database_unavailable(request, exc: Exception) -> HttpResponse:
    """503 with Retry-After, not a 500: nothing is wrong with the request, and it will work
    once the database is back. JSON under /api/; elsewhere a page that needs no database (no
    user, no context processors). Logged one line each, without a traceback: an outage would
    otherwise bury the log in identical ones."""
    if is_api(request):
        response: HttpResponse = JsonResponse(
            error_body(
                "The database cannot be reached right now; try again in "
                f"{wait_in_words(DATABASE_RETRY_AFTER_S)}.",
                "database_unavailable",
                {"retry_after": DATABASE_RETRY_AFTER_S},
            ),
            status=status.HTTP_503_SERVICE_UNAVAILABLE,
        )
    else:
        response = HttpResponse(
            render_to_string("503.html"), status=status.HTTP_503_SERVICE_UNAVAILABLE
        )
    response["Retry-After"] = str(DATABASE_RETRY_AFTER_S)
    log_response(
        "Database unavailable (%s: %s): %s",
        type(exc).__name__,
        exc,
        request.path,
        response=response,
        request=request,
    )
    return response


def server_error(request):
    if is_api(request):
        return JsonResponse(
            error_body("Something went wrong on our side.", "server_error"),
            status=status.HTTP_500_INTERNAL_SERVER_ERROR,
        )
    return defaults.server_error(request)
