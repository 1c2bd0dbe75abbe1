"""The assistant API: start a run, follow its events, cancel it, read its tool calls."""

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial

from django.core.handlers.asgi import ASGIRequest
from django.db import connection
from django.http import StreamingHttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from agent import live, run_selectors, services
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

# Without announcements (a WSGI server, or no Redis nor PostgreSQL) a stream reads this often.
STREAM_POLL_S = 0.5
# With them, it still re-reads this often: an announcement lost on the way costs this much.
# (They are lost only with the subscription, and a subscription that comes back wakes every
# stream; this timer is the net under that net, and with 1,000 streams a process pays 1,000
# reads per period for it.)
STREAM_RECHECK_S = 15.0
STREAM_HEARTBEAT_S = 10.0
# A stream is bounded: the browser's EventSource reconnects with Last-Event-ID.
STREAM_MAX_S = 600.0
STREAM_READ_THREADS = 4
STREAM_PREAMBLE = "retry: 2000\n\n"
HEARTBEAT = ": keep-alive\n\n"

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


@dataclass
class StreamRead:
    """What one read of a stream found: frames to send, the seq to resume after, and whether
    the stream is over (a terminal event was read, or the run ended without one)."""

    frames: list[str]
    after: int
    over: bool


def _frames_after(run: AgentRun, after: int) -> StreamRead:
    frames = []
    for event in run_selectors.run_events(run=run, after=after):
        after = event.seq
        frames.append(sse_frame(event))
        if event.type in run_selectors.TERMINAL_EVENT_TYPES:
            return StreamRead(frames, after, over=True)
    return StreamRead(frames, after, over=False)


def stream_read(run: AgentRun, after: int) -> StreamRead:
    """The run's events after `after`, up to and including a terminal one."""
    read = _frames_after(run, after)
    if read.frames:
        return read
    run.refresh_from_db(fields=["status"])
    if run.status in run_selectors.ACTIVE_STATUSES:
        return read
    # The run ended, perhaps just after the events were read: its end event was committed
    # with its status, so one more read finds it.
    last = _frames_after(run, after)
    return StreamRead(last.frames, last.after, over=True)


# One read of a stream: what there is after a seq (on a stream thread under ASGI).
StreamReader = Callable[[int], StreamRead]


def polled_stream(read_after: StreamReader, after: int) -> Iterator[str]:
    """A stream as a WSGI server serves it: its thread polls the database."""
    started = last_sent = time.monotonic()
    yield STREAM_PREAMBLE
    while time.monotonic() - started < STREAM_MAX_S:
        read = read_after(after)
        after = read.after
        if read.frames:
            yield "".join(read.frames)
            last_sent = time.monotonic()
        if read.over:
            return
        if time.monotonic() - last_sent >= STREAM_HEARTBEAT_S:
            yield HEARTBEAT
            last_sent = time.monotonic()
        time.sleep(STREAM_POLL_S)


# Stream reads under ASGI share these few threads, and so a few database connections, however
# many streams are open; a stream holds no thread while it waits.
_stream_readers = ThreadPoolExecutor(max_workers=STREAM_READ_THREADS, thread_name_prefix="stream")


def _retire_connection_if_due() -> None:
    # No request signal reaches these threads to retire a connection that broke or outlived
    # CONN_MAX_AGE, as close_old_connections does for a request's thread: do it here.
    if connection.errors_occurred or (
        connection.close_at is not None and time.monotonic() >= connection.close_at
    ):
        connection.close_if_unusable_or_obsolete()


def _stream_read_on_shared_thread(read_after: StreamReader, after: int) -> StreamRead:
    _retire_connection_if_due()
    try:
        return read_after(after)
    finally:
        # Also after the read: a web process's pooled connection (CONN_MAX_AGE 0) goes back
        # to the pool now, rather than staying with this thread until its next read.
        _retire_connection_if_due()


def close_stream_reader_connections(timeout_s: float = 10.0) -> None:
    """Close the database connection of every stream thread (before a test database is
    dropped: PostgreSQL refuses while they are connected). Each call blocks until all of them
    run at once, so each lands on a thread of its own."""
    all_running = threading.Barrier(STREAM_READ_THREADS, timeout=timeout_s)

    def close_once_all_are_running() -> None:
        all_running.wait()
        connection.close()

    calls = [_stream_readers.submit(close_once_all_are_running) for _ in range(STREAM_READ_THREADS)]
    for call in calls:
        call.result(timeout=timeout_s)


async def read_stream_async(read_after: StreamReader, after: int) -> StreamRead:
    # Not sync_to_async: it lets a call in flight finish and swallows the cancel a client's
    # disconnect sends, which would keep a closed stream waiting out its timer.
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(
        _stream_readers, _stream_read_on_shared_thread, read_after, after
    )


async def announced_stream(
    keys: Iterable, read_after: StreamReader, after: int
) -> AsyncIterator[str]:
    """A stream as an ASGI server serves it: it waits on the event loop for announcements of
    `keys` (config/live.py), or for its re-read timer, and reads only then, on one of the
    few stream threads: no thread and no database connection is held while it waits."""
    hub = live.hub()
    started = last_sent = time.monotonic()
    yield STREAM_PREAMBLE
    with hub.watching(*keys) as woken:
        must_read, last_read = True, 0.0
        while (now := time.monotonic()) - started < STREAM_MAX_S:
            if must_read:
                woken.clear()
                read = await read_stream_async(read_after, after)
                last_read = time.monotonic()
                after = read.after
                if read.frames:
                    yield "".join(read.frames)
                    last_sent = time.monotonic()
                if read.over:
                    return
            if time.monotonic() - last_sent >= STREAM_HEARTBEAT_S:
                yield HEARTBEAT
                last_sent = time.monotonic()
            # A keep-alive needs no read: the database is read when the run's events are
            # announced, or on the re-check timer in case an announcement was lost.
            recheck = STREAM_RECHECK_S if hub.connected else STREAM_POLL_S
            until_read = recheck - (time.monotonic() - last_read)
            until_heartbeat = STREAM_HEARTBEAT_S - (time.monotonic() - last_sent)
            until_end = STREAM_MAX_S - (now - started)
            try:
                await asyncio.wait_for(
                    woken.wait(), max(min(until_read, until_heartbeat, until_end), 0)
                )
                must_read = True
            except TimeoutError:
                must_read = time.monotonic() - last_read >= recheck


class RunEventStreamApi(APIView):
    renderer_classes = [JSONRenderer, EventStreamRenderer]

    @extend_schema(
        parameters=[AFTER_PARAMETER],
        responses={(200, "text/event-stream"): SSE_EVENT, **error_responses(400), **READ_ERRORS},
        summary="The run's events as server-sent events; resumes after Last-Event-ID",
    )
    def get(self, request, run_id):
        run = _run_or_404(run_id)
        return event_stream_response(
            request,
            keys=[run.pk],
            read_after=partial(stream_read, run),
            after=resume_after(request),
        )


def resume_after(request) -> int:
    """The seq a stream starts after: Last-Event-ID (an EventSource reconnecting), else
    `?after=`."""
    last_event_id = request.headers.get("Last-Event-ID")
    if last_event_id:
        return _seq(last_event_id, field="Last-Event-ID")
    return _seq(request.query_params.get("after"))


def event_stream_response(
    request, *, keys: Iterable, read_after: StreamReader, after: int
) -> StreamingHttpResponse:
    """The text/event-stream response of a stream: woken by announcements of `keys` under an
    ASGI server, polling under WSGI."""
    if isinstance(request._request, ASGIRequest):
        # This thread (Django's for this request) idles until the stream ends: its
        # connection goes back now rather than staying open per stream.
        connection.close()
        content: Iterator[str] | AsyncIterator[str] = announced_stream(keys, read_after, after)
    else:
        # A WSGI server would buffer an async iterator to the end: it gets the polling one.
        content = polled_stream(read_after, after)
    response = StreamingHttpResponse(content, content_type="text/event-stream")
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
