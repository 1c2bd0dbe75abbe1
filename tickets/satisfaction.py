"""Customer satisfaction (DESIGN §19): one survey per solve, emailed after commit, answered
good or bad (and an optional comment) through signed links that need no login.

* **Issued** in the transaction of the solve (services.ticket_set_status): a compare-and-swap
  moved the status, so one solve is one survey and one email. An unanswered survey of an
  earlier solve of the ticket is voided then (its links say they were replaced): a ticket
  has at most one survey its customer can still answer (a unique constraint holds it).
* **Sent** by the worker (tasks.send_satisfaction_survey) through Django's mail framework,
  with the retries public replies have. It is not a message of the ticket: it is not shown
  in the conversation and does not thread the replies (its own Message-ID, no In-Reply-To);
  the ticket's history records `satisfaction_sent`. A survey whose ticket was reopened
  before it could be sent is voided, not sent.
* **Answered**: the link's token is `signing.dumps` of the survey's random key and the rating
  the link offers, salted, timestamped, good for SATISFACTION_LINK_DAYS. Opening a link
  records nothing (mail scanners open links): the page asks to confirm, and the POST records
  by compare-and-swap, so of two answers the first wins and the second changes nothing.
"""

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from http import HTTPStatus

from django.conf import settings
from django.contrib.auth.models import User
from django.core import signing
from django.db import connection, transaction
from django.db.models import Count, Prefetch, Q
from django.urls import reverse
from django.utils import timezone

from config.celery import enqueue_on_commit
from config.errors import ApplicationError, Conflict
from tickets import changes, mail
from tickets.models import SatisfactionSurvey, Ticket, TicketChange, TicketEvent

logger = logging.getLogger(__name__)

SALT = "tickets.satisfaction.link"
SEND_SURVEY_TASK = "tickets.tasks.send_satisfaction_survey"
COMMENT_MAX_LENGTH = 2000
Rating = SatisfactionSurvey.Rating


class BadSurveyLink(ApplicationError):
    code = "survey_link_invalid"


class SurveyNotFound(ApplicationError):
    status_code = HTTPStatus.NOT_FOUND
    code = "survey_not_found"


class SurveyGone(ApplicationError):
    status_code = HTTPStatus.GONE
    code = "survey_expired"


class AlreadyRated(Conflict):
    code = "already_rated"


# --- issue and send -----------------------------------------------------------------------


def survey_issue(*, ticket: Ticket, agent_id: int | None) -> SatisfactionSurvey | None:
    """The survey of a solve that just happened. Caller: the solve's transaction (it holds the
    ticket's row). None when surveys are off (SATISFACTION_LINK_DAYS=0)."""
    if settings.SATISFACTION_LINK_DAYS <= 0:
        return None
    now = timezone.now()
    SatisfactionSurvey.objects.filter(
        ticket=ticket, rated_at__isnull=True, voided_at__isnull=True
    ).update(voided_at=now)
    survey = SatisfactionSurvey.objects.create(
        ticket=ticket,
        agent_id=agent_id,
        created_at=now,
        expires_at=now + timedelta(days=settings.SATISFACTION_LINK_DAYS),
    )
    enqueue_on_commit(SEND_SURVEY_TASK, survey.pk)
    return survey


@dataclass(frozen=True)
class SurveySending:
    sent: bool  # the survey is sent (now, or before)
    error: str = ""  # why the mail server did not take it: try again
    attempts: int = 0


def survey_send(*, survey_pk: int) -> SurveySending:
    """Email one survey, unless it is sent, voided or its ticket is no longer solved. As
    services.reply_send: PostgreSQL keeps the survey's row locked while it is sent; SQLite
    marks it sent only if it still is not (at least once, never lost)."""
    if not connection.features.has_select_for_update:
        return _send(
            SatisfactionSurvey.objects.select_related("ticket__customer").get(pk=survey_pk)
        )
    with transaction.atomic():
        surveys = SatisfactionSurvey.objects.select_related("ticket__customer")
        return _send(surveys.select_for_update(of=("self",)).get(pk=survey_pk))


def _send(survey: SatisfactionSurvey) -> SurveySending:
    if survey.sent_at is not None:
        return SurveySending(sent=True)
    unsent = SatisfactionSurvey.objects.filter(
        pk=survey.pk, sent_at__isnull=True, voided_at__isnull=True
    )
    if survey.voided_at is not None:
        return SurveySending(sent=False)
    if survey.ticket.status not in (Ticket.Status.SOLVED, Ticket.Status.CLOSED):
        unsent.update(voided_at=timezone.now())  # reopened before it went out
        return SurveySending(sent=False)
    attempts = survey.send_attempts + 1
    try:
        mail.survey_email(survey, links=survey_links(survey)).send()
    except mail.MAIL_SERVER_ERRORS as exc:
        error = mail.describe_error(exc)
        unsent.update(send_attempts=attempts)
        logger.warning("Survey %s of %s not sent: %s", survey.pk, survey.ticket, error)
        return SurveySending(sent=False, error=error, attempts=attempts)
    with transaction.atomic():
        if unsent.update(send_attempts=attempts, sent_at=timezone.now()):
            _event(survey, TicketEvent.Type.SATISFACTION_SENT)
    return SurveySending(sent=True, attempts=attempts)


def surveys_stalled(*, grace: timedelta = timedelta(minutes=5)) -> list[int]:
    """Surveys never tried long after they were issued (the broker was down at commit)."""
    cutoff = timezone.now() - grace
    stalled = SatisfactionSurvey.objects.filter(
        sent_at__isnull=True,
        voided_at__isnull=True,
        send_attempts=0,
        created_at__lt=cutoff,
        expires_at__gt=timezone.now(),
    )
    return list(stalled.values_list("pk", flat=True))


# --- links ---------------------------------------------------------------------------------


def survey_token(survey: SatisfactionSurvey, rating: str) -> str:
    return signing.dumps({"survey": survey.key, "rating": rating}, salt=SALT)


def survey_links(survey: SatisfactionSurvey) -> dict[str, str]:
    """{"good": url, "bad": url}: the absolute links the email carries."""
    base = settings.DESK_URL.rstrip("/")
    return {
        rating: base + reverse("satisfaction", args=[survey_token(survey, rating)])
        for rating in Rating.values
    }


@dataclass(frozen=True)
class SurveyLink:
    survey: SatisfactionSurvey
    rating: str  # the rating the link offers


def survey_for_token(token: str) -> SurveyLink:
    """The survey a link names, if it may still be answered or commented: BadSurveyLink for
    a token that is not ours (tampered, cut), SurveyNotFound, SurveyGone when it expired or
    a later solve replaced it. Whether it was answered is the caller's question."""
    days = settings.SATISFACTION_LINK_DAYS
    try:
        payload = signing.loads(
            token, salt=SALT, max_age=timedelta(days=days) if days > 0 else None
        )
    except signing.SignatureExpired:
        raise SurveyGone("This link has expired.") from None
    except signing.BadSignature:
        raise BadSurveyLink("This link is not valid; please use the link in our email.") from None
    if not isinstance(payload, dict) or payload.get("rating") not in Rating.values:
        raise BadSurveyLink("This link is not valid; please use the link in our email.")
    survey = (
        SatisfactionSurvey.objects.select_related("ticket").filter(key=payload["survey"]).first()
    )
    if survey is None:
        raise SurveyNotFound("We could not find this survey.")
    if survey.voided_at is not None:
        raise SurveyGone(
            "This survey was replaced by a newer one: please use the link in our latest email.",
            code="survey_replaced",
        )
    if survey.expires_at <= timezone.now():
        raise SurveyGone("This link has expired.")
    return SurveyLink(survey, payload["rating"])


# --- answers ---------------------------------------------------------------------------------


@transaction.atomic
def survey_rate(
    *, survey: SatisfactionSurvey, rating: str, comment: str = ""
) -> SatisfactionSurvey:
    """Record the customer's answer, once: AlreadyRated (nothing changed) when an answer was
    recorded first, SurveyGone when it was voided or expired meanwhile."""
    if rating not in Rating.values:
        raise BadSurveyLink("Choose good or bad.", code="invalid")
    comment = _clean(comment)
    now = timezone.now()
    answered = SatisfactionSurvey.objects.filter(
        pk=survey.pk, rated_at__isnull=True, voided_at__isnull=True, expires_at__gt=now
    ).update(rating=rating, comment=comment, rated_at=now)
    survey.refresh_from_db()
    if not answered:
        if survey.rated_at is not None:
            raise AlreadyRated(f"You already rated this: {survey.get_rating_display().lower()}.")
        raise SurveyGone("This survey can no longer be answered.")
    _event(survey, TicketEvent.Type.SATISFACTION_RATED, rating=rating, comment=comment)
    _change(survey)
    return survey


@transaction.atomic
def survey_comment(*, survey: SatisfactionSurvey, comment: str) -> SatisfactionSurvey:
    """Add the comment to an answered survey that has none (once; the first one stays)."""
    comment = _clean(comment)
    if not comment:
        raise ApplicationError("Write a comment first.", code="empty_comment")
    added = SatisfactionSurvey.objects.filter(
        pk=survey.pk, rated_at__isnull=False, comment="", expires_at__gt=timezone.now()
    ).update(comment=comment)
    survey.refresh_from_db()
    if not added:
        raise AlreadyRated(
            "Your comment was already recorded. Thank you!", code="already_commented"
        )
    _event(survey, TicketEvent.Type.SATISFACTION_COMMENTED, comment=comment)
    _change(survey)
    return survey


def _clean(comment: str) -> str:
    comment = comment.strip()
    if len(comment) > COMMENT_MAX_LENGTH:
        raise ApplicationError(
            f"At most {COMMENT_MAX_LENGTH} characters, please.", code="comment_too_long"
        )
    return comment


def _event(survey: SatisfactionSurvey, type: str, **data) -> None:
    TicketEvent.objects.create(ticket=survey.ticket, type=type, data={"survey": survey.pk, **data})


def _change(survey: SatisfactionSurvey) -> None:
    """Open ticket pages follow the rating (DESIGN §14)."""
    changes.ticket_change_append(
        ticket_id=survey.ticket_id,
        type=TicketChange.Type.SATISFACTION_RATED,
        data=rating_data(survey),
    )


# --- reads -----------------------------------------------------------------------------------


def rating_data(survey: SatisfactionSurvey) -> dict[str, str]:
    """An answered survey as the API's `satisfaction` says it: {"rating", "comment", "at"}."""
    at = survey.rated_at.isoformat() if survey.rated_at else ""
    return {"rating": survey.rating, "comment": survey.comment, "at": at}


def _rated():
    return SatisfactionSurvey.objects.filter(rated_at__isnull=False).order_by("-rated_at", "-id")


def rated_surveys() -> Prefetch:
    """For lists of tickets: each ticket's answered surveys, newest first, in one query
    (latest_rating reads them)."""
    return Prefetch("surveys", queryset=_rated(), to_attr="rated_surveys")


def latest_rating(ticket: Ticket) -> SatisfactionSurvey | None:
    """The ticket's latest answered survey (an earlier solve's rating stays until a later one
    is answered)."""
    prefetched = getattr(ticket, "rated_surveys", None)
    if prefetched is not None:
        return prefetched[0] if prefetched else None
    return _rated().filter(ticket=ticket).first()


def latest_survey(ticket: Ticket) -> SatisfactionSurvey | None:
    return SatisfactionSurvey.objects.filter(ticket=ticket).order_by("-created_at", "-id").first()


@dataclass(frozen=True)
class Score:
    good: int
    bad: int

    @property
    def total(self) -> int:
        return self.good + self.bad

    @property
    def percent_good(self) -> int | None:
        return round(100 * self.good / self.total) if self.total else None


def score(*, since: datetime, agent: User | None = None) -> Score:
    """Ratings given since `since`: the team's, or those about one agent's solves."""
    rated = SatisfactionSurvey.objects.filter(rated_at__gte=since)
    if agent is not None:
        rated = rated.filter(agent=agent)
    counts = rated.aggregate(
        good=Count("pk", filter=Q(rating=Rating.GOOD)), bad=Count("pk", filter=Q(rating=Rating.BAD))
    )
    return Score(good=counts["good"], bad=counts["bad"])


def ratings_by_value() -> dict[str, int]:
    """Every rating given, by value: /metrics."""
    counts = dict(
        SatisfactionSurvey.objects.filter(rated_at__isnull=False)
        .order_by()
        .values_list("rating")
        .annotate(n=Count("pk"))
    )
    return {rating: counts.get(rating, 0) for rating in Rating.values}
