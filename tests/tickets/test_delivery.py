"""Replies through a real SMTP conversation: Django's smtp backend talking to the fake mail
server of tests/fakes/smtp_server.py on 127.0.0.1. A server that refuses, or is down, keeps
the reply queued and counted; it is sent exactly once when the server takes it, marked failed
after EMAIL_SEND_RETRIES attempts, and nothing is ever lost."""

import os
import subprocess
import sys
import time
from datetime import timedelta

import environ
import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.utils import timezone
from rest_framework.test import APIClient

from config.celery import app as celery_app
from tests.conftest import TEST_QUEUE
from tests.fakes.smtp_server import FakeSMTPServer, HeldSMTPServer
from tests.services import BASE_DIR, WorkerProcess, require_postgres, run_in_threads, wait_for
from tickets import services
from tickets.models import Ticket, TicketEvent, TicketMessage
from tickets.tasks import resend_stalled_replies, send_reply

pytestmark = pytest.mark.django_db

SEND_REPLY = "tickets.tasks.send_reply"
FROM = "support@refund-desk.local"
REPLY = "We are sorry about your mug and are looking into a refund."
REFUSED_GREETING = "mail server answered 421: 4.3.2 Service not available, try again later"
HOLD_LIMIT_S = 10
REFUSED_MAIL = "mail server answered 451: 4.3.0 Mailbox temporarily unavailable, try again later"


@pytest.fixture
def smtp_server(settings):
    """The fake mail server, with Django's smtp backend pointed at it (no TLS, no login)."""
    yield from serve(FakeSMTPServer(), settings)


@pytest.fixture
def held_smtp_server(settings):
    """A mail server that keeps every client waiting for its greeting until `open()`."""
    yield from serve(HeldSMTPServer(hold_limit_s=HOLD_LIMIT_S), settings)


def serve(server: FakeSMTPServer, settings):
    server.start()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST = server.host
    settings.EMAIL_PORT = server.port
    settings.EMAIL_USE_TLS = False
    settings.EMAIL_USE_SSL = False
    settings.EMAIL_HOST_USER = ""
    settings.EMAIL_HOST_PASSWORD = ""
    settings.EMAIL_TIMEOUT = 5
    settings.DEFAULT_FROM_EMAIL = FROM
    yield server
    server.stop()


@pytest.fixture
def published(monkeypatch) -> list[tuple[str, tuple]]:
    """Every task published (its name and arguments), recorded instead of sent to the broker."""
    tasks: list[tuple[str, tuple]] = []

    def send_task(name, args=(), kwargs=None, **options):
        tasks.append((name, tuple(args)))

    monkeypatch.setattr(celery_app, "send_task", send_task)
    return tasks


@pytest.fixture
def api():
    return APIClient()


def staff(username: str):
    return get_user_model().objects.get(username=username)


def queue_reply(body: str = REPLY, reference: str = "TCK-1001") -> TicketMessage:
    ticket = Ticket.objects.get(reference=reference)
    return services.ticket_write(
        ticket=ticket, author=staff("agent"), body=body, visibility="public"
    )


def fail_for_good(reply: TicketMessage, smtp_server, settings) -> TicketMessage:
    """Run the delivery task against a server that refuses every attempt, to the end."""
    settings.EMAIL_SEND_RETRIES = 3
    smtp_server.refuse_until_recovered(at="mail")
    assert send_reply.apply(args=[reply.pk]).get() == "failed"
    reply.refresh_from_db()
    return reply


def retry(api, username: str, reply: TicketMessage):
    api.force_authenticate(staff(username))
    return api.post(f"/api/tickets/TCK-1001/messages/{reply.pk}/retry/", format="json")


def reply_events(type: str) -> list[TicketEvent]:
    return list(TicketEvent.objects.filter(type=type))


def test_a_reply_reaches_the_mail_server_over_smtp(smtp_server, demo):
    reply = queue_reply()

    assert send_reply.apply(args=[reply.pk]).get() == "sent"

    [received] = smtp_server.received
    assert received.mail_from == FROM
    assert received.rcpt_to == ["li.wei@example.com"]
    assert received.header("Subject") == "[TCK-1001] My mug arrived broken"
    assert received.header("From") == FROM
    assert received.header("To") == "li.wei@example.com"
    assert received.header("Message-ID") == reply.message_id
    assert received.header("X-Desk-Ticket") == "TCK-1001"
    assert received.text.startswith(REPLY + "\n")
    reply.refresh_from_db()
    assert (reply.delivery, reply.delivery_attempts) == ("sent", 1)


def test_an_email_url_names_the_smtp_server(smtp_server):
    # django-environ reads smtp://host:port as the plain smtp backend, no TLS, no login
    config = environ.Env.email_url_config(smtp_server.url)
    assert config["EMAIL_BACKEND"] == "django.core.mail.backends.smtp.EmailBackend"
    assert (config["EMAIL_HOST"], config["EMAIL_PORT"]) == ("127.0.0.1", smtp_server.port)
    assert not config.get("EMAIL_USE_TLS") and not config.get("EMAIL_USE_SSL")
    assert not config["EMAIL_HOST_USER"] and not config["EMAIL_HOST_PASSWORD"]

    # and the desk's settings, given only EMAIL_URL, send through that server
    script = (
        "import django; django.setup()\n"
        "from django.core.mail import send_mail\n"
        "send_mail('Configured by EMAIL_URL', 'hello', None, ['someone@example.com'])\n"
    )
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "EMAIL_URL": smtp_server.url,
        "EMAIL_TIMEOUT_S": "5",
    }
    env.pop("DEFAULT_FROM_EMAIL", None)
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    [received] = smtp_server.received
    assert (received.mail_from, received.rcpt_to) == (FROM, ["someone@example.com"])
    assert received.header("Subject") == "Configured by EMAIL_URL"


def test_a_refused_reply_stays_queued_and_counted_until_the_server_takes_it(smtp_server, demo):
    # Given a mail server that turns the next two connections away
    smtp_server.refuse_next(2, at="greeting")
    reply = queue_reply()

    # When the reply is tried while it refuses
    for attempt in (1, 2):
        outcome = services.reply_send(message_pk=reply.pk)

        # Then it stays queued, with the attempt counted and the server's answer kept
        assert outcome == services.DeliveryAttempt("queued", REFUSED_GREETING, attempt)
        reply.refresh_from_db()
        assert (reply.delivery, reply.delivery_attempts) == ("queued", attempt)
        assert reply.delivery_error == REFUSED_GREETING
        assert reply.sent_at is None
    assert smtp_server.received == []

    # and once the server takes it, it is sent, and the error is gone
    assert services.reply_send(message_pk=reply.pk) == services.DeliveryAttempt("sent", "", 3)
    reply.refresh_from_db()
    assert (reply.delivery, reply.delivery_attempts, reply.delivery_error) == ("sent", 3, "")
    assert reply.sent_at is not None
    assert len(smtp_server.received) == 1
    assert len(reply_events("reply_sent")) == 1
    assert (smtp_server.connections, smtp_server.refused) == (3, 2)


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_a_worker_retries_a_refused_reply_and_sends_it_once_when_the_server_recovers(
    smtp_server, demo, api
):
    # Given a worker configured by EMAIL_URL, with a tiny backoff, and a server refusing mail
    smtp_server.refuse_until_recovered(at="mail")
    worker = WorkerProcess(
        TEST_QUEUE,
        log_name="mail-refused",
        extra_env={
            "EMAIL_URL": smtp_server.url,
            "EMAIL_TIMEOUT_S": "5",
            "EMAIL_RETRY_BASE_S": "0.05",
            "EMAIL_SEND_RETRIES": "50",
            "DEFAULT_FROM_EMAIL": FROM,
        },
    ).start()
    try:
        # When an agent replies (the commit sends the task to the worker)
        api.force_authenticate(staff("agent"))
        response = api.post(
            "/api/tickets/TCK-1001/messages/",
            {"body": REPLY, "visibility": "public"},
            format="json",
        )
        assert response.status_code == 201, response.content
        pk = response.json()["id"]

        def attempts() -> int:
            return TicketMessage.objects.values_list("delivery_attempts", flat=True).get(pk=pk)

        # Then while the server refuses, the reply stays queued with its attempts counted
        wait_for(lambda: attempts() >= 2, what="two refused attempts", worker=worker)
        waiting = TicketMessage.objects.get(pk=pk)
        assert waiting.delivery == "queued"
        assert waiting.delivery_error == REFUSED_MAIL
        assert smtp_server.received == []

        # and when the server recovers, the worker's next retry sends it
        smtp_server.recover()
        wait_for(
            lambda: TicketMessage.objects.get(pk=pk).delivery == "sent",
            what="the reply sent",
            worker=worker,
        )

        # and the same task delivered again sends nothing more
        again = send_reply.delay(pk)
        wait_for(lambda: worker.finished(again), what="the redelivered task", worker=worker)
    finally:
        worker.stop()

    sent = TicketMessage.objects.get(pk=pk)
    [received] = smtp_server.received
    assert received.header("Message-ID") == sent.message_id
    assert received.rcpt_to == ["li.wei@example.com"]
    assert sent.delivery_attempts == smtp_server.refused + 1
    assert sent.delivery_error == ""
    assert len(reply_events("reply_sent")) == 1
    assert reply_events("reply_failed") == []


def test_a_reply_the_server_keeps_refusing_fails_after_email_send_retries_attempts(
    smtp_server, demo, settings
):
    reply = queue_reply()

    failed = fail_for_good(reply, smtp_server, settings)

    assert (failed.delivery, failed.delivery_attempts) == ("failed", 3)
    assert failed.delivery_error == REFUSED_MAIL
    assert smtp_server.refused == 3
    assert smtp_server.received == []
    [event] = reply_events("reply_failed")
    assert event.actor is None
    assert event.data == {"message": reply.pk, "error": REFUSED_MAIL}
    assert reply_events("reply_sent") == []


def test_an_agent_sends_a_failed_reply_again(
    smtp_server, demo, settings, api, published, django_capture_on_commit_callbacks
):
    reply = fail_for_good(queue_reply(), smtp_server, settings)

    # When an agent retries it
    with django_capture_on_commit_callbacks(execute=True):
        response = retry(api, "agent", reply)

    # Then it is queued again for a fresh round of attempts, with a new task after commit
    assert response.status_code == 200, response.content
    assert (response.json()["delivery"], response.json()["delivery_error"]) == ("queued", "")
    reply.refresh_from_db()
    assert reply.delivery_attempts == 0
    assert published == [(SEND_REPLY, (reply.pk,))]

    # and once the server takes mail again, it is sent, once
    smtp_server.recover()
    assert send_reply.apply(args=[reply.pk]).get() == "sent"
    reply.refresh_from_db()
    assert (reply.delivery, reply.delivery_attempts, reply.delivery_error) == ("sent", 1, "")
    assert len(smtp_server.received) == 1


@pytest.mark.parametrize("delivery", ["queued", "sent"])
def test_only_a_failed_reply_can_be_retried(
    demo, api, published, django_capture_on_commit_callbacks, delivery
):
    reply = queue_reply()
    TicketMessage.objects.filter(pk=reply.pk).update(delivery=delivery)

    with django_capture_on_commit_callbacks(execute=True):
        response = retry(api, "agent", reply)

    assert response.status_code == 409
    assert response.json()["code"] == "not_failed"
    reply.refresh_from_db()
    assert reply.delivery == delivery
    assert published == []


def test_an_intern_cannot_retry_a_failed_reply(
    smtp_server, demo, settings, api, published, django_capture_on_commit_callbacks
):
    reply = fail_for_good(queue_reply(), smtp_server, settings)

    with django_capture_on_commit_callbacks(execute=True):
        response = retry(api, "intern", reply)

    assert response.status_code == 403
    assert response.json()["code"] == "permission_denied"
    reply.refresh_from_db()
    assert reply.delivery == "failed"
    assert published == []


def test_a_redelivered_task_for_a_sent_reply_sends_nothing(smtp_server, demo):
    reply = queue_reply()
    assert send_reply.apply(args=[reply.pk]).get() == "sent"

    assert send_reply.apply(args=[reply.pk]).get() == "sent"

    assert len(smtp_server.received) == 1
    assert smtp_server.connections == 1
    reply.refresh_from_db()
    assert reply.delivery_attempts == 1
    assert len(reply_events("reply_sent")) == 1


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_the_same_reply_delivered_twice_at_once_is_sent_once(smtp_server, demo):
    require_postgres()
    reply = queue_reply()

    outcomes = run_in_threads(2, lambda _: services.reply_send(message_pk=reply.pk))

    assert sorted(outcomes, key=lambda o: o.attempts) == [
        services.DeliveryAttempt("sent"),  # the second found it sent already
        services.DeliveryAttempt("sent", "", 1),
    ]
    assert len(smtp_server.received) == 1
    reply.refresh_from_db()
    assert (reply.delivery, reply.delivery_attempts) == ("sent", 1)
    assert len(reply_events("reply_sent")) == 1


@pytest.mark.django_db(transaction=True)
def test_a_slow_mail_server_holds_up_no_other_write_of_the_desk(held_smtp_server, demo):
    # On SQLite a transaction held through the mail conversation locked the whole database:
    # the next reply of the desk waited for the mail server.
    reply = queue_reply()

    def write_while_the_reply_waits() -> float:
        assert held_smtp_server.knocked.wait(timeout=5)
        started = time.monotonic()
        queue_reply("We are checking with the courier.", reference="TCK-1002")
        held_smtp_server.open()
        return time.monotonic() - started

    _, waited = run_in_threads(
        2,
        lambda i: (
            services.reply_send(message_pk=reply.pk) if i == 0 else write_while_the_reply_waits()
        ),
    )

    assert waited < 2.5  # a write takes milliseconds; the mail client gives up after 5 s
    reply.refresh_from_db()
    assert (reply.delivery, reply.delivery_attempts) == ("sent", 1)
    assert len(held_smtp_server.received) == 1
    assert len(reply_events("reply_sent")) == 1


@pytest.fixture
def tasks_run_in_place():
    """`.delay()` runs the task here and now, as Celery's eager mode does."""
    celery_app.conf.task_always_eager = True
    yield
    celery_app.conf.task_always_eager = False


def test_the_sweep_resends_only_replies_whose_task_or_retry_was_lost(demo, tasks_run_in_place):
    # Given replies in every state, some older than the sweep's five minutes of grace
    now = timezone.now()
    long_ago = now - timedelta(minutes=10)
    lost = queue_reply("Task lost with the broker.")
    fresh = queue_reply("Task on its way.")
    waiting = queue_reply("Waiting for its backoff.")
    lost_retry = queue_reply("Retry lost with a killed worker.")
    sent = queue_reply("Already sent.")
    failed = queue_reply("Gave up.")
    for reply, delivery, attempts, next_attempt_at in [
        (lost, "queued", 0, None),
        (waiting, "queued", 3, now + timedelta(minutes=20)),
        (lost_retry, "queued", 2, now - timedelta(minutes=6)),
        (sent, "sent", 1, None),
        (failed, "failed", 3, long_ago),
    ]:
        TicketMessage.objects.filter(pk=reply.pk).update(
            delivery=delivery,
            delivery_attempts=attempts,
            created_at=long_ago,
            next_attempt_at=next_attempt_at,
        )

    # Then the stalled ones are the old one never tried and the one long past its retry
    assert sorted(services.replies_stalled(grace=timedelta(minutes=5))) == [
        lost.pk,
        lost_retry.pk,
    ]

    # and the periodic sweep sends exactly those
    assert resend_stalled_replies.apply().get() == 2
    assert sorted(email.extra_headers["Message-ID"] for email in mail.outbox) == sorted(
        [lost.message_id, lost_retry.message_id]
    )
    states = dict(TicketMessage.objects.values_list("pk", "delivery"))
    assert [states[r.pk] for r in (lost, fresh, waiting, lost_retry, sent, failed)] == [
        "sent",
        "queued",
        "queued",
        "sent",
        "sent",
        "failed",
    ]


def test_a_refused_attempt_records_when_the_retry_is_due(smtp_server, demo, settings):
    smtp_server.refuse_next(1, at="greeting")
    settings.EMAIL_RETRY_BASE_S = 60
    reply = queue_reply()
    before = timezone.now()

    # (.apply() runs the retry at once instead of after its countdown)
    assert send_reply.apply(args=[reply.pk]).get() == "sent"

    reply.refresh_from_db()
    assert reply.delivery_attempts == 2
    assert before <= reply.next_attempt_at <= timezone.now() + timedelta(seconds=60)


def test_a_mail_server_that_is_down_loses_nothing(smtp_server, demo, settings, api):
    # Given a mail server that is down (nothing listens on its port any more)
    smtp_server.stop()
    settings.EMAIL_SEND_RETRIES = 2
    reply = queue_reply()

    # When the delivery runs out of attempts
    assert send_reply.apply(args=[reply.pk]).get() == "failed"

    # Then the reply is still on the ticket, word for word, failed and ready to retry
    kept = TicketMessage.objects.get(pk=reply.pk)
    assert (kept.body, kept.visibility, kept.message_id) == (REPLY, "public", reply.message_id)
    assert (kept.delivery, kept.delivery_attempts) == ("failed", 2)
    assert kept.delivery_error == "mail server unavailable (ConnectionRefusedError)"
    api.force_authenticate(staff("agent"))
    shown = api.get("/api/tickets/TCK-1001/").json()["messages"][-1]
    assert (shown["id"], shown["body"], shown["delivery"]) == (reply.pk, REPLY, "failed")
