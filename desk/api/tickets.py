"""The tickets' API: the list with its filters, one ticket with its conversation, and the
changes staff make to a ticket (status, priority, tags, CC, assignee, escalation), each
answered with the ticket as it is now. The other parts of the API, and the merge API, look a
ticket up and answer it the same way: ticket_or_404 and ticket_response."""

from typing import cast

from django.contrib.auth.models import User
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api_errors import error_responses
from config.permissions import IsStaffMember
from desk.api.permissions import Escalates, HandlesEscalations, WorksTickets, WritesOnTickets
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
from ops.parsers import JSONParser
from tickets import satisfaction, selectors, services, sla
from tickets.models import Ticket


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


def ticket_or_404(reference: str) -> Ticket:
    return get_object_or_404(
        _tickets_with_conversation(
            Ticket.objects.select_related("customer", "assignee", "order", "merged_into")
        ),
        reference=reference,
    )


def ticket_response(reference: str) -> Response:
    """The ticket as it is now, after a change."""
    return Response(TicketSerializer(ticket_or_404(reference)).data)


def _change(request, reference: str, body_class, change) -> Response:
    """Validate the body, let the service change the ticket with the body's one field, answer
    with the ticket as it is now."""
    ticket = ticket_or_404(reference)
    body = body_class(data=request.data)
    body.is_valid(raise_exception=True)
    change(ticket, *body.validated_data.values())
    return ticket_response(reference)


@extend_schema(responses={200: TicketSerializer, **error_responses(401, 403, 404)})
class TicketDetailApi(generics.RetrieveAPIView):
    serializer_class = TicketSerializer

    def get_object(self):
        return ticket_or_404(self.kwargs["reference"])


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
        ticket = ticket_or_404(reference)
        body = TagsWriteSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        services.ticket_change_tags(ticket=ticket, actor=request.user, **body.validated_data)
        return ticket_response(reference)


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
        ticket = ticket_or_404(reference)
        body = AssignWriteSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        username = body.validated_data["assignee"]
        assignee = services.support_member(username) if username is not None else None
        services.ticket_assign(ticket=ticket, assignee=assignee, actor=request.user)
        return ticket_response(reference)


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
