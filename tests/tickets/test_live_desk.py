"""The live desk (DESIGN §14): a ticket's changes in order from the services where they happen,
GET /api/tickets/<ref>/events/ (after=, Last-Event-ID, roles, 404), and the notifications
they bring (who gets what, GET /api/notifications/, POST /api/notifications/read/)."""

from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.core import mail as outbox
from django.utils import timezone
from rest_framework.test import APIClient

from refunds.execution import refund_execute
from refunds.services import refund_approve, refund_propose, refund_reject
from tests.agent.runs import drive, start_run
from tickets import services, sla
from tickets.changes import ticket_change_append
from tickets.models import Notification, Ticket, TicketChange

pytestmark = pytest.mark.django_db

# The list's "Customer replied" mark on TCK-1001's row.
REPLIED = 'data-customer-replied="TCK-1001"'


def user(username: str):
    return get_user_model().objects.get(username=username)


def ticket(reference: str = "TCK-1001") -> Ticket:
    return Ticket.objects.get(reference=reference)


def api_as(username: str) -> APIClient:
    client = APIClient()
    client.force_authenticate(user(username))
    return client


def changes(reference: str = "TCK-1001", after: int = 0) -> list[tuple[str, dict]]:
    return [
        (change.type, change.data)
        for change in TicketChange.objects.filter(
            ticket__reference=reference, seq__gt=after
        ).order_by("seq")
    ]


def last_seq(reference: str = "TCK-1001") -> int:
    return ticket(reference).last_change_seq


def notifications(username: str) -> list[tuple[str, str]]:
    return list(
        Notification.objects.filter(recipient__username=username)
        .order_by("id")
        .values_list("kind", "ticket__reference")
    )


def assign(reference: str, to: str | None, by: str = "supervisor") -> None:
    services.ticket_assign(
        ticket=ticket(reference), assignee=user(to) if to else None, actor=user(by)
    )


def customer_email(reference: str, body: str, message_id: str) -> None:
    t = ticket(reference)
    services.ticket_receive_email(
        sender=t.customer.email,
        name=t.customer.name,
        subject=f"Re: [{reference}] {t.subject}",
        body=body,
        message_id=message_id,
    )


def propose(reference: str = "TCK-1001", username: str = "agent", amount: str = "129.00"):
    t = ticket(reference)
    return refund_propose(
        ticket=t,
        order=t.order,
        amount=Decimal(amount),
        reason="damaged",
        explanation="Arrived broken.",
        requested_by=user(username),
        role="agent",
    ).refund


# --- one change per thing that happened, in order -----------------------------------------


def test_it_numbers_a_tickets_changes_from_one_on_the_tickets_counter(demo):
    before = last_seq()

    first = ticket_change_append(
        ticket_id=ticket().pk, type=TicketChange.Type.TICKET_STATUS, data={"status": "pending"}
    )
    second = ticket_change_append(
        ticket_id=ticket().pk, type=TicketChange.Type.TICKET_STATUS, data={"status": "open"}
    )

    assert (first.seq, second.seq) == (before + 1, before + 2)
    assert last_seq() == before + 2
    # Another ticket counts on its own.
    other = ticket_change_append(
        ticket_id=ticket("TCK-1002").pk, type=TicketChange.Type.TICKET_STATUS, data={}
    )
    assert other.seq == last_seq("TCK-1002")


def test_a_note_appends_message_created_with_the_message(demo):
    before = last_seq()

    note = services.ticket_write(
        ticket=ticket(), author=user("intern"), body="Photo looks genuine.", visibility="internal"
    )

    assert changes(after=before) == [
        (
            "message.created",
            {
                "id": note.pk,
                "author_kind": "agent",
                "author": "intern",
                "body": "Photo looks genuine.",
                "visibility": "internal",
                "delivery": "not_applicable",
                "created_at": note.created_at.isoformat(),
            },
        )
    ]


def test_a_reply_appends_created_queued_then_delivery_sent(demo, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    before = last_seq()

    reply = services.ticket_write(
        ticket=ticket(), author=user("agent"), body="Refund on its way.", visibility="public"
    )
    services.reply_send(message_pk=reply.pk)

    (created_type, created), (delivery_type, delivery) = changes(after=before)
    assert (created_type, created["id"], created["delivery"]) == (
        "message.created",
        reply.pk,
        "queued",
    )
    reply.refresh_from_db()
    assert (delivery_type, delivery) == (
        "message.delivery",
        {
            "id": reply.pk,
            "delivery": "sent",
            "from": "queued",
            "to": "sent",
            "error": "",
            "sent_at": reply.sent_at.isoformat(),
        },
    )
    assert len(outbox.outbox) == 1


def test_a_reply_given_up_appends_delivery_failed_and_a_retry_queued(demo):
    reply = services.ticket_write(
        ticket=ticket(), author=user("agent"), body="Hello", visibility="public"
    )
    before = last_seq()

    services.reply_give_up(message_pk=reply.pk, error="550 mailbox unavailable")
    reply.refresh_from_db()
    services.reply_retry(message=reply, actor=user("agent"))

    assert [
        (kind, data["from"], data["to"], data["error"]) for kind, data in changes(after=before)
    ] == [
        ("message.delivery", "queued", "failed", "550 mailbox unavailable"),
        ("message.delivery", "failed", "queued", ""),
    ]


def test_status_assignment_and_escalation_append_their_changes(demo):
    assign("TCK-1001", "agent")
    before = last_seq()

    services.ticket_set_status(ticket=ticket(), to_status="pending", actor=user("agent"))
    services.ticket_assign(ticket=ticket(), assignee=user("agent2"), actor=user("agent"))
    services.ticket_escalate(ticket=ticket(), note="Over my limit.", actor=user("agent2"))
    services.ticket_clear_escalation(ticket=ticket(), actor=user("supervisor"), note="Done.")

    kinds = [(kind, data) for kind, data in changes(after=before) if kind != "message.created"]
    assert kinds == [
        (
            "ticket.status",
            {"status": "pending", "from": "open", "to": "pending", "reason": "", "by": "agent"},
        ),
        (
            "ticket.assigned",
            {"assignee": "agent2", "from": "agent", "to": "agent2", "by": "agent"},
        ),
        ("ticket.escalated", {"escalated": True, "note": "Over my limit.", "by": "agent2"}),
        ("ticket.escalated", {"escalated": False, "note": "Done.", "by": "supervisor"}),
    ]


def test_priority_tags_cc_and_an_sla_breach_append_ticket_details(demo):
    before = last_seq()

    services.ticket_set_priority(ticket=ticket(), priority="urgent", actor=user("agent"))
    services.ticket_change_tags(ticket=ticket(), add=["vip"], actor=user("agent"))
    services.ticket_set_cc(ticket=ticket(), cc=["boss@example.com"], actor=user("agent"))
    Ticket.objects.filter(pk=ticket().pk).update(first_response_due_at=timezone.now())
    sla.record_breaches()

    assert changes(after=before) == [
        ("ticket.details", {"changed": "priority"}),
        ("ticket.details", {"changed": "tags"}),
        ("ticket.details", {"changed": "cc"}),
        ("ticket.details", {"changed": "sla"}),
    ]
    assert notifications("agent") == []  # a page redraws; nobody is told


def test_a_refused_change_appends_nothing(demo):
    before = last_seq()

    with pytest.raises(Exception, match="cannot go from open to closed"):
        services.ticket_set_status(ticket=ticket(), to_status="closed", actor=user("agent"))

    assert last_seq() == before
    assert changes(after=before) == []


def test_a_customers_email_appends_message_created_and_reopens_with_ticket_status(demo):
    services.ticket_set_status(ticket=ticket(), to_status="pending", actor=user("agent"))
    before = last_seq()

    customer_email("TCK-1001", "Any news?", "<news-1@example.com>")

    assert [
        (kind, data.get("author_kind"), data.get("status")) for kind, data in changes(after=before)
    ] == [
        ("message.created", "customer", None),
        ("ticket.status", None, "open"),
    ]


def test_refund_changes_append_refund_status_with_request_order_amount_and_status(demo, settings):
    settings.REFUND_ADAPTER = "simulated"
    before = last_seq()

    refund = propose()
    confirmation = refund.confirmations.get(status="pending")
    refund_approve(
        refund=refund,
        reviewer=user("reviewer"),
        version=confirmation.version,
        fingerprint=confirmation.fingerprint,
    )
    refund_execute(refund_pk=refund.pk)

    statuses = [data for kind, data in changes(after=before) if kind == "refund.status"]
    assert [data["status"] for data in statuses] == [
        "pending_approval",
        "approved",
        "executing",
        "succeeded",
    ]
    assert statuses[0] == {
        "request_id": refund.request_id,
        "order_id": "202610110087",
        "amount": "129.00",
        "currency": "CNY",
        "status": "pending_approval",
    }


def test_a_run_appends_run_started_then_run_completed_after_its_answer(demo):
    before = last_seq()

    run = start_run("How much did the customer pay for the mug?")
    drive(run)

    kinds = [kind for kind, _ in changes(after=before)]
    assert kinds[0] == "run.started"
    assert kinds[-2:] == ["message.created", "run.completed"]
    started, completed = changes(after=before)[0][1], changes(after=before)[-1][1]
    assert started == {"run": str(run.pk), "actor": "agent", "role": "agent"}
    assert completed == {"run": str(run.pk), "status": "completed", "stop_reason": "final_answer"}


def test_a_cancelled_run_appends_run_completed_saying_cancelled(demo):
    run = start_run()
    before = last_seq()

    from agent.services import run_request_cancel

    run_request_cancel(run=run, user=user("agent"))

    assert changes(after=before) == [
        ("run.completed", {"run": str(run.pk), "status": "cancelled", "stop_reason": "cancelled"})
    ]


# --- GET /api/tickets/<ref>/events/ ---------------------------------------------------------


def test_the_api_lists_the_tickets_changes_in_order_after_a_seq(demo):
    services.ticket_set_status(ticket=ticket(), to_status="pending", actor=user("agent"))
    services.ticket_set_status(ticket=ticket(), to_status="open", actor=user("agent"))
    services.ticket_set_status(ticket=ticket("TCK-1002"), to_status="pending", actor=user("agent"))
    top = last_seq()

    everything = api_as("agent").get("/api/tickets/TCK-1001/events/")
    after = api_as("agent").get(f"/api/tickets/TCK-1001/events/?after={top - 1}")

    assert everything.status_code == 200
    seqs = [event["seq"] for event in everything.json()]
    assert seqs == list(range(1, top + 1))
    assert set(everything.json()[0]) == {"seq", "type", "data", "created_at"}
    assert after.json() == [everything.json()[-1]]
    assert after.json()[0]["type"] == "ticket.status"
    assert after.json()[0]["data"]["status"] == "open"


def test_the_api_resumes_after_last_event_id(demo):
    services.ticket_set_status(ticket=ticket(), to_status="pending", actor=user("agent"))
    top = last_seq()

    response = api_as("agent").get("/api/tickets/TCK-1001/events/", HTTP_LAST_EVENT_ID=str(top - 1))

    assert [event["seq"] for event in response.json()] == [top]


@pytest.mark.parametrize("username", ["intern", "agent", "supervisor", "reviewer"])
def test_every_desk_role_that_sees_the_ticket_sees_its_changes(demo, username):
    services.ticket_set_status(ticket=ticket(), to_status="pending", actor=user("agent"))

    response = api_as(username).get("/api/tickets/TCK-1001/events/")

    assert response.status_code == 200
    assert response.json()[-1]["data"]["status"] == "pending"


def test_someone_outside_the_desk_is_refused_and_anonymous_is_asked_to_log_in(demo, outsider):
    client = APIClient()
    client.force_authenticate(outsider)

    assert client.get("/api/tickets/TCK-1001/events/").status_code == 403
    assert APIClient().get("/api/tickets/TCK-1001/events/").status_code == 401
    assert client.get("/api/tickets/TCK-1001/events/stream/").status_code == 403


def test_an_unknown_ticket_is_404_and_a_bad_after_is_400(demo):
    assert api_as("agent").get("/api/tickets/TCK-9999/events/").status_code == 404
    assert api_as("agent").get("/api/tickets/TCK-9999/events/stream/").status_code == 404
    bad = api_as("agent").get("/api/tickets/TCK-1001/events/?after=soon")
    assert bad.status_code == 400
    assert bad.json()["code"] == "invalid"


def test_no_change_of_another_ticket_leaks_into_a_tickets_events(demo):
    services.ticket_write(
        ticket=ticket("TCK-1002"),
        author=user("agent"),
        body="Secret of 1002",
        visibility="internal",
    )

    events = api_as("agent").get("/api/tickets/TCK-1001/events/").json()

    assert "Secret of 1002" not in str(events)


# --- notifications --------------------------------------------------------------------------


def test_an_assignee_is_notified_unless_they_assigned_it_themselves(demo):
    assign("TCK-1003", "agent", by="supervisor")
    assign("TCK-1002", "agent", by="agent")

    assert notifications("agent") == [("assigned", "TCK-1003")]
    assert notifications("supervisor") == []


def test_a_customer_reply_notifies_the_assignee_only(demo):
    assign("TCK-1001", "agent2")
    Notification.objects.all().delete()

    customer_email("TCK-1001", "It is still broken.", "<still-broken@example.com>")

    assert notifications("agent2") == [("customer_replied", "TCK-1001")]
    assert notifications("agent") == []
    assert notifications("supervisor") == []


def test_an_escalation_notifies_supervisors_and_its_handling_the_escalator_and_assignee(demo):
    assign("TCK-1001", "agent2")
    Notification.objects.all().delete()

    services.ticket_escalate(ticket=ticket(), note="Needs a supervisor.", actor=user("intern"))
    assert notifications("supervisor") == [("escalated", "TCK-1001")]
    assert notifications("intern") == []

    services.ticket_clear_escalation(ticket=ticket(), actor=user("supervisor"))
    assert notifications("intern") == [("escalation_handled", "TCK-1001")]
    assert notifications("agent2") == [("escalation_handled", "TCK-1001")]
    assert notifications("supervisor") == [("escalated", "TCK-1001")]


def test_a_refund_settled_or_rejected_notifies_the_tickets_assignee(demo, settings):
    settings.REFUND_ADAPTER = "simulated"
    assign("TCK-1001", "agent2")
    Notification.objects.all().delete()

    refund = propose()
    pending = refund.confirmations.get(status="pending")
    refund_approve(
        refund=refund,
        reviewer=user("reviewer"),
        version=pending.version,
        fingerprint=pending.fingerprint,
    )
    assert notifications("agent2") == []  # approved is not settled yet
    refund_execute(refund_pk=refund.pk)
    assert notifications("agent2") == [("refund_settled", "TCK-1001")]
    assert Notification.objects.get(recipient__username="agent2").text == (
        "The refund of 129.00 CNY on TCK-1001 was refunded"
    )

    assign("TCK-1004", "agent2")
    other = propose("TCK-1004", amount="100.00")
    refund_reject(refund=other, reviewer=user("reviewer"), version=1, note="No proof.")
    assert notifications("agent2")[-1] == ("refund_rejected", "TCK-1004")
    assert notifications("agent") == []


def test_the_notification_api_lists_yours_newest_first_with_the_unread_count(demo):
    assign("TCK-1003", "agent")
    assign("TCK-1002", "agent")
    assign("TCK-1004", "agent2")

    body = api_as("agent").get("/api/notifications/").json()

    assert body["count"] == 2
    assert body["unread"] == 2
    assert [n["ticket"] for n in body["results"]] == ["TCK-1002", "TCK-1003"]
    first = body["results"][0]
    assert set(first) >= {"id", "kind", "ticket", "text", "actor", "data", "read", "created_at"}
    assert (first["kind"], first["actor"], first["read"]) == ("assigned", "supervisor", False)


def test_reading_by_ids_marks_only_your_own_and_all_marks_the_rest(demo):
    assign("TCK-1003", "agent")
    assign("TCK-1002", "agent")
    assign("TCK-1004", "agent2")
    mine = list(
        Notification.objects.filter(recipient__username="agent")
        .order_by("id")
        .values_list("pk", flat=True)
    )
    theirs = Notification.objects.get(recipient__username="agent2").pk

    response = api_as("agent").post(
        "/api/notifications/read/", {"ids": [mine[0], theirs]}, format="json"
    )

    assert response.status_code == 200
    assert response.json() == {"read": 1, "unread": 1}
    assert Notification.objects.get(pk=theirs).read_at is None
    unread = api_as("agent").get("/api/notifications/?unread=true").json()
    assert [n["id"] for n in unread["results"]] == [mine[1]]

    everything = api_as("agent").post("/api/notifications/read/", {"all": True}, format="json")
    assert everything.json() == {"read": 1, "unread": 0}
    assert api_as("agent").get("/api/notifications/").json()["unread"] == 0


@pytest.mark.parametrize(
    "body",
    [{}, {"ids": [1], "all": True}, {"all": False}, {"all": "yes"}, {"ids": "1"}, {"ids": [0]}],
)
def test_a_bad_read_request_is_400_and_reads_nothing(demo, body):
    assign("TCK-1003", "agent")

    response = api_as("agent").post("/api/notifications/read/", body, format="json")

    assert response.status_code == 400
    assert response.json()["code"] == "invalid"
    assert Notification.objects.filter(read_at__isnull=False).count() == 0


def test_the_assignees_page_view_marks_a_customer_reply_seen_on_the_list(demo, client):
    assign("TCK-1001", "agent")
    customer_email("TCK-1001", "Hello again", "<hello-again@example.com>")
    client.force_login(user("agent"))

    before = client.get("/tickets/").content.decode()
    client.get("/tickets/TCK-1001/")
    after = client.get("/tickets/").content.decode()

    assert REPLIED in before
    assert REPLIED not in after


def test_a_customer_reply_after_the_assignee_looked_is_unseen_again(demo, client):
    assign("TCK-1001", "agent")
    client.force_login(user("agent"))
    client.get("/tickets/TCK-1001/")
    assert REPLIED not in client.get("/tickets/").content.decode()

    customer_email("TCK-1001", "One more thing", "<one-more@example.com>")

    assert REPLIED in client.get("/tickets/").content.decode()
    # Someone else opening it changes nothing for the assignee.
    client.force_login(user("agent2"))
    client.get("/tickets/TCK-1001/")
    client.force_login(user("agent"))
    assert REPLIED in client.get("/tickets/").content.decode()


def test_the_header_shows_the_unread_count(demo, client):
    assign("TCK-1003", "agent")
    client.force_login(user("agent"))

    page = client.get("/tickets/").content.decode()

    assert 'id="notification-count"' in page
    assert 'data-unread="1"' in page


def test_a_notification_too_long_for_its_text_is_cut_to_fit(demo):
    long_subject = "x" * 200
    Ticket.objects.filter(reference="TCK-1003").update(subject=long_subject)
    supervisor = user("supervisor")
    supervisor.username = "s" * 150
    supervisor.save()

    services.ticket_assign(ticket=ticket("TCK-1003"), assignee=user("agent"), actor=supervisor)

    text = Notification.objects.get(recipient__username="agent").text
    assert len(text) == 300
    assert text.startswith("TCK-1003 was assigned to you by sss")


def test_under_wsgi_the_stream_polls_and_sends_the_changes_as_server_sent_events(demo, monkeypatch):
    from agent import api as agent_api

    monkeypatch.setattr(agent_api, "STREAM_MAX_S", 0.3)
    services.ticket_set_status(ticket=ticket(), to_status="pending", actor=user("agent"))
    top = last_seq()

    response = api_as("intern").get(f"/api/tickets/TCK-1001/events/stream/?after={top - 1}")

    assert response.status_code == 200
    assert response["Content-Type"] == "text/event-stream"
    body = b"".join(response.streaming_content).decode()
    assert body.startswith("retry: 2000\n\n")
    frame = body.split("\n\n")[1]
    assert frame.startswith(f"id: {top}\nevent: ticket.status\ndata: ")
    assert '"status": "pending"' in frame


def test_a_bad_unread_filter_is_400(demo):
    response = api_as("agent").get("/api/notifications/?unread=maybe")

    assert response.status_code == 400
    assert response.json()["extra"]["fields"] == {"unread": ["Must be true or false."]}
