"""POST /api/tickets/bulk/ (DESIGN §19): desk.bulk.services changes each ticket."""

from typing import cast

from django.contrib.auth.models import User
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api_errors import error_responses
from config.errors import ApplicationError
from config.permissions import IsStaffMember
from config.serializers import StrictCharField
from desk.api.permissions import WritesOnTickets
from desk.bulk.services import (
    BULK_MAX_TICKETS,
    BulkChange,
    check_may_bulk,
    tickets_bulk_change,
)
from desk.merge.services import merge_target
from ops.parsers import JSONParser
from tickets import services
from tickets.models import Ticket

ACTIONS = ("assign", "status", "priority", "add_tags", "merge_into")


class BulkWriteSerializer(serializers.Serializer):
    tickets = serializers.ListField(
        child=StrictCharField(max_length=20),
        min_length=1,
        max_length=BULK_MAX_TICKETS,
        help_text=f"References of the tickets to change (1 to {BULK_MAX_TICKETS})",
    )
    assign = StrictCharField(
        required=False, allow_null=True, help_text="A username to assign to, or null to unassign"
    )
    status = serializers.ChoiceField(choices=Ticket.Status.choices, required=False)
    priority = serializers.ChoiceField(choices=Ticket.Priority.choices, required=False)
    add_tags = serializers.ListField(
        child=StrictCharField(max_length=100),
        required=False,
        min_length=1,
        max_length=services.TAGS_PER_CHANGE,
    )
    merge_into = StrictCharField(
        required=False,
        max_length=20,
        help_text="Merge every other ticket of the list into this one (alone: no other action)",
    )

    def validate(self, attrs):
        given = [name for name in ACTIONS if name in attrs]
        if not given:
            raise serializers.ValidationError(f"Say what to do: one of {', '.join(ACTIONS)}.")
        if "merge_into" in given and len(given) > 1:
            raise serializers.ValidationError(
                {"merge_into": ["A merge goes alone: send the other changes separately."]}
            )
        # One ticket named twice is changed once, where it first comes.
        attrs["tickets"] = list(dict.fromkeys(ref.strip().upper() for ref in attrs["tickets"]))
        return attrs


class BulkResultSerializer(serializers.Serializer):
    ticket = serializers.CharField()
    ok = serializers.BooleanField()
    code = serializers.CharField(required=False, help_text="When refused: why, stably")
    message = serializers.CharField(required=False, help_text="When refused: why, in words")
    extra = serializers.DictField(required=False, help_text="When refused: the details")
    merge_target = serializers.BooleanField(
        required=False, help_text="The merge's target itself, left as it was"
    )


class BulkResultsSerializer(serializers.Serializer):
    results = BulkResultSerializer(many=True, help_text="One per ticket, in the order given")


def _field_error(field: str, exc: ApplicationError) -> ApplicationError:
    """A refusal of a value of the body, naming the body's field."""
    return ApplicationError(exc.message, code=exc.code, extra={"fields": {field: [exc.message]}})


def _change_from(body: dict) -> BulkChange:
    """The body's actions with their users and tickets looked up (400 naming the field)."""
    assign = None
    if body.get("assign") is not None:
        try:
            assign = services.support_member(body["assign"])
        except ApplicationError as exc:
            raise _field_error("assign", exc) from None
    merge_into = None
    if "merge_into" in body:
        try:
            merge_into = merge_target(body["merge_into"])
        except ApplicationError as exc:
            raise ApplicationError(
                exc.message, code="invalid", extra={"fields": {"merge_into": [exc.message]}}
            ) from None
    return BulkChange(
        assigns="assign" in body,
        assign=assign,
        status=body.get("status", ""),
        priority=body.get("priority", ""),
        add_tags=tuple(services.clean_tag_names(body.get("add_tags", []), field="add_tags")),
        merge_into=merge_into,
    )


class TicketBulkApi(APIView):
    """Change many tickets at once: assign, status, priority and tags to add (any of them
    together), or merge them into one. Each ticket changes as on its own page, in its own
    transaction: one refused ticket refuses nothing else. 200 with a result per ticket in the
    order given, also when some were refused. A status a ticket already has counts as done."""

    permission_classes = [IsStaffMember, WritesOnTickets]
    parser_classes = [JSONParser]

    @extend_schema(
        request=BulkWriteSerializer,
        responses={
            200: BulkResultsSerializer,
            **error_responses(
                400,
                401,
                403,
                e400="No ticket, more than 100, no action, an unknown status or priority, an "
                "assignee who does not work tickets, a bad tag name, or no such merge target: "
                "extra.fields names the field. Nothing was changed.",
                e403="Your role may not do one of the actions (extra.action): interns only add "
                "tags. Nothing was changed.",
            ),
        },
    )
    def post(self, request):
        body = BulkWriteSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        actor = cast(User, request.user)
        # The role first: a 400 for the assignee would tell who works tickets.
        check_may_bulk(actor, [name for name in ACTIONS if name in body.validated_data])
        change = _change_from(body.validated_data)
        results = tickets_bulk_change(
            references=body.validated_data["tickets"], change=change, actor=actor
        )
        return Response({"results": [result.as_dict() for result in results]})
