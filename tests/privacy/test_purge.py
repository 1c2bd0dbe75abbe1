"""Retention (DESIGN §17): `manage.py purge_data` takes message bodies (and every copy of them:
ticket changes, events, notifications, admin's log), run transcripts and tool results older
than DATA_RETENTION_DAYS, keeps the audit trail, and beat runs it daily."""

from datetime import timedelta
from io import StringIO
from typing import cast

import pytest
from django.apps import apps
from django.conf import settings
from django.contrib.admin.models import CHANGE, LogEntry
from django.core import serializers
from django.core.management import call_command
from django.utils import timezone
from rest_framework.test import APIClient

from agent.models import AgentMessage, AgentRun, RunEvent, ToolCallLog
from ops.tasks import purge_data
from refunds.models import RefundConfirmation, RefundEvent, RefundRequest
from tests.factories import (
    AgentRunFactory,
    RefundProposalFactory,
    TicketFactory,
    TicketMessageFactory,
)
from tickets import services
from tickets.models import (
    Notification,
    SatisfactionSurvey,
    Ticket,
    TicketChange,
    TicketEvent,
    TicketMessage,
)
from tickets.satisfaction import survey_rate

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def own_media(media):
    """Files of this test's own: the purge sweeps the attachment folder, and other tests'
    files must not be counted."""


def backdate(rows, days: int) -> None:
    rows.update(created_at=timezone.now() - timedelta(days=days))


def a_ticket_with_history(*, days_old: int):
    """A ticket with a customer message, a finished run (transcript, events, a tool call),
    a refund proposal and a ticket event, all written `days_old` days ago."""
    ticket = TicketFactory()
    message = TicketMessageFactory(ticket=ticket, body="Call me on +86 138 0013 8000")
    run = AgentRunFactory(
        ticket=ticket,
        status=AgentRun.Status.COMPLETED,
        final_answer="The mug is refundable.",
        draft_reply="Dear Li Wei, we have refunded 129.00 CNY.",
    )
    AgentMessage.objects.create(run=run, seq=1, role="user", content="Refund the mug")
    AgentMessage.objects.create(run=run, seq=2, role="assistant", content="Proposed.")
    RunEvent.objects.create(run=run, seq=1, type="message", data={"content": "Proposed."})
    call = ToolCallLog.objects.create(
        run=run,
        ticket=ticket,
        tool_call_id="call_1",
        tool_name="get_order",
        arguments={"order_id": ticket.order.order_id},
        arguments_raw=f'{{"order_id": "{ticket.order.order_id}"}}',
        args_digest="d" * 64,
        ok=True,
        result={"ok": True, "note": "l***@example.com"},
        full_result='{"ok": true, "note": "long"}',
        actor=run.started_by,
        actor_role="agent",
        elapsed_ms=12,
    )
    refund = RefundProposalFactory(ticket=ticket)
    refund.confirmations.update(
        requester_note={"words": "Refund Li, call her on +86 138 0013 8000", "flags": []}
    )
    TicketEvent.objects.create(ticket=ticket, type="status", data={"to": "pending"})
    for model in (TicketMessage, AgentMessage, RunEvent, ToolCallLog, AgentRun):
        backdate(model.objects.filter(pk__in=_pks(model, ticket)), days_old)
    backdate(RefundEvent.objects.filter(refund_request=refund), days_old)
    backdate(RefundConfirmation.objects.filter(refund_request=refund), days_old)
    return ticket, message, run, call, refund


def _pks(model, ticket):
    if model is TicketMessage:
        return model.objects.filter(ticket=ticket).values("pk")
    if model in (AgentMessage, RunEvent):
        return model.objects.filter(run__ticket=ticket).values("pk")
    return model.objects.filter(ticket=ticket).values("pk")


def test_it_purges_what_is_past_retention_and_keeps_the_audit_trail():
    # Given a ticket from 400 days ago and one from 10 days ago (retention 365 days)
    old_ticket, old_message, old_run, old_call, old_refund = a_ticket_with_history(days_old=400)
    _, new_message, new_run, new_call, _ = a_ticket_with_history(days_old=10)
    refund_events = RefundEvent.objects.count()
    out = StringIO()

    # When the purge runs
    call_command("purge_data", stdout=out)

    # Then the old words are gone
    old_message.refresh_from_db()
    assert old_message.body == ""
    assert not AgentMessage.objects.filter(run=old_run).exists()
    old_run.refresh_from_db()
    assert old_run.final_answer == "" and old_run.draft_reply == ""
    assert list(RunEvent.objects.filter(run=old_run).values_list("data", flat=True)) == [
        {"purged": True}
    ]
    old_call.refresh_from_db()
    assert old_call.result == {"ok": True, "purged": True}
    assert old_call.full_result == ""
    # and the record of what happened stays: the rows, the log's metadata, the refund trail
    assert (old_message.author_kind, old_message.ticket_id) == ("customer", old_ticket.pk)
    assert (old_call.tool_name, old_call.ok, old_call.elapsed_ms, old_call.actor_role) == (
        "get_order",
        True,
        12,
        "agent",
    )
    assert old_call.arguments == {"order_id": old_ticket.order.order_id}
    assert old_run.status == "completed"
    assert RefundRequest.objects.get(pk=old_refund.pk).explanation == "The mug arrived in pieces."
    (old_version,) = RefundConfirmation.objects.filter(refund_request=old_refund)
    assert old_version.requester_note == {"purged": True}
    assert old_version.fingerprint and old_version.params
    assert RefundEvent.objects.count() == refund_events
    assert TicketEvent.objects.filter(ticket=old_ticket).count() >= 1
    # and nothing younger than the retention was touched
    new_message.refresh_from_db()
    new_call.refresh_from_db()
    assert RefundConfirmation.objects.filter(requester_note__has_key="words").count() == 1
    assert new_message.body == "Call me on +86 138 0013 8000"
    assert AgentMessage.objects.filter(run=new_run).count() == 2
    assert new_call.result == {"ok": True, "note": "l***@example.com"}
    # and the command said what it did
    text = out.getvalue()
    assert "Keeping 365 days" in text
    # (the customer's message and the desk's note of the proposal)
    assert "ticket message bodies: 2 purged so far" in text
    assert "ticket message bodies: 2 purged\n" in text
    assert "run transcript messages: 2 purged" in text
    assert "tool results: 1 purged" in text
    assert "the requester's words on proposals: 1 purged" in text
    assert "Total: 8 purged" in text


def test_a_dry_run_counts_and_changes_nothing():
    _, old_message, old_run, old_call, _ = a_ticket_with_history(days_old=400)
    out = StringIO()

    call_command("purge_data", "--dry-run", stdout=out)

    old_message.refresh_from_db()
    old_call.refresh_from_db()
    assert old_message.body == "Call me on +86 138 0013 8000"
    assert AgentMessage.objects.filter(run=old_run).count() == 2
    assert old_call.result == {"ok": True, "note": "l***@example.com"}
    assert "run transcript messages: 2 would be purged" in out.getvalue()
    assert "Total: 8 would be purged" in out.getvalue()


def test_it_follows_data_retention_days_and_purges_nothing_twice(settings):
    # Given a retention of 5 days and a ticket 10 days old
    settings.DATA_RETENTION_DAYS = 5
    _, message, _, _, _ = a_ticket_with_history(days_old=10)

    # When the daily task runs twice
    first = purge_data()
    second = purge_data()

    # Then the first run took the old data and the second found nothing left
    message.refresh_from_db()
    assert message.body == ""
    assert first["ticket message bodies"] == 2
    assert first["tool results"] == 1
    assert set(second.values()) == {0}


def test_it_leaves_a_run_that_has_not_ended_alone():
    _, _, run, _, _ = a_ticket_with_history(days_old=400)
    AgentRun.objects.filter(pk=run.pk).update(status=AgentRun.Status.RUNNING)

    call_command("purge_data", stdout=StringIO())

    assert AgentMessage.objects.filter(run=run).count() == 2


def test_beat_runs_the_purge_daily():
    entries = [
        entry
        for entry in settings.CELERY_BEAT_SCHEDULE.values()
        if entry["task"] == "ops.tasks.purge_data"
    ]

    assert entries == [{"task": "ops.tasks.purge_data", "schedule": 24 * 3600.0}]
    assert settings.DATA_RETENTION_DAYS == 365


# --- every copy of the words goes with them (issue 43, finding 2) ----------------------------

# What the customer, the agents and the replies said on the old ticket: none of these words may
# be left anywhere once it is past retention.
CUSTOMER_WORDS = "Quokka marmalade zeppelin: ring me on +86 138 0013 8000"
ESCALATION_NOTE = "Wombat suspects the courier"
HANDLED_NOTE = "Narwhal courier confirmed"
CLAIM = "The periwinkle teapot was refunded"
SURVEY_COMMENT = "Axolotl-speed answers, thank you"
SECRET_WORDS = (
    "quokka",
    "marmalade",
    "zeppelin",
    "0013 8000",
    "wombat",
    "narwhal",
    "periwinkle",
    "axolotl",
)


def api_as(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def words_left(text: str) -> list[str]:
    return [word for word in SECRET_WORDS if word in text.lower()]


def an_old_ticket_where_everyone_wrote(*, agent, intern, supervisor):
    """A ticket of the agent's where the customer wrote, an intern escalated, a supervisor
    handled it, the agent confirmed a reply the claim check contradicted, and a run's answer
    claimed a refund: every one of them 400 days ago."""
    ticket = cast(Ticket, TicketFactory(assignee=agent, subject="Order question"))
    services.ticket_receive_email(
        sender=ticket.customer.email,
        name=ticket.customer.name,
        subject=f"Re: [{ticket.reference}] Order question",
        body=CUSTOMER_WORDS,
        message_id="<old-words@example.com>",
    )
    services.ticket_escalate(ticket=ticket, note=ESCALATION_NOTE, actor=intern)
    services.ticket_clear_escalation(ticket=ticket, actor=supervisor, note=HANDLED_NOTE)
    order_id = ticket.order.order_id if ticket.order else None
    claim = {"text": CLAIM, "order_id": order_id, "claimed": "refunded"}
    services.ticket_write(
        ticket=ticket,
        author=agent,
        body=f"{CLAIM}, as you asked.",
        visibility="public",
        claims_check=lambda body: [{**claim, "actual": "none"}],
        confirm_claims=True,
    )
    AgentRunFactory(
        ticket=ticket,
        status=AgentRun.Status.COMPLETED,
        answer_contradicts_state=True,
        answer_check={
            "contradicts": True,
            "claims": ["refunded"],
            "actual": [],
            "false_claims": [{**claim, "actual": "none"}],
        },
    )
    # and the customer rated the ticket with a comment
    survey = SatisfactionSurvey.objects.create(
        ticket=ticket, agent=agent, expires_at=timezone.now() + timedelta(days=1)
    )
    survey_rate(survey=survey, rating="good", comment=SURVEY_COMMENT)
    # and an administrator changed the customer's message in admin, which logged it by name
    LogEntry.objects.log_actions(
        user_id=supervisor.pk,
        queryset=TicketMessage.objects.filter(ticket=ticket, author_kind="customer"),
        action_flag=CHANGE,
        change_message=[{"changed": {"fields": ["Visibility"]}}],
    )
    for model in (TicketMessage, TicketChange, TicketEvent, Notification, AgentRun):
        backdate(model.objects.filter(ticket=ticket), 400)
    backdate(SatisfactionSurvey.objects.filter(ticket=ticket), 400)
    LogEntry.objects.update(action_time=timezone.now() - timedelta(days=400))
    return ticket


def test_it_leaves_no_word_of_a_purged_message_in_events_notifications_or_any_table(
    agent_user, intern, supervisor
):
    # Given an old ticket whose words were copied into its changes, events, notifications and
    # a run's answer check, and a recent ticket of the same agent
    old = an_old_ticket_where_everyone_wrote(agent=agent_user, intern=intern, supervisor=supervisor)
    recent = cast(Ticket, TicketFactory(assignee=agent_user))
    services.ticket_receive_email(
        sender=recent.customer.email,
        name=recent.customer.name,
        subject=f"Re: [{recent.reference}] Recent",
        body="Platypus parcel, still recent",
        message_id="<recent-words@example.com>",
    )
    kinds_before = list(TicketChange.objects.filter(ticket=old).values_list("seq", "type"))
    notified_before = Notification.objects.filter(ticket=old).count()

    # When the purge runs
    call_command("purge_data", stdout=StringIO())

    # Then the live desk's API, as each person who was told, says none of it
    for user in (agent_user, intern, supervisor):
        events = api_as(user).get(f"/api/tickets/{old.reference}/events/")
        notifications = api_as(user).get("/api/notifications/")
        detail = api_as(user).get(f"/api/tickets/{old.reference}/")
        assert (events.status_code, notifications.status_code, detail.status_code) == (200,) * 3
        for response in (events, notifications, detail):
            assert words_left(response.content.decode()) == []
    # and no table of the desk holds a word of it
    for model in apps.get_models():
        if model._meta.app_label in ("tickets", "agent", "refunds", "orders", "admin"):
            dumped = serializers.serialize("json", model._default_manager.all())
            assert words_left(dumped) == [], model.__name__
    # and what happened stays: every change with its type, the notifications, the claims' kinds
    assert list(TicketChange.objects.filter(ticket=old).values_list("seq", "type")) == kinds_before
    assert Notification.objects.filter(ticket=old).count() == notified_before
    customer_said = TicketChange.objects.get(ticket=old, type="message.created", seq=1)
    assert customer_said.data["author_kind"] == "customer"
    assert (customer_said.data["body"], customer_said.data["purged"]) == ("", True)
    confirmed = TicketEvent.objects.get(ticket=old, type="claims_confirmed")
    assert [claim["claimed"] for claim in confirmed.data["claims"]] == ["refunded"]
    assert Notification.objects.get(ticket=old, kind="escalated").text == (
        f"{old.reference} was escalated"
    )
    # and the recent ticket's words are all there
    recent_said = api_as(agent_user).get(f"/api/tickets/{recent.reference}/events/").json()
    assert [change["data"]["body"] for change in recent_said] == ["Platypus parcel, still recent"]
    told = api_as(agent_user).get("/api/notifications/").json()["results"][0]
    assert told["data"]["body"] == "Platypus parcel, still recent"


def test_a_dry_run_counts_the_copies_and_changes_none(agent_user, intern, supervisor):
    old = an_old_ticket_where_everyone_wrote(agent=agent_user, intern=intern, supervisor=supervisor)
    out = StringIO()

    call_command("purge_data", "--dry-run", stdout=out)

    text = out.getvalue()
    # message.created of the customer's mail, the escalation's note and the reply, the
    # escalation raised and handled, and the customer's rating
    assert "words in ticket changes: 6 would be purged" in text
    # the agent told of the customer's mail, of the handled escalation and of the rating, the
    # supervisor of the escalation, the intern of its handling
    assert "words in notifications: 5 would be purged" in text
    assert "words in ticket events: 4 would be purged" in text
    assert "satisfaction comments: 1 would be purged" in text
    assert "claims quoted in run answer checks: 1 would be purged" in text
    assert "admin log entries naming messages: 1 would be purged" in text
    dumped = serializers.serialize("json", TicketChange.objects.filter(ticket=old))
    assert "quokka" in dumped.lower()
