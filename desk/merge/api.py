"""POST /api/tickets/<ref>/merge/ (DESIGN §19): desk.merge.services decides."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.views import APIView

from config.api_errors import error_responses
from config.permissions import IsStaffMember
from config.roles import Role
from desk.api.permissions import SupportRoleIn
from desk.api.tickets import ticket_or_404, ticket_response
from desk.merge.services import merge_target, ticket_merge
from desk.serializers.tickets import TicketSerializer
from ops.parsers import JSONParser


class MergeWriteSerializer(serializers.Serializer):
    into = serializers.CharField(
        max_length=20, help_text="The reference of the ticket to merge this one into"
    )


class Merges(SupportRoleIn):
    message = "Only agents and supervisors merge tickets."
    roles = (Role.AGENT, Role.SUPERVISOR)


class TicketMergeApi(APIView):
    """Merge this ticket (a duplicate) into another of the same customer: its messages,
    attachments, CC, tags and refund requests move to that ticket, and this one is closed with
    `merged_into`. Answers this ticket as it is now."""

    permission_classes = [IsStaffMember, Merges]
    parser_classes = [JSONParser]

    @extend_schema(
        request=MergeWriteSerializer,
        responses={
            200: TicketSerializer,
            **error_responses(
                400,
                401,
                403,
                404,
                409,
                e404="No such ticket, or no ticket of the reference given in `into`.",
                e409="merge_customers_differ: the tickets belong to different customers; "
                "merge_invalid: a ticket into itself, from or into a merged ticket, into a "
                "closed one, or while the assistant works on this one. Nothing moved.",
            ),
        },
    )
    def post(self, request, reference: str):
        source = ticket_or_404(reference)
        body = MergeWriteSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        target = merge_target(body.validated_data["into"])
        ticket_merge(source=source, target=target, actor=request.user)
        return ticket_response(reference)
