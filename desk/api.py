import hmac
import io
import logging
import math
from typing import cast

from django.conf import settings
from django.contrib.auth.models import User
from django.core.exceptions import RequestDataTooBig
from django.http import FileResponse, Http404
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    inline_serializer,
)
from rest_framework import generics, serializers, status
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.exceptions import APIException, AuthenticationFailed, ValidationError
from rest_framework.parsers import BaseParser
from rest_framework.permissions import SAFE_METHODS, AllowAny, BasePermission
from rest_framework.response import Response
from rest_framework.views import APIView

from agent.answer_check import contradicted_claims
from agent.providers import get_provider
from agent.runtime.drafting import ticket_draft
from config.api_errors import error_responses
from config.errors import RateLimited, wait_in_words
from config.permissions import IsStaffMember
from config.roles import Role, support_role
from desk import macros
from desk.serializers.customers import CustomerSerializer
from desk.serializers.inbound import InboundEmailSerializer, InboundResultSerializer
from desk.serializers.macros import AppliedMacroSerializer, MacroSerializer
from desk.serializers.messages import (
    DraftSerializer,
    MessageWithFilesSerializer,
    MessageWriteSerializer,
    TicketMessageSerializer,
)
from desk.serializers.tickets import (
    AssignWriteSerializer,
    CcWriteSerializer,
    NoteWriteSerializer,
    OptionalNoteSerializer,
    PriorityWriteSerializer,
    StatusWriteSerializer,
    TagsWriteSerializer,
    TicketSerializer,
)
from ops.authentication import api_token_issue
from ops.parsers import JSONParser
from ops.throttling import (
    INBOUND_SECRET_LIMITS,
    address_window,
    failure_record,
    failures_wait,
)
from orders.models import Customer
from tickets import attachments, satisfaction, selectors, services, sla
from tickets.models import Attachment, Ticket, TicketMessage

logger = logging.getLogger(__name__)


class ObtainTokenView(ObtainAuthToken):
    """POST {username, password} -> {token}. Send it as `Authorization: Token <token>`. Each
    sign-in gets a new token, shown only in this answer (the desk keeps its digest), good for
    API_TOKEN_TTL_DAYS."""

    authentication_classes: list = []
    permission_classes = [AllowAny]
    # The desk's parsers (APIView's, from settings): DRF's view names DRF's JSON parser.
    parser_classes = APIView.parser_classes

    @extend_schema(
        request=inline_serializer(
            "TokenRequest",
            {"username": serializers.CharField(), "password": serializers.CharField()},
        ),
        responses={
            200: inline_serializer("TokenResponse", {"token": serializers.CharField()}),
            **error_responses(400, e400="Missing fields or wrong credentials."),
        },
    )
    def post(self, request, *args, **kwargs):
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        issued = api_token_issue(user=serializer.validated_data["user"])
        return Response({"token": issued.key})


class _SupportRoleIn(BasePermission):
    """A first gate with DESIGN §9's "who" column, so a caller whose role may not act hears
    403 whatever the body says (assign's 400 would otherwise tell them which usernames are
    support staff). The service checks again: it is the authority the HTML views share."""

    roles: tuple[str, ...] = ()

    def has_permission(self, request, view) -> bool:
        return support_role(request.user) in self.roles


class WritesOnTickets(_SupportRoleIn):
    message = "Only interns, agents and supervisors write on tickets."
    roles = (Role.INTERN, Role.AGENT, Role.SUPERVISOR)


class EditsMacrosToWrite(BasePermission):
    """Everyone who writes on tickets reads the macros; only supervisors add or change the
    shared ones (DESIGN §19)."""

    message = "Only supervisors add or change shared macros."

    def has_permission(self, request, view) -> bool:
        return request.method in SAFE_METHODS or support_role(request.user) == Role.SUPERVISOR

    def has_object_permission(self, request, view, macro) -> bool:
        return request.method in SAFE_METHODS or macro.owner_id is None


class WorksTickets(_SupportRoleIn):
    message = "Only agents and supervisors change a ticket's status, assign it or resend replies."
    roles = (Role.AGENT, Role.SUPERVISOR)


class Escalates(_SupportRoleIn):
    message = "Interns and agents escalate to supervisors."
    roles = (Role.INTERN, Role.AGENT)


class HandlesEscalations(_SupportRoleIn):
    message = "Only supervisors handle escalations."
    roles = (Role.SUPERVISOR,)


def _choice(params, name: str, allowed) -> str:
    value = params.get(name, "")
    if value and value not in allowed:
        raise ValidationError({name: [f"Must be one of: {', '.join(allowed)}."]})
    return value


def _tickets_with_conversation(tickets):
    return tickets.prefetch_related(
        "messages__author",
        "messages__attachments",
        "events__actor",
        "tags",
        satisfaction.rated_surveys(),
    )


@extend_schema(
    parameters=[
        OpenApiParameter("view", str, enum=["", *selectors.VIEWS], description="empty means all"),
        OpenApiParameter(
            "status", str, enum=["", *Ticket.Status.values], description="empty means any"
        ),
        OpenApiParameter(
            "assignee",
            str,
            description='a username, "me" for yourself, or "none" for unassigned',
        ),
        OpenApiParameter(
            "q",
            str,
            description="search reference, subject, customer, order id and message text",
        ),
        OpenApiParameter(
            "sort",
            str,
            enum=["", *selectors.SORTS],
            description="updated and created: newest first (default updated); due: the "
            "earliest running SLA target first, tickets with none running last",
        ),
        OpenApiParameter(
            "priority", str, enum=["", *Ticket.Priority.values], description="empty means any"
        ),
        OpenApiParameter(
            "sla",
            str,
            enum=["", *sla.SLA_STATES],
            description="breached: a running SLA target is past due; due_soon: one is due "
            "within SLA_DUE_SOON_MINUTES",
        ),
        OpenApiParameter("tag", str, description="a tag's name, in any case"),
    ],
    responses={
        200: TicketSerializer(many=True),
        **error_responses(400, 401, 403, 404, e404="No such page."),
    },
)
class TicketListApi(generics.ListAPIView):
    serializer_class = TicketSerializer

    def _assignee(self, assignee: str) -> str:
        return self.request.user.username if assignee == "me" else assignee

    def get_queryset(self):
        params = self.request.query_params
        return _tickets_with_conversation(
            selectors.ticket_list(
                view=_choice(params, "view", selectors.VIEWS) or "all",
                # Only signed-in staff get here (IsStaffMember).
                user=cast(User, self.request.user),
                status=_choice(params, "status", Ticket.Status.values),
                assignee=self._assignee(params.get("assignee", "")),
                query=params.get("q", "").strip(),
                sort=_choice(params, "sort", list(selectors.SORTS)) or "updated",
                priority=_choice(params, "priority", Ticket.Priority.values),
                sla_state=_choice(params, "sla", sla.SLA_STATES),
                tag=params.get("tag", "").strip(),
            )
        )


def _ticket(reference: str) -> Ticket:
    return get_object_or_404(
        _tickets_with_conversation(
            Ticket.objects.select_related("customer", "assignee", "order", "merged_into")
        ),
        reference=reference,
    )


def _ticket_response(reference: str) -> Response:
    """The ticket as it is now, after a change."""
    return Response(TicketSerializer(_ticket(reference)).data)


def _change(request, reference: str, body_class, change) -> Response:
    """Validate the body, let the service change the ticket with the body's one field, answer
    with the ticket as it is now."""
    ticket = _ticket(reference)
    body = body_class(data=request.data)
    body.is_valid(raise_exception=True)
    change(ticket, *body.validated_data.values())
    return _ticket_response(reference)


@extend_schema(responses={200: TicketSerializer, **error_responses(401, 403, 404)})
class TicketDetailApi(generics.RetrieveAPIView):
    serializer_class = TicketSerializer

    def get_object(self):
        return _ticket(self.kwargs["reference"])


class TicketMessageApi(APIView):
    """Write on a ticket: an internal note, or a public reply emailed to the customer after
    commit (the message's `delivery` goes queued → sent, or failed)."""

    permission_classes = [IsStaffMember, WritesOnTickets]

    @extend_schema(
        request={
            "application/json": MessageWriteSerializer,
            "multipart/form-data": MessageWithFilesSerializer,
        },
        responses={
            201: TicketMessageSerializer,
            **error_responses(
                400,
                401,
                403,
                404,
                409,
                413,
                e403="Not a support member, or an intern sending a public reply.",
                e409="The ticket is closed; or (code claim_contradicts_state, the claims in "
                "`extra.claims`) a public reply says something about a refund that the records "
                "contradict: send it again with `confirm_claims: true` to send it anyway.",
                e413="A file over ATTACHMENT_MAX_BYTES, or the files together over 25 MB: "
                "nothing is written.",
            ),
        },
    )
    def post(self, request, reference: str):
        refuse_larger_bodies(request)
        ticket = _ticket(reference)
        body = MessageWithFilesSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        message = services.ticket_write(
            ticket=ticket,
            author=request.user,
            claims_check=lambda text: contradicted_claims(text=text, ticket=ticket),
            **body.validated_data,
        )
        return Response(TicketMessageSerializer(message).data, status=status.HTTP_201_CREATED)


class TicketDraftApi(APIView):
    """A reply the customer could be sent, for the ticket as it is now (DESIGN §13): the latest
    run's draft while no refund of the ticket changed since, else one written now. Nothing is
    sent or stored."""

    permission_classes = [IsStaffMember, WritesOnTickets]

    @extend_schema(request=None, responses={200: DraftSerializer, **error_responses(401, 403, 404)})
    def post(self, request, reference: str):
        ticket = _ticket(reference)
        draft = ticket_draft(ticket=ticket, provider=get_provider())
        return Response(DraftSerializer(draft.as_dict(ticket)).data)


# Types a browser would render or run even from a download it was told not to sniff: served
# as plain bytes instead.
ACTIVE_CONTENT = ("html", "xml", "javascript", "ecmascript", "svg", "xhtml")


def attachment_download(attachment: Attachment) -> FileResponse:
    if not attachment.file:
        raise attachments.Purged("This file was deleted: it was older than the retention period.")
    content_type = attachment.content_type
    if any(word in content_type for word in ACTIVE_CONTENT):
        content_type = "application/octet-stream"
    response = FileResponse(
        attachment.file.open("rb"),
        as_attachment=True,
        filename=attachment.filename,
        content_type=content_type,
    )
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = "default-src 'none'; sandbox"
    response["Cache-Control"] = "private, no-store"
    return response


class TicketAttachmentApi(APIView):
    """A message's file, for desk staff only, always as a download (DESIGN §15): never shown
    inline, never sniffed into something the browser would run."""

    permission_classes = [IsStaffMember]

    @extend_schema(
        responses={
            (200, "application/octet-stream"): OpenApiResponse(
                response=OpenApiTypes.BINARY,
                description="The file, as `Content-Disposition: attachment` with "
                "`X-Content-Type-Options: nosniff`.",
            ),
            **error_responses(
                401,
                403,
                404,
                e404="No such file on this ticket; code `attachment_purged`: its bytes were "
                "deleted past DATA_RETENTION_DAYS.",
            ),
        },
    )
    def get(self, request, reference: str, attachment_id: int):
        attachment = get_object_or_404(
            Attachment, pk=attachment_id, message__ticket__reference=reference
        )
        return attachment_download(attachment)


class TicketMessageRetryApi(APIView):
    """Send a reply whose delivery failed again."""

    permission_classes = [IsStaffMember, WorksTickets]

    @extend_schema(
        request=None,
        responses={
            200: TicketMessageSerializer,
            **error_responses(401, 403, 404, 409, e409="The reply's delivery has not failed."),
        },
    )
    def post(self, request, reference: str, message_id: int):
        message = get_object_or_404(TicketMessage, pk=message_id, ticket__reference=reference)
        message = services.reply_retry(message=message, actor=request.user)
        return Response(TicketMessageSerializer(message).data)


class TicketStatusApi(APIView):
    """Move the ticket along open → pending → open, open|pending → solved → closed,
    solved → open."""

    permission_classes = [IsStaffMember, WorksTickets]

    @extend_schema(
        request=StatusWriteSerializer,
        responses={
            200: TicketSerializer,
            **error_responses(
                400, 401, 403, 404, 409, e409="Not a transition the ticket can make now."
            ),
        },
    )
    def post(self, request, reference: str):
        return _change(
            request,
            reference,
            StatusWriteSerializer,
            lambda ticket, status: services.ticket_set_status(
                ticket=ticket, to_status=status, actor=request.user
            ),
        )


class TicketPriorityApi(APIView):
    """Set the priority (low, normal, high, urgent): both SLA targets are recomputed from the
    new priority's policy, counted from when the ticket was opened."""

    permission_classes = [IsStaffMember, WorksTickets]

    @extend_schema(
        request=PriorityWriteSerializer,
        responses={200: TicketSerializer, **error_responses(400, 401, 403, 404)},
    )
    def post(self, request, reference: str):
        return _change(
            request,
            reference,
            PriorityWriteSerializer,
            lambda ticket, priority: services.ticket_set_priority(
                ticket=ticket, priority=priority, actor=request.user
            ),
        )


class TicketTagsApi(APIView):
    """Add and remove tags: {"add": [...], "remove": [...]}. Names are equal ignoring case; a
    new name makes a tag. One tags_changed event when anything changed."""

    permission_classes = [IsStaffMember, WritesOnTickets]
    parser_classes = [JSONParser]

    @extend_schema(
        request=TagsWriteSerializer,
        responses={200: TicketSerializer, **error_responses(400, 401, 403, 404)},
    )
    def post(self, request, reference: str):
        ticket = _ticket(reference)
        body = TagsWriteSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        services.ticket_change_tags(ticket=ticket, actor=request.user, **body.validated_data)
        return _ticket_response(reference)


class TicketCcApi(APIView):
    """Replace the CC list: {"cc": [addresses]} (at most 10; the customer's own is left out).
    Public replies go to the customer and these addresses."""

    permission_classes = [IsStaffMember, WorksTickets]
    parser_classes = [JSONParser]

    @extend_schema(
        request=CcWriteSerializer,
        responses={200: TicketSerializer, **error_responses(400, 401, 403, 404)},
    )
    def post(self, request, reference: str):
        return _change(
            request,
            reference,
            CcWriteSerializer,
            lambda ticket, cc: services.ticket_set_cc(ticket=ticket, cc=cc, actor=request.user),
        )


@extend_schema(
    responses={
        200: MacroSerializer(many=True),
        **error_responses(400, 401, 403, 404, e404="No such page."),
    }
)
class MacroListApi(generics.ListCreateAPIView):
    """The shared macros and your own; a supervisor adds shared ones (POST), with the body in
    other languages under `translations`."""

    serializer_class = MacroSerializer
    permission_classes = [IsStaffMember, WritesOnTickets, EditsMacrosToWrite]
    parser_classes = [JSONParser]

    def get_queryset(self):
        return macros.macros_for(cast(User, self.request.user))

    @extend_schema(
        request=MacroSerializer,
        responses={201: MacroSerializer, **error_responses(400, 401, 403)},
    )
    def post(self, request, *args, **kwargs):
        return super().post(request, *args, **kwargs)


@extend_schema(
    responses={200: MacroSerializer, **error_responses(400, 401, 403, 404)},
)
class MacroDetailApi(generics.RetrieveUpdateAPIView):
    """One of the shared macros or yours; a supervisor changes a shared one (PATCH)."""

    serializer_class = MacroSerializer
    permission_classes = [IsStaffMember, WritesOnTickets, EditsMacrosToWrite]
    parser_classes = [JSONParser]
    http_method_names = ["get", "patch", "head", "options"]

    def get_queryset(self):
        return macros.macros_for(cast(User, self.request.user))


class TicketMacroApplyApi(APIView):
    """The macro rendered for this ticket from its state now (the refund placeholders read the
    ticket's current refund), with its actions, to review: nothing is sent or changed."""

    permission_classes = [IsStaffMember, WritesOnTickets]

    @extend_schema(
        request=None,
        responses={
            200: AppliedMacroSerializer,
            **error_responses(
                401,
                403,
                404,
                409,
                e404="No such ticket, or no such macro among the shared ones and yours.",
                e409="The ticket has no value for a placeholder the macro uses "
                "(extra.missing names them).",
            ),
        },
    )
    def post(self, request, reference: str, macro_id: int):
        ticket = _ticket(reference)
        macro = get_object_or_404(macros.macros_for(request.user), pk=macro_id)
        applied = macros.macro_apply(macro=macro, ticket=ticket, agent=request.user)
        return Response(AppliedMacroSerializer(applied).data)


class TicketAssignApi(APIView):
    """Assign to a username (yourself included), or unassign with null."""

    permission_classes = [IsStaffMember, WorksTickets]

    # JSON only: a form field cannot say null, and "null" is a string there.
    parser_classes = [JSONParser]

    @extend_schema(
        request=AssignWriteSerializer,
        responses={200: TicketSerializer, **error_responses(400, 401, 403, 404)},
    )
    def post(self, request, reference: str):
        ticket = _ticket(reference)
        body = AssignWriteSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        username = body.validated_data["assignee"]
        assignee = services.support_member(username) if username is not None else None
        services.ticket_assign(ticket=ticket, assignee=assignee, actor=request.user)
        return _ticket_response(reference)


class TicketEscalateApi(APIView):
    """Flag the ticket for supervisors, saying why (the note is kept as an internal note)."""

    permission_classes = [IsStaffMember, Escalates]

    @extend_schema(
        request=NoteWriteSerializer,
        responses={
            200: TicketSerializer,
            **error_responses(400, 401, 403, 404, 409, e409="The ticket is closed."),
        },
    )
    def post(self, request, reference: str):
        return _change(
            request,
            reference,
            NoteWriteSerializer,
            lambda ticket, note: services.ticket_escalate(
                ticket=ticket, note=note, actor=request.user
            ),
        )


class TicketDeescalateApi(APIView):
    """A supervisor has handled the escalation: the flag is cleared, the history kept."""

    permission_classes = [IsStaffMember, HandlesEscalations]

    @extend_schema(
        request=OptionalNoteSerializer,
        responses={
            200: TicketSerializer,
            **error_responses(400, 401, 403, 404, 409, e409="The ticket is not escalated."),
        },
    )
    def post(self, request, reference: str):
        return _change(
            request,
            reference,
            OptionalNoteSerializer,
            lambda ticket, note: services.ticket_clear_escalation(
                ticket=ticket, note=note, actor=request.user
            ),
        )


@extend_schema(
    responses={200: CustomerSerializer, **error_responses(401, 403, 404, e404="No such customer.")}
)
class CustomerDetailApi(APIView):
    def get(self, request, customer_id: int):
        try:
            overview = selectors.customer_overview(customer_id=customer_id)
        except Customer.DoesNotExist:
            raise Http404("No such customer.") from None
        return Response(CustomerSerializer(overview).data)


class InboundNotConfigured(APIException):
    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_detail = "Inbound email is not configured on this desk (INBOUND_SECRET is unset)."
    default_code = "inbound_disabled"


def refuse_larger_bodies(request) -> None:
    """413 before a byte of the body is read when its declared length is over the limit."""
    if attachments.body_too_large(request.META.get("CONTENT_LENGTH")):
        raise RequestDataTooBig("The request body is too large.")


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
