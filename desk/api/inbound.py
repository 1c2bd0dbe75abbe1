"""POST /api/inbound/email/: customer email from the mail gateway. Apart because it is the
API's one door that is not for staff: the gateway authenticates with the shared
INBOUND_SECRET (wrong guesses are limited per address by ops.throttling's failure counter),
and its bodies may be larger than the rest of the API takes, since an email's attachments
travel in its body."""

import hmac
import io
import math

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.exceptions import APIException, AuthenticationFailed
from rest_framework.parsers import BaseParser
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api_errors import error_responses
from config.errors import RateLimited, wait_in_words
from desk.api.messages import refuse_larger_bodies
from desk.serializers.inbound import InboundEmailSerializer, InboundResultSerializer
from ops.parsers import JSONParser
from ops.throttling import (
    INBOUND_SECRET_LIMITS,
    address_window,
    failure_record,
    failures_wait,
)
from tickets import attachments, services


class InboundNotConfigured(APIException):
    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_detail = "Inbound email is not configured on this desk (INBOUND_SECRET is unset)."
    default_code = "inbound_disabled"


class InboundJSONParser(BaseParser):
    """JSON as ops.parsers.JSONParser reads it, up to message_body_limit() rather than
    DATA_UPLOAD_MAX_MEMORY_SIZE (2.5 MB): an email's attachments travel in its body. Over the
    limit: 413 (RequestDataTooBig), also when no Content-Length says so."""

    media_type = "application/json"

    def parse(self, stream, media_type=None, parser_context=None):
        limit = attachments.message_body_limit()
        body = stream.read(limit + 1) if stream is not None else b""
        if len(body) > limit:
            raise RequestDataTooBig("The request body is too large.")
        return JSONParser().parse(io.BytesIO(body), media_type, parser_context)


class InboundEmailApi(APIView):
    """Customer email from the mail gateway, authenticated by the `X-Inbound-Secret` header.
    Idempotent on `message_id`. A subject naming `[TCK-…]` of the sender's own ticket appends
    to it (reopening it if pending or solved); otherwise a new ticket, and a new customer if
    the sender is unknown."""

    authentication_classes: list = []
    permission_classes = [AllowAny]
    parser_classes = [InboundJSONParser]
    # The mail gateway is one address sending every customer's mail: no per-address rate.
    # Wrong secrets are limited per address instead (ops.throttling's failure counter).
    throttle_classes: list = []

    def check_permissions(self, request):
        expected = settings.INBOUND_SECRET
        if not expected:
            raise InboundNotConfigured()
        windows = address_window("inbound-secret-failures", request, "INBOUND_SECRET_THROTTLE")
        wait = failures_wait(windows, limits=INBOUND_SECRET_LIMITS)
        if wait is not None:
            # Not compared at all: guessing stops at the right secret too.
            retry_after = max(math.ceil(wait), 1)
            raise RateLimited(
                "Too many wrong X-Inbound-Secret from your address; try again in "
                f"{wait_in_words(retry_after)}.",
                retry_after=retry_after,
                code="throttled",
            )
        given = request.headers.get("X-Inbound-Secret", "")
        if not hmac.compare_digest(given.encode(), expected.encode()):
            failure_record(windows, limits=INBOUND_SECRET_LIMITS)
            raise AuthenticationFailed("Wrong or missing X-Inbound-Secret.")

    def get_authenticate_header(self, request):
        return "X-Inbound-Secret"

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "X-Inbound-Secret",
                str,
                location=OpenApiParameter.HEADER,
                required=True,
                description="the desk's INBOUND_SECRET",
            )
        ],
        request=InboundEmailSerializer,
        responses={
            201: InboundResultSerializer,
            200: InboundResultSerializer,
            **error_responses(
                400,
                401,
                413,
                429,
                503,
                e400="Not valid: extra.fields names the fields (an attachment that is not "
                "base64, or empty, is refused with the whole email).",
                e401="Wrong or missing X-Inbound-Secret.",
                e413="An attachment over ATTACHMENT_MAX_BYTES, or all of them over 25 MB: the "
                "email is refused, nothing kept.",
                e429="Too many wrong secrets from this address: try again after Retry-After "
                "seconds; the secret is not compared until then.",
                e503="INBOUND_SECRET is not set on this desk.",
            ),
        },
        description="201 when the email is new; 200 with duplicate=true when this message_id "
        "was received before (nothing changes).",
    )
    def post(self, request):
        refuse_larger_bodies(request)
        body = InboundEmailSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        email = body.validated_data
        inbound = services.ticket_receive_email(
            sender=email["from"],
            name=email["name"],
            subject=email["subject"],
            body=email["body"],
            message_id=email["message_id"].strip(),
            cc=email["cc"],
            files=email["attachments"],
        )
        return Response(
            {
                "ticket": inbound.ticket.reference,
                "created": inbound.created,
                "duplicate": inbound.duplicate,
            },
            status=status.HTTP_200_OK if inbound.duplicate else status.HTTP_201_CREATED,
        )
