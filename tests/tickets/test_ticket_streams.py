"""The live desk's streams under ASGI (DESIGN §14), served by config.asgi's application as
uvicorn serves it: a ticket's changes (/api/tickets/<ref>/events/stream/), the header's
notification count (/api/notifications/stream/) and a list's (/api/ticket-list/stream/),
each woken by its key's announcement (config/live.py), not by a timer and not on a thread
of its own."""

import json
import statistics
import threading
import time

import pytest
from django.contrib.auth import get_user_model
from django.db import connection, transaction

from agent import api
from tests.agent.test_live_streams import AsgiStream, token_for
from tickets import services
from tickets.changes import notifications_mark_read, ticket_change_append
from tickets.models import Ticket, TicketChange

pytestmark = pytest.mark.django_db(transaction=True)


class FrameStream(AsgiStream):
    """AsgiStream for frames with or without an id (the notification count has none)."""

    async def _send(self, message: dict) -> None:
        if message["type"] == "http.response.start":
            await super()._send(message)
            return
        text = message.get("body", b"").decode()
        self.body += text
        self._buffer += text
        while "\n\n" in self._buffer:
            block, self._buffer = self._buffer.split("\n\n", 1)
            fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
            if "event" in fields:
                self.frames.put(
                    {
                        "id": int(fields["id"]) if "id" in fields else None,
                        "event": fields["event"],
                        "data": json.loads(fields["data"]),
                        "at": time.monotonic(),
                    }
                )


def open_stream(path: str, username: str = "agent", **headers) -> FrameStream:
    stream = FrameStream(path, {**token_for(username), **headers})
    stream.open()
    return stream


def user(username: str):
    return get_user_model().objects.get(username=username)


def ticket(reference: str = "TCK-1001") -> Ticket:
    return Ticket.objects.get(reference=reference)


@pytest.fixture(autouse=True)
def stream_threads_give_back_their_connections():
    yield
    api.close_stream_reader_connections()


@pytest.fixture
def slow_timers(monkeypatch):
    """Only an announcement can deliver in time."""
    monkeypatch.setattr(api, "STREAM_POLL_S", 30.0)
    monkeypatch.setattr(api, "STREAM_RECHECK_S", 30.0)


@pytest.fixture
def live_services(postgres, redis_broker):
    """PostgreSQL (tickets announce by NOTIFY) and Redis (runs announce there), as in CI."""


def test_a_ticket_stream_is_woken_by_each_change_well_under_the_poll_interval(
    demo, live_services, slow_timers
):
    # Given TCK-1001's stream opened after everything so far, every timer at 30 s
    after = ticket().last_change_seq
    stream = open_stream(f"/api/tickets/TCK-1001/events/stream/?after={after}")

    # When five status changes are made one after another
    latencies = []
    for number, status in enumerate(["pending", "open", "pending", "open", "solved"]):
        started = time.monotonic()
        services.ticket_set_status(ticket=ticket(), to_status=status, actor=user("agent"))
        frame = stream.next_frame(timeout=10)
        assert (frame["id"], frame["event"]) == (after + number + 1, "ticket.status")
        assert frame["data"]["data"]["status"] == status
        assert set(frame["data"]) == {"seq", "type", "data", "created_at"}
        latencies.append(frame["at"] - started)
    stream.close()

    # Then each came because it was announced
    assert stream.status == 200
    assert stream.response_headers["content-type"] == "text/event-stream"
    assert max(latencies) < 5.0
    assert statistics.median(latencies) < 0.25
    assert stream.watched_after_close == 0


def test_a_ticket_stream_resumes_after_last_event_id(demo, live_services):
    services.ticket_set_status(ticket=ticket(), to_status="pending", actor=user("agent"))
    services.ticket_set_status(ticket=ticket(), to_status="open", actor=user("agent"))
    top = ticket().last_change_seq

    stream = open_stream("/api/tickets/TCK-1001/events/stream/", **{"Last-Event-ID": str(top - 1)})
    frame = stream.next_frame()
    stream.close()

    assert (frame["id"], frame["data"]["data"]["status"]) == (top, "open")
    assert stream.body.startswith("retry: 2000\n\n")


def test_a_ticket_stream_hears_nothing_of_other_tickets(demo, live_services, monkeypatch):
    monkeypatch.setattr(api, "STREAM_RECHECK_S", 0.2)
    stream = open_stream(f"/api/tickets/TCK-1001/events/stream/?after={ticket().last_change_seq}")

    services.ticket_set_status(ticket=ticket("TCK-1002"), to_status="pending", actor=user("agent"))
    services.ticket_set_status(ticket=ticket(), to_status="pending", actor=user("agent"))

    frame = stream.next_frame()
    time.sleep(0.5)  # a re-read or two more
    stream.close()
    assert (frame["event"], frame["data"]["data"]["from"]) == ("ticket.status", "open")
    assert stream.rest() == []


def test_the_header_count_stream_sends_the_count_and_each_change_of_it(
    demo, live_services, slow_timers
):
    # Given agent2's count stream (TCK-1003 is unassigned in the demo)
    stream = open_stream("/api/notifications/stream/", username="agent2")
    assert stream.next_frame()["data"] == {"unread": 0, "latest": None}

    # When a supervisor assigns them a ticket, and they then read everything
    started = time.monotonic()
    services.ticket_assign(
        ticket=ticket("TCK-1003"), assignee=user("agent2"), actor=user("supervisor")
    )
    assigned = stream.next_frame(timeout=5)
    latency = time.monotonic() - started
    notifications_mark_read(user=user("agent2"))
    read = stream.next_frame(timeout=5)
    stream.close()

    # Then the count went to 1 at once, with the newest notification, and back to 0
    assert assigned["data"]["unread"] == 1
    assert assigned["data"]["latest"]["kind"] == "assigned"
    assert assigned["data"]["latest"]["ticket"] == "TCK-1003"
    assert latency < 2.0
    assert read["data"]["unread"] == 0


def test_a_list_stream_says_which_of_its_tickets_changed(demo, live_services, slow_timers):
    stream = open_stream("/api/ticket-list/stream/?tickets=TCK-1001,TCK-1002")

    services.ticket_set_status(ticket=ticket("TCK-1003"), to_status="pending", actor=user("agent"))
    services.ticket_set_status(ticket=ticket("TCK-1002"), to_status="pending", actor=user("agent"))
    frame = stream.next_frame(timeout=5)
    stream.close()

    assert frame["event"] == "changed"
    assert frame["data"] == {"tickets": ["TCK-1002"], "new": False}


def test_a_list_stream_refuses_what_is_not_a_list_of_references(demo):
    stream = open_stream("/api/ticket-list/stream/?tickets=TCK-1001,DROP")

    assert stream.status == 400
    assert stream.json()["code"] == "invalid"


def test_changes_written_at_once_to_one_ticket_take_every_seq_once(demo, live_services):
    # Given eight threads appending ten changes each to TCK-1001 at the same time
    pk, before = ticket().pk, ticket().last_change_seq
    start = threading.Barrier(8)
    commits: list[int] = []

    def append(worker: int) -> None:
        try:
            start.wait()
            for number in range(10):
                with transaction.atomic():
                    change = ticket_change_append(
                        ticket_id=pk, type="ticket.status", data={"worker": worker, "n": number}
                    )
                    time.sleep(0.001)  # hold the row a little, as a real change would
                commits.append(change.seq)
        finally:
            connection.close()

    threads = [threading.Thread(target=append, args=(worker,)) for worker in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)

    # Then every seq from before + 1 to before + 80 was taken once, by the change that committed
    seqs = list(
        TicketChange.objects.filter(ticket_id=pk, seq__gt=before).values_list("seq", flat=True)
    )
    assert sorted(seqs) == list(range(before + 1, before + 81))
    assert ticket().last_change_seq == before + 80
    assert sorted(commits) == list(range(before + 1, before + 81))
