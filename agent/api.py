"""The assistant API: start a run, follow its events, cancel it, read its tool calls."""

import json
import time

from django.http import StreamingHttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from agent import run_selectors, services
from agent.models import AgentRun
from agent.serializers import (
    RunEventSerializer,
    RunSerializer,
    RunStartSerializer,
    ToolCallSerializer,
)
from config.api_errors import error_responses
from config.permissions import CanRunAssistant
from tickets.models import Ticket

STREAM_POLL_S = 0.5
STREAM_HEARTBEAT_S = 10.0
# A stream is bounded: the browser's EventSource reconnects with Last-Event-ID.
STREAM_MAX_S = 600.0

AFTER_PARAMETER = OpenApiParameter("after", int, description="only events with a larger seq")
READ_ERRORS = error_responses(401, 403, 404, e404="No such run.")
# OpenAPI 3.0 describes a text/event-stream by the schema of one event.
SSE_EVENT = inline_serializer(
    "RunEventFrame",
    {
        "id": serializers.CharField(help_text="the event's seq; resume with Last-Event-ID"),
        "event": serializers.CharField(help_text="the event type"),
        "data": serializers.CharField(help_text="the event as JSON: {seq, type, data, created_at}"),
    },
)


def _run_or_404(run_id) -> AgentRun:
    return get_object_or_404(AgentRun.objects.select_related("ticket", "started_by"), pk=run_id)


def _seq(value, *, field: str = "after") -> int:
    """A seq to resume after: absent means from the start, anything but a whole number (an
    empty value included) is a 400, not silently the whole history."""
    if value is None:
        return 0
    try:
        return max(int(value), 0)
    except (TypeError, ValueError):
        raise ValidationError({field: ["A whole number is required."]}) from None


class RunStartApi(APIView):
    permission_classes = [CanRunAssistant]

    @extend_schema(
        request=RunStartSerializer,
        responses={
            202: RunSerializer,
            **error_responses(
                400,
                401,
                403,
                404,
                429,
                e404="No such ticket.",
                e429="Over the hourly fair-use limit on runs or model tokens "
                "(code rate_limited, extra {limit, used, counts, retry_after}), or throttled. "
                "Retry-After says when to try again.",
            ),
        },
        summary="Ask the assistant; the run proceeds in the background",
    )
    def post(self, request, reference: str):
        ticket = get_object_or_404(Ticket, reference=reference)
        serializer = RunStartSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        run = services.run_start(
            ticket=ticket, user=request.user, message=serializer.validated_data["message"]
        )
        return Response(RunSerializer(run).data, status=status.HTTP_202_ACCEPTED)


class RunDetailApi(APIView):
    @extend_schema(responses={200: RunSerializer, **READ_ERRORS})
    def get(self, request, run_id):
        return Response(RunSerializer(_run_or_404(run_id)).data)


class RunEventsApi(APIView):
    @extend_schema(
        parameters=[AFTER_PARAMETER],
        responses={200: RunEventSerializer(many=True), **error_responses(400), **READ_ERRORS},
    )
    def get(self, request, run_id):
        run = _run_or_404(run_id)
        events = run_selectors.run_events(run=run, after=_seq(request.query_params.get("after")))
        return Response(RunEventSerializer(events, many=True).data)


class EventStreamRenderer(BaseRenderer):
    """Lets a client ask for text/event-stream; errors are still rendered as JSON text."""

    media_type = "text/event-stream"
    format = "event-stream"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        return json.dumps(data).encode()


def sse_frame(event) -> str:
    data = json.dumps(RunEventSerializer(event).data, ensure_ascii=False)
    return f"id: {event.seq}\nevent: {event.type}\ndata: {data}\n\n"


def event_stream(run: AgentRun, after: int):
    started = last_sent = time.monotonic()
    yield "retry: 2000\n\n"
    while time.monotonic() - started < STREAM_MAX_S:
        events = list(run_selectors.run_events(run=run, after=after))
        for event in events:
            after = event.seq
            yield sse_frame(event)
            last_sent = time.monotonic()
            if event.type in run_selectors.TERMINAL_EVENT_TYPES:
                return
        if not events:
            run.refresh_from_db(fields=["status"])
            if run.status not in run_selectors.ACTIVE_STATUSES:
                return
        if time.monotonic() - last_sent >= STREAM_HEARTBEAT_S:
            yield ": keep-alive\n\n"
            last_sent = time.monotonic()
        time.sleep(STREAM_POLL_S)


class RunEventStreamApi(APIView):
    renderer_classes = [JSONRenderer, EventStreamRenderer]

    @extend_schema(
        parameters=[AFTER_PARAMETER],
        responses={(200, "text/event-stream"): SSE_EVENT, **error_responses(400), **READ_ERRORS},
        summary="The run's events as server-sent events; resumes after Last-Event-ID",
    )
    def get(self, request, run_id):
        run = _run_or_404(run_id)
        last_event_id = request.headers.get("Last-Event-ID")
        after = (
            _seq(last_event_id, field="Last-Event-ID")
            if last_event_id
            else _seq(request.query_params.get("after"))
        )
        response = StreamingHttpResponse(event_stream(run, after), content_type="text/event-stream")
        response["Cache-Control"] = "no-cache"
        response["X-Accel-Buffering"] = "no"
        return response


class RunCancelApi(APIView):
    @extend_schema(
        request=None,
        responses={
            200: RunSerializer,
            **READ_ERRORS,
            **error_responses(
                403,
                409,
                e403="Neither the starter nor a supervisor.",
                e409="The run already ended.",
            ),
        },
        summary="Cancel a run (the agent who started it, or a supervisor)",
    )
    def post(self, request, run_id):
        run = services.run_request_cancel(run=_run_or_404(run_id), user=request.user)
        return Response(RunSerializer(run).data)


class RunToolCallsApi(APIView):
    @extend_schema(responses={200: ToolCallSerializer(many=True), **READ_ERRORS})
    def get(self, request, run_id):
        calls = run_selectors.run_tool_calls(run=_run_or_404(run_id))
        return Response(ToolCallSerializer(calls, many=True).data)
