"""Macros over the API (DESIGN §19): the shared ones and your own, a supervisor's additions
and changes to the shared ones, and a macro rendered for one ticket to review (desk.macros
renders it; nothing is sent or changed)."""

from typing import cast

from django.contrib.auth.models import User
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import generics
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api_errors import error_responses
from config.permissions import IsStaffMember
from desk import macros
from desk.api.permissions import EditsMacrosToWrite, WritesOnTickets
from desk.api.tickets import ticket_or_404
from desk.serializers.macros import AppliedMacroSerializer, MacroSerializer
from ops.parsers import JSONParser


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
        ticket = ticket_or_404(reference)
        macro = get_object_or_404(macros.macros_for(request.user), pk=macro_id)
        applied = macros.macro_apply(macro=macro, ticket=ticket, agent=request.user)
        return Response(AppliedMacroSerializer(applied).data)
