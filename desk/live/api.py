"""The live desk's API (DESIGN §14): a ticket's changes (`/api/tickets/<ref>/events/` and its
server-sent-events twin `/stream/`), a list's news (`/api/ticket-list/stream/`), and the
user's notifications with their unread count (`/api/notifications/`, `/read/`, and `/stream/`
for the header's count). docs/ticket_events.md describes them.

Streams are served as the run streams are (agent/api.py): under an ASGI server a waiting
stream holds no thread and no database connection, and is woken by the announcements of its
key (config/live.py: `ticket:<pk>`, `user:<pk>`); under WSGI it polls.
"""

import json
import re
from typing import cast

from django.contrib.auth.models import User
from django.db.models import Max
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import generics, serializers
from rest_framework.exceptions import ValidationError
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from agent.api import (
    AFTER_PARAMETER,
    EventStreamRenderer,
    StreamRead,
    event_stream_response,
    resume_after,
)
from config.api_errors import error_responses
from desk.serializers.live import (
    NotificationReadResultSerializer,
    NotificationReadSerializer,
    NotificationSerializer,
    TicketChangeSerializer,
)
from ops.pagination import StrictPageNumberPagination
from tickets import changes, selectors
from tickets.models import Ticket

# Changes sent in one frame batch at most: a client far behind catches up over a few reads.
CHANGES_PER_READ = 500
TICKET_READ_ERRORS = error_responses(401, 403, 404, e404="No such ticket.")
UNKNOWN_FORMAT = "No such ?format= (json or event-stream)."
CHANGE_FRAME = inline_serializer(
    "TicketChangeFrame",
    {
        "id": serializers.CharField(help_text="the change's seq; resume with Last-Event-ID"),
        "event": serializers.CharField(help_text="the change's type"),
        "data": serializers.CharField(
            help_text="the change as JSON: {seq, type, data, created_at}"
        ),
    },
)
NOTIFICATIONS_FRAME = inline_serializer(
    "NotificationsFrame",
    {
        "event": serializers.CharField(help_text='"notifications"'),
        "data": serializers.CharField(
            help_text="JSON {unread, latest}: your unread count and newest notification, sent "
            "when the stream opens and whenever either changes"
        ),
    },
)


def _ticket_or_404(reference: str) -> Ticket:
    return get_object_or_404(Ticket.objects.only("pk", "reference"), reference=reference)


def change_frame(change) -> str:
    data = json.dumps(TicketChangeSerializer(change).data, ensure_ascii=False)
    return f"id: {change.seq}\nevent: {change.type}\ndata: {data}\n\n"


def read_ticket_changes(ticket_id: int, after: int) -> StreamRead:
    """What a ticket's stream sends next: its changes after `after`. A ticket's stream has no
    end of its own; it ends when the stream's time is up, and the browser reconnects."""
    frames = []
    for change in selectors.ticket_changes(
        ticket_id=ticket_id, after=after, limit=CHANGES_PER_READ
    ):
        frames.append(change_frame(change))
        after = change.seq
    return StreamRead(frames, after, over=False)


class TicketEventsApi(APIView):
    @extend_schema(
        parameters=[AFTER_PARAMETER],
        responses={
            200: TicketChangeSerializer(many=True),
            **error_responses(400),
            **TICKET_READ_ERRORS,
        },
        summary="The ticket's changes in order (DESIGN §14), after a seq",
        description="Types: message.created, message.delivery, ticket.status, ticket.assigned, "
        "ticket.escalated, refund.status, run.started, run.completed (docs/ticket_events.md).",
    )
    def get(self, request, reference: str):
        ticket = _ticket_or_404(reference)
        after = resume_after(request)
        changes_after = selectors.ticket_changes(ticket_id=ticket.pk, after=after)
        return Response(TicketChangeSerializer(changes_after, many=True).data)


class TicketEventStreamApi(APIView):
    renderer_classes = [JSONRenderer, EventStreamRenderer]

    @extend_schema(
        parameters=[AFTER_PARAMETER],
        responses={
            (200, "text/event-stream"): CHANGE_FRAME,
            **error_responses(400),
            **TICKET_READ_ERRORS,
        },
        summary="The ticket's changes as server-sent events; resumes after Last-Event-ID",
    )
    def get(self, request, reference: str):
        ticket = _ticket_or_404(reference)
        ticket_id = ticket.pk
        return event_stream_response(
            request,
            keys=[changes.ticket_key(ticket_id)],
            read_after=lambda after: read_ticket_changes(ticket_id, after),
            after=resume_after(request),
        )


# --- lists -----------------------------------------------------------------------------------

LIST_STREAM_MAX_TICKETS = 100
REFERENCE = re.compile(r"^TCK-[0-9]{1,18}$")
TICKETS_PATTERN = r"^(TCK-[0-9]{1,18}(,TCK-[0-9]{1,18}){0,99})?$"


def _references(raw: str) -> list[str]:
    references = [part.strip() for part in raw.split(",") if part.strip()]
    if len(references) > LIST_STREAM_MAX_TICKETS or not all(map(REFERENCE.match, references)):
        raise ValidationError(
            {"tickets": [f"Up to {LIST_STREAM_MAX_TICKETS} references, comma-separated."]}
        )
    return references


def list_reader(seqs: dict[int, int], newest: int):
    """A list stream's reads: a `changed` frame when a listed ticket has changes past the seq
    it had when the list was drawn, or a ticket newer than every ticket then was opened."""
    seqs = dict(seqs)
    newest_seen = [newest]

    def read(after: int) -> StreamRead:
        rows = Ticket.objects.filter(pk__in=list(seqs)).values_list(
            "pk", "reference", "last_change_seq"
        )
        changed = []
        for pk, reference, seq in rows:
            if seq != seqs[pk]:
                changed.append(reference)
                seqs[pk] = seq
        newest = Ticket.objects.aggregate(top=Max("pk"))["top"] or 0
        opened = newest > newest_seen[0]
        newest_seen[0] = max(newest, newest_seen[0])
        if not changed and not opened:
            return StreamRead([], after, over=False)
        data = json.dumps({"tickets": sorted(changed), "new": opened})
        return StreamRead([f"event: changed\ndata: {data}\n\n"], after, over=False)

    return read


class TicketListStreamApi(APIView):
    renderer_classes = [JSONRenderer, EventStreamRenderer]

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "tickets",
                str,
                description="the references the list shows, comma-separated (at most 100)",
                pattern=TICKETS_PATTERN,
            )
        ],
        responses={
            (200, "text/event-stream"): inline_serializer(
                "TicketListChangedFrame",
                {
                    "event": serializers.CharField(help_text='"changed"'),
                    "data": serializers.CharField(
                        help_text="JSON {tickets: [references that changed], new: a ticket "
                        "was opened}"
                    ),
                },
            ),
            **error_responses(400, 401, 403, 404, e404=UNKNOWN_FORMAT),
        },
        summary="Tells a ticket list when its tickets change or a ticket is opened",
    )
    def get(self, request):
        references = _references(request.query_params.get("tickets", ""))
        seqs = dict(
            Ticket.objects.filter(reference__in=references).values_list("pk", "last_change_seq")
        )
        newest = Ticket.objects.aggregate(top=Max("pk"))["top"] or 0
        keys = [changes.ticket_key(pk) for pk in seqs] + [changes.NEW_TICKETS_KEY]
        return event_stream_response(
            request, keys=keys, read_after=list_reader(seqs, newest), after=0
        )


# --- notifications ----------------------------------------------------------------------------


class NotificationPagination(StrictPageNumberPagination):
    """A page of notifications, with the user's unread count beside it (NotificationListApi)."""

    def get_paginated_response_schema(self, schema):
        schema = super().get_paginated_response_schema(schema)
        schema["properties"]["unread"] = {"type": "integer", "example": 2}
        return schema


UNREAD_VALUES = {"": False, "false": False, "0": False, "true": True, "1": True}


@extend_schema(
    parameters=[
        OpenApiParameter("unread", bool, description="true: only the unread ones"),
    ],
    responses={
        200: NotificationSerializer(many=True),
        **error_responses(400, 401, 403, 404, e404="No such page."),
    },
    summary="Your notifications, newest first, with your unread count",
)
class NotificationListApi(generics.ListAPIView):
    serializer_class = NotificationSerializer
    pagination_class = NotificationPagination

    def get_queryset(self):
        unread = self.request.query_params.get("unread", "")
        if unread not in UNREAD_VALUES:
            raise ValidationError({"unread": ["Must be true or false."]})
        unread_only = UNREAD_VALUES[unread]
        return selectors.notifications_of(user=self._user(), unread_only=unread_only)

    def get_paginated_response(self, data):
        response = super().get_paginated_response(data)
        response.data["unread"] = selectors.unread_notification_count(user=self._user())
        return response

    def _user(self) -> User:
        # Only signed-in staff get here (IsStaffMember).
        return cast(User, self.request.user)


class NotificationReadApi(APIView):
    @extend_schema(
        request=NotificationReadSerializer,
        responses={200: NotificationReadResultSerializer, **error_responses(400, 401, 403)},
        summary='Mark your notifications read: {"ids": [...]} or {"all": true}',
        description="Ids that are not yours, or already read, are left as they are.",
    )
    def post(self, request):
        body = NotificationReadSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        ids = None if body.validated_data.get("all") else body.validated_data["ids"]
        read = changes.notifications_mark_read(user=request.user, ids=ids)
        unread = selectors.unread_notification_count(user=request.user)
        return Response({"read": read, "unread": unread})


def notifications_reader(user_id: int):
    """A notification stream's reads: a frame when the unread count or the newest
    notification changed since the last frame (the first read always sends one)."""
    last_sent: list = []

    def read(after: int) -> StreamRead:
        user = User(pk=user_id)
        unread = selectors.unread_notification_count(user=user)
        latest = selectors.notifications_of(user=user).first()
        state = (unread, latest.pk if latest else None)
        if last_sent and last_sent[-1] == state:
            return StreamRead([], after, over=False)
        last_sent[:] = [state]
        payload = {
            "unread": unread,
            "latest": NotificationSerializer(latest).data if latest else None,
        }
        data = json.dumps(payload, ensure_ascii=False)
        return StreamRead([f"event: notifications\ndata: {data}\n\n"], after, over=False)

    return read


class NotificationStreamApi(APIView):
    renderer_classes = [JSONRenderer, EventStreamRenderer]

    @extend_schema(
        responses={
            (200, "text/event-stream"): NOTIFICATIONS_FRAME,
            **error_responses(401, 403, 404, e404=UNKNOWN_FORMAT),
        },
        summary="Your unread count as server-sent events (the header's count)",
    )
    def get(self, request):
        return event_stream_response(
            request,
            keys=[changes.user_key(request.user.pk)],
            read_after=notifications_reader(request.user.pk),
            after=0,
        )
