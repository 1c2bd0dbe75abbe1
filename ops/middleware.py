import uuid

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.conf import settings
from django.core.exceptions import SuspiciousOperation
from django.core.signals import request_finished
from django.http import Http404, JsonResponse
from django.views import defaults
from rest_framework import status

from config.api_errors import (
    DATABASE_UNAVAILABLE,
    database_unavailable,
    error_body,
    is_api,
    page_not_found,
    server_error,
)
from config.log_context import bind_log_context, is_safe_id, replace_log_context

REQUEST_ID_HEADER = "X-Request-ID"
# URL parameters that name what a page works on, and the log field each fills.
LOGGED_URL_PARAMETERS = {"run_id": "run_id", "request_id": "refund_request_id"}


def request_id_of(request) -> str:
    """The caller's X-Request-ID (a load balancer's or proxy's, so its logs and ours share
    the id) when it is a plain id; otherwise a new one."""
    given = request.headers.get(REQUEST_ID_HEADER, "")
    return given if is_safe_id(given) else uuid.uuid4().hex


class RequestId:
    """Gives each HTTP request an id, answers it in X-Request-ID, and puts it (with the run or
    refund the URL names) on every log line written while the request is served, and on every
    task it enqueues (ops/worker.py).

    The log context is replaced when a request starts and cleared when its response is closed
    (request_finished), not when this middleware returns: Django logs a 4xx/5xx answer after
    the whole middleware chain has returned, and a streamed body is produced after that too.
    """

    sync_capable = True
    async_capable = True

    def __init__(self, get_response):
        self.get_response = get_response
        if iscoroutinefunction(get_response):
            markcoroutinefunction(self)

    def __call__(self, request):
        if iscoroutinefunction(self):
            return self.__acall__(request)
        self.start(request)
        response = self.get_response(request)
        response[REQUEST_ID_HEADER] = request.request_id
        return response

    async def __acall__(self, request):
        self.start(request)
        response = await self.get_response(request)
        response[REQUEST_ID_HEADER] = request.request_id
        return response

    def start(self, request) -> None:
        request.request_id = request_id_of(request)
        replace_log_context(request_id=request.request_id)

    def process_view(self, request, view_func, view_args, view_kwargs):
        named = {
            field: str(view_kwargs[parameter])
            for parameter, field in LOGGED_URL_PARAMETERS.items()
            if parameter in view_kwargs and is_safe_id(str(view_kwargs[parameter]))
        }
        if named:
            bind_log_context(**named)  # replaced by the next request, cleared when this one ends
        return None


def clear_log_context(**kwargs) -> None:
    replace_log_context()


request_finished.connect(clear_log_context, dispatch_uid="ops.middleware.clear_log_context")


class RejectNulBytes:
    """PostgreSQL text cannot hold a NUL byte, so a lookup with one fails in the driver (a
    500). Refuse such requests before any view or authentication runs: a NUL in the path means
    no such page (404), in a query value it is a bad request (400), in the Authorization header
    it is no valid credential (401)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if "\x00" in request.path:
            return page_not_found(request, Http404())
        if "\x00" in request.META.get("HTTP_AUTHORIZATION", "") and is_api(request):
            response = JsonResponse(
                error_body("Invalid token.", "authentication_failed"),
                status=status.HTTP_401_UNAUTHORIZED,
            )
            response["WWW-Authenticate"] = "Token"
            return response
        if any("\x00" in value for _, values in request.GET.lists() for value in values):
            if is_api(request):
                return JsonResponse(
                    error_body("Null characters are not allowed.", "bad_request"),
                    status=status.HTTP_400_BAD_REQUEST,
                )
            return defaults.bad_request(request, SuspiciousOperation("NUL in query"))
        return self.get_response(request)


class DatabaseUnavailable:
    """A view that cannot reach the database answers 503 with Retry-After
    (config.api_errors.database_unavailable) instead of a 500. DRF's views get the same from
    the API's exception handler."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if isinstance(exception, DATABASE_UNAVAILABLE):
            return database_unavailable(request, exception)
        return None


class NoDebugErrorPages:
    """With DEBUG on, Django answers an uncaught Http404 with its technical 404 page, which lists
    every URL pattern, and a crash with its technical 500 page (traceback, local variables).
    Both are made by the exception handling that wraps every middleware and the view, which
    passes handler404 / handler500 by; a process_exception hook would not see a path that
    matches no pattern (that Http404 is raised before any view), nor a crash in a middleware.
    So this looks at the finished answer instead, from the outside:

    * a 404 that is not JSON is Django's (no view here writes its own 404 page; they raise
      Http404): answer what DEBUG off answers, the plain page (JSON under /api/);
    * under /api/, a 500 that is not JSON is the debug page: answer the JSON error. The
      traceback is already in the log (django.request). Pages keep the debug 500.

    With DEBUG off Django already answers through handler404 / handler500.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if not settings.DEBUG or _is_json(response):
            return response
        if response.status_code == status.HTTP_404_NOT_FOUND:
            return page_not_found(request, Http404())
        if response.status_code == status.HTTP_500_INTERNAL_SERVER_ERROR and is_api(request):
            return server_error(request)
        return response


def _is_json(response) -> bool:
    return response.get("Content-Type", "").startswith("application/json")
