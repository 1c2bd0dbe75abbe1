"""Writing on a ticket and reading what was written: a note or a reply (with files), a draft
reply to review, a message's file as a download, and a failed reply sent again. Also the 413
for a declared body over the attachments' limit (refuse_larger_bodies), which inbound email
shares: files ride on messages either way."""

from django.core.exceptions import RequestDataTooBig
from django.http import FileResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from agent.answer_check import contradicted_claims
from agent.providers import get_provider
from agent.runtime.drafting import ticket_draft
from config.api_errors import error_responses
from config.permissions import IsStaffMember
from desk.api.permissions import WorksTickets, WritesOnTickets
from desk.api.tickets import ticket_or_404
from desk.serializers.messages import (
    DraftSerializer,
    MessageWithFilesSerializer,
    MessageWriteSerializer,
    TicketMessageSerializer,
)
from tickets import attachments, services
from tickets.models import Attachment, TicketMessage


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
        ticket = ticket_or_404(reference)
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
        ticket = ticket_or_404(reference)
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


def refuse_larger_bodies(request) -> None:
    """413 before a byte of the body is read when its declared length is over the limit."""
    if attachments.body_too_large(request.META.get("CONTENT_LENGTH")):
        raise RequestDataTooBig("The request body is too large.")
