"""Customer satisfaction (DESIGN §19): solving a ticket emails its customer one survey after
commit, with a good and a bad link (signed, single use, expiring, no login); opening a link
records nothing, its page's POST does; the rating shows on the ticket, in the API and in
/metrics. Django's locmem mail backend keeps what was sent in `mail.outbox`."""

import re
import time
from datetime import timedelta

import pytest
from django.core import mail, signing
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from config.errors import Conflict
from tests.factories import TicketFactory, UserFactory
from tests.services import run_in_threads
from tickets import satisfaction, services
from tickets.models import Notification, SatisfactionSurvey, Ticket, TicketChange
from tickets.tasks import resend_stalled_replies, send_satisfaction_survey

pytestmark = pytest.mark.django_db

SEND_SURVEY = "tickets.tasks.send_satisfaction_survey"
LINK = re.compile(r"^(Good|Bad): (\S+)$", re.M)


@pytest.fixture(autouse=True)
def desk_url(settings):
    settings.DESK_URL = "https://desk.example.com/"
    settings.SATISFACTION_LINK_DAYS = 14


def solve(ticket: Ticket, actor, capture) -> None:
    with capture(execute=True):
        services.ticket_set_status(ticket=ticket, to_status="solved", actor=actor)


def deliver(published) -> None:
    for name, args in published:
        if name == SEND_SURVEY:
            send_satisfaction_survey.apply(args=args)
    published.clear()


def links_in(email) -> dict[str, str]:
    """{"good": path, "bad": path} of the survey email (the desk's own address taken off)."""
    return {
        word.lower(): url.removeprefix("https://desk.example.com")
        for word, url in LINK.findall(email.body)
    }


@pytest.fixture
def solved(agent_user, published, django_capture_on_commit_callbacks):
    """A ticket assigned to t_agent, solved by them, its survey emailed: (ticket, links)."""
    ticket = TicketFactory(assignee=agent_user)
    solve(ticket, agent_user, django_capture_on_commit_callbacks)
    deliver(published)
    assert len(mail.outbox) == 1
    return ticket, links_in(mail.outbox[0])


def rate(client: Client, path: str, rating: str, comment: str = ""):
    return client.post(path, {"rating": rating, "comment": comment})


# --- the email --------------------------------------------------------------------------------


def test_it_emails_one_survey_with_two_links_after_the_solve_commits(
    agent_user, published, django_capture_on_commit_callbacks
):
    ticket = TicketFactory(assignee=agent_user, subject="Broken mug")

    with django_capture_on_commit_callbacks(execute=True):
        services.ticket_set_status(ticket=ticket, to_status="solved", actor=agent_user)
        assert published == []  # nothing leaves before the commit
    survey = SatisfactionSurvey.objects.get(ticket=ticket)
    assert published == [(SEND_SURVEY, (survey.pk,))]
    deliver(published)

    [email] = mail.outbox
    assert email.to == [ticket.customer.email]
    assert email.cc == []
    assert email.subject == f"[{ticket.reference}] How did we do?"
    assert email.extra_headers["Auto-Submitted"] == "auto-generated"
    assert "In-Reply-To" not in email.extra_headers
    links = links_in(email)
    assert sorted(links) == ["bad", "good"]
    assert all(path.startswith("/satisfaction/") for path in links.values())
    survey.refresh_from_db()
    assert survey.sent_at is not None
    assert survey.agent == agent_user
    assert survey.expires_at - survey.created_at == timedelta(days=14)
    # Not a message of the ticket: the conversation has none more.
    assert ticket.messages.count() == 0
    assert list(ticket.events.filter(type="satisfaction_sent").values_list("data", flat=True)) == [
        {"survey": survey.pk}
    ]


def test_it_sends_the_survey_once_when_the_task_runs_twice(
    agent_user, published, django_capture_on_commit_callbacks
):
    ticket = TicketFactory(assignee=agent_user)
    solve(ticket, agent_user, django_capture_on_commit_callbacks)
    survey = SatisfactionSurvey.objects.get(ticket=ticket)

    send_satisfaction_survey.apply(args=(survey.pk,))
    send_satisfaction_survey.apply(args=(survey.pk,))

    assert len(mail.outbox) == 1
    assert ticket.events.filter(type="satisfaction_sent").count() == 1


def test_it_sends_no_survey_when_a_status_change_is_refused(agent_user, published):
    ticket = TicketFactory(status="closed")

    with pytest.raises(Conflict):
        services.ticket_set_status(ticket=ticket, to_status="solved", actor=agent_user)

    assert SatisfactionSurvey.objects.count() == 0
    assert published == []


def test_it_does_not_send_a_survey_for_a_ticket_reopened_before_the_worker_sent_it(
    agent_user, published, django_capture_on_commit_callbacks
):
    ticket = TicketFactory(assignee=agent_user)
    solve(ticket, agent_user, django_capture_on_commit_callbacks)
    services.ticket_set_status(ticket=ticket, to_status="open", actor=agent_user)

    deliver(published)

    assert mail.outbox == []
    assert SatisfactionSurvey.objects.get(ticket=ticket).voided_at is not None


def test_it_sends_nothing_when_surveys_are_off(
    settings, agent_user, published, django_capture_on_commit_callbacks
):
    settings.SATISFACTION_LINK_DAYS = 0
    ticket = TicketFactory(assignee=agent_user)

    solve(ticket, agent_user, django_capture_on_commit_callbacks)

    assert SatisfactionSurvey.objects.count() == 0
    assert published == []


def test_the_sweep_sends_a_survey_whose_task_was_lost(agent_user, published):
    ticket = TicketFactory(assignee=agent_user, status="solved")
    survey = SatisfactionSurvey.objects.create(
        ticket=ticket, expires_at=timezone.now() + timedelta(days=14)
    )
    SatisfactionSurvey.objects.filter(pk=survey.pk).update(
        created_at=timezone.now() - timedelta(minutes=10)
    )

    resend_stalled_replies.apply()

    assert published == [(SEND_SURVEY, (survey.pk,))]


# --- the customer's pages -----------------------------------------------------------------


def test_opening_a_link_records_nothing_and_preselects_its_rating(solved):
    ticket, links = solved

    response = Client().get(links["bad"])

    assert response.status_code == 200
    page = response.content.decode()
    assert 'value="bad" id="rating-bad" checked' in page
    assert 'value="good" id="rating-good"  required' in page
    assert response["Referrer-Policy"] == "same-origin"
    assert response["X-Robots-Tag"] == "noindex, nofollow"
    assert SatisfactionSurvey.objects.get(ticket=ticket).rated_at is None


def test_the_confirmation_records_the_rating_and_comment_without_a_login(solved):
    ticket, links = solved
    client = Client(enforce_csrf_checks=True)
    page = client.get(links["good"])
    token = page.context["csrf_token"]

    response = client.post(
        links["good"],
        {"rating": "good", "comment": "  Quick and kind.  ", "csrfmiddlewaretoken": token},
    )

    assert response.status_code == 200
    assert "Thank you!" in response.content.decode()
    survey = SatisfactionSurvey.objects.get(ticket=ticket)
    assert (survey.rating, survey.comment) == ("good", "Quick and kind.")
    event = ticket.events.get(type="satisfaction_rated")
    assert (event.actor, event.data) == (
        None,
        {"survey": survey.pk, "rating": "good", "comment": "Quick and kind."},
    )
    change = TicketChange.objects.get(ticket=ticket, type="satisfaction.rated")
    assert change.data == {
        "rating": "good",
        "comment": "Quick and kind.",
        "at": survey.rated_at.isoformat(),
    }


def test_a_post_without_the_csrf_token_is_refused_and_records_nothing(solved):
    ticket, links = solved

    response = Client(enforce_csrf_checks=True).post(links["good"], {"rating": "good"})

    assert response.status_code == 403
    assert SatisfactionSurvey.objects.get(ticket=ticket).rated_at is None


def test_the_customer_may_change_the_preselected_rating_before_sending(solved):
    ticket, links = solved

    rate(Client(), links["good"], "bad")

    assert SatisfactionSurvey.objects.get(ticket=ticket).rating == "bad"


def test_the_second_answer_is_refused_and_changes_nothing(solved):
    ticket, links = solved
    rate(Client(), links["good"], "good", "Great")
    before = SatisfactionSurvey.objects.get(ticket=ticket)

    response = rate(Client(), links["bad"], "bad", "Actually no")

    assert response.status_code == 409
    assert "You already rated this: good." in response.content.decode()
    after = SatisfactionSurvey.objects.get(ticket=ticket)
    assert (after.rating, after.comment, after.rated_at) == ("good", "Great", before.rated_at)
    assert ticket.events.filter(type="satisfaction_rated").count() == 1


def test_opening_a_used_link_says_it_was_rated(solved):
    _, links = solved
    rate(Client(), links["good"], "good")

    response = Client().get(links["bad"])

    assert response.status_code == 200
    assert "You already rated this" in response.content.decode()
    assert 'name="rating"' not in response.content.decode()


def test_a_comment_can_be_added_once_after_the_rating(solved):
    ticket, links = solved
    rate(Client(), links["good"], "bad")
    comment_path = links["good"] + "comment/"

    first = Client().post(comment_path, {"comment": "The parcel was late."})
    second = Client().post(comment_path, {"comment": "Something else"})

    assert first.status_code == 200
    assert second.status_code == 409
    assert SatisfactionSurvey.objects.get(ticket=ticket).comment == "The parcel was late."
    assert ticket.events.filter(type="satisfaction_commented").count() == 1


def test_a_comment_before_any_rating_is_refused(solved):
    ticket, links = solved

    response = Client().post(links["good"] + "comment/", {"comment": "Hello"})

    assert response.status_code == 409
    assert SatisfactionSurvey.objects.get(ticket=ticket).comment == ""


def test_a_tampered_link_is_refused_and_records_nothing(solved):
    ticket, links = solved
    path = links["good"]
    token = path.split("/")[2]
    forged = signing.dumps({"survey": "0" * 32, "rating": "good"}, salt="another salt")
    tampered = [token[:-2] + ("AA" if not token.endswith("AA") else "BB"), forged, "nonsense"]

    for bad in tampered:
        response = rate(Client(), f"/satisfaction/{bad}/", "good")
        assert response.status_code == 400, bad
        assert "not valid" in response.content.decode()

    assert SatisfactionSurvey.objects.get(ticket=ticket).rated_at is None


def test_a_link_to_an_unknown_survey_is_not_found(solved):
    token = signing.dumps({"survey": "f" * 32, "rating": "good"}, salt=satisfaction.SALT)

    response = Client().get(f"/satisfaction/{token}/")

    assert response.status_code == 404


def test_an_old_link_is_refused_as_expired(solved, monkeypatch):
    ticket, _ = solved
    survey = SatisfactionSurvey.objects.get(ticket=ticket)
    fifteen_days_ago = time.time() - 15 * 24 * 3600
    monkeypatch.setattr(time, "time", lambda: fifteen_days_ago)
    old_token = satisfaction.survey_token(survey, "good")
    monkeypatch.undo()

    response = rate(Client(), f"/satisfaction/{old_token}/", "good")

    assert response.status_code == 410
    assert "expired" in response.content.decode()
    assert SatisfactionSurvey.objects.get(ticket=ticket).rated_at is None


def test_a_survey_past_its_expiry_is_refused(solved):
    ticket, links = solved
    SatisfactionSurvey.objects.filter(ticket=ticket).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )

    response = rate(Client(), links["good"], "good")

    assert response.status_code == 410
    assert SatisfactionSurvey.objects.get(ticket=ticket).rated_at is None


def test_a_too_long_comment_shows_the_form_again_and_records_nothing(solved):
    ticket, links = solved

    response = rate(Client(), links["good"], "good", "x" * 2001)

    assert response.status_code == 400
    assert SatisfactionSurvey.objects.get(ticket=ticket).rated_at is None


# --- solved again -----------------------------------------------------------------------------


def test_solving_again_replaces_an_unanswered_survey(
    solved, agent_user, published, django_capture_on_commit_callbacks
):
    ticket, first_links = solved
    services.ticket_set_status(ticket=ticket, to_status="open", actor=agent_user)

    solve(ticket, agent_user, django_capture_on_commit_callbacks)
    deliver(published)

    assert len(mail.outbox) == 2
    old = rate(Client(), first_links["good"], "good")
    assert old.status_code == 410
    assert "replaced by a newer one" in old.content.decode()
    new = rate(Client(), links_in(mail.outbox[1])["bad"], "bad")
    assert new.status_code == 200
    assert list(
        SatisfactionSurvey.objects.filter(ticket=ticket).values_list("rating", flat=True)
    ) == ["bad", ""]


def test_solving_again_after_a_rating_asks_again_and_the_latest_rating_shows(
    solved, agent_user, published, django_capture_on_commit_callbacks
):
    ticket, first_links = solved
    rate(Client(), first_links["good"], "bad")
    services.ticket_set_status(ticket=ticket, to_status="open", actor=agent_user)
    solve(ticket, agent_user, django_capture_on_commit_callbacks)
    deliver(published)
    assert satisfaction.latest_rating(ticket).rating == "bad"  # until the new one is answered

    rate(Client(), links_in(mail.outbox[1])["good"], "good")

    assert satisfaction.latest_rating(ticket).rating == "good"
    assert SatisfactionSurvey.objects.filter(ticket=ticket).count() == 2


# --- where the rating shows ------------------------------------------------------------------


def test_the_ticket_api_shows_the_rating(solved, agent_user):
    ticket, links = solved
    api = APIClient()
    api.force_authenticate(agent_user)
    assert api.get(f"/api/tickets/{ticket.reference}/").json()["satisfaction"] is None

    rate(Client(), links["good"], "good", "Thanks!")

    survey = SatisfactionSurvey.objects.get(ticket=ticket)
    assert api.get(f"/api/tickets/{ticket.reference}/").json()["satisfaction"] == {
        "rating": "good",
        "comment": "Thanks!",
        "at": survey.rated_at.isoformat().replace("+00:00", "Z"),
    }


def test_the_api_field_is_staff_only_as_the_ticket_is(solved, outsider):
    ticket, links = solved
    rate(Client(), links["good"], "good")

    anonymous = APIClient().get(f"/api/tickets/{ticket.reference}/")
    api = APIClient()
    api.force_authenticate(outsider)
    stranger = api.get(f"/api/tickets/{ticket.reference}/")

    assert anonymous.status_code == 401
    assert stranger.status_code == 403
    assert "good" not in stranger.content.decode()


def test_the_ticket_page_shows_the_rating_and_comment(solved, agent_user):
    ticket, links = solved
    rate(Client(), links["bad"], "bad", "Nobody called me back.")
    client = Client()
    client.force_login(agent_user)

    page = client.get(f"/tickets/{ticket.reference}/").content.decode()

    assert 'id="satisfaction-rating"' in page
    assert "Nobody called me back." in page
    assert "Customer rated the support" in page  # the history


def test_the_list_shows_the_agent_s_and_the_team_s_score(solved, agent_user, agent2_user):
    _ticket, links = solved
    rate(Client(), links["good"], "good")
    other = TicketFactory(assignee=agent2_user, status="solved")
    SatisfactionSurvey.objects.create(
        ticket=other,
        agent=agent2_user,
        expires_at=timezone.now() + timedelta(days=1),
        rating="bad",
        rated_at=timezone.now(),
    )
    client = Client()
    client.force_login(agent_user)

    response = client.get("/tickets/")

    assert response.context["satisfaction"]["mine"] == satisfaction.Score(good=1, bad=0)
    assert response.context["satisfaction"]["team"] == satisfaction.Score(good=1, bad=1)
    assert 'id="satisfaction-summary"' in response.content.decode()


def test_the_assignee_is_told_of_the_rating_and_the_comment(solved, agent_user):
    ticket, links = solved
    rate(Client(), links["bad"], "bad")
    Client().post(links["bad"] + "comment/", {"comment": "Too slow."})

    told = Notification.objects.filter(recipient=agent_user, kind="satisfaction_rated")

    name, ref = ticket.customer.name, ticket.reference
    assert sorted(told.values_list("text", flat=True)) == [
        f"{name} rated {ref} bad",
        f"{name} rated {ref} bad: “Too slow.”",
    ]


def test_metrics_count_ratings_by_value(solved, agent_user):
    _ticket, links = solved
    rate(Client(), links["bad"], "bad")
    staff = UserFactory(is_staff=True)
    client = Client()
    client.force_login(staff)

    text = client.get("/metrics").content.decode()

    assert 'desk_satisfaction_ratings_total{rating="bad"} 1.0' in text
    assert 'desk_satisfaction_ratings_total{rating="good"} 0.0' in text


def test_a_survey_is_rated_with_a_rating_or_not_at_all():
    from django.db import IntegrityError, transaction

    ticket = TicketFactory()
    with pytest.raises(IntegrityError), transaction.atomic():
        SatisfactionSurvey.objects.create(
            ticket=ticket, expires_at=timezone.now(), rated_at=timezone.now()
        )


def test_a_ticket_has_at_most_one_open_survey():
    from django.db import IntegrityError, transaction

    ticket = TicketFactory()
    SatisfactionSurvey.objects.create(ticket=ticket, expires_at=timezone.now())
    with pytest.raises(IntegrityError), transaction.atomic():
        SatisfactionSurvey.objects.create(ticket=ticket, expires_at=timezone.now())


# --- at the same moment (PostgreSQL, real threads) ------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_of_answers_sent_at_the_same_moment_exactly_one_is_recorded(postgres, published):
    ticket = TicketFactory(status="solved")
    survey = SatisfactionSurvey.objects.create(
        ticket=ticket, expires_at=timezone.now() + timedelta(days=14)
    )
    ratings = ["good", "bad"] * 4

    def answer(index: int) -> int:
        path = f"/satisfaction/{satisfaction.survey_token(survey, ratings[index])}/"
        return rate(Client(), path, ratings[index], f"answer {index}").status_code

    statuses = run_in_threads(len(ratings), answer)

    assert sorted(statuses) == [200] + [409] * (len(ratings) - 1)
    winner = statuses.index(200)
    survey.refresh_from_db()
    assert (survey.rating, survey.comment) == (ratings[winner], f"answer {winner}")
    assert ticket.events.filter(type="satisfaction_rated").count() == 1
    assert TicketChange.objects.filter(ticket=ticket, type="satisfaction.rated").count() == 1


@pytest.mark.django_db(transaction=True)
def test_solves_at_the_same_moment_issue_one_survey(postgres, published, agent_user):
    ticket = TicketFactory(status="open", assignee=agent_user)

    def solve_it(index: int) -> str:
        fresh = Ticket.objects.get(pk=ticket.pk)
        services.ticket_set_status(ticket=fresh, to_status="solved", actor=agent_user)
        return "solved"

    outcomes = run_in_threads(4, solve_it)

    assert outcomes.count("solved") == 1
    assert SatisfactionSurvey.objects.filter(ticket=ticket).count() == 1
    assert [name for name, _ in published] == [SEND_SURVEY]


def test_admin_shows_surveys_read_only_without_their_key(admin_client, solved):
    ticket, links = solved
    rate(Client(), links["good"], "good", "Fine")
    survey = SatisfactionSurvey.objects.get(ticket=ticket)

    listing = admin_client.get("/admin/tickets/satisfactionsurvey/")
    detail = admin_client.get(f"/admin/tickets/satisfactionsurvey/{survey.pk}/change/")

    assert listing.status_code == detail.status_code == 200
    assert "Fine" in detail.content.decode()
    assert survey.key not in detail.content.decode()
    assert (
        admin_client.post(f"/admin/tickets/satisfactionsurvey/{survey.pk}/delete/").status_code
        == 403
    )
