from django.core.exceptions import SuspiciousOperation
from django.http import Http404, JsonResponse
from django.views import defaults
from rest_framework import status

from config.errors import error_body, is_api, page_not_found


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
            response = JsonResponse(error_body("Invalid token.", "authentication_failed"),
                                    status=status.HTTP_401_UNAUTHORIZED)
            response["WWW-Authenticate"] = "Token"
            return response
        if any("\x00" in value for _, values in request.GET.lists() for value in values):
            if is_api(request):
                return JsonResponse(
                    error_body("Null characters are not allowed.", "bad_request"),
                    status=status.HTTP_400_BAD_REQUEST)
            return defaults.bad_request(request, SuspiciousOperation("NUL in query"))
        return self.get_response(request)
