"""The customer's side of a satisfaction survey (DESIGN §19): the pages its email links open,
with no login. Opening a link records nothing (mail scanners open links before people do): it
shows the rating the link offers, preselected, with an optional comment and one button; the
POST records it. The domain is tickets/satisfaction.py."""

from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from config.errors import ApplicationError
from tickets import satisfaction
from tickets.models import SatisfactionSurvey


def _page(request, state: str, *, status: int = 200, **context):
    response = render(
        request,
        "satisfaction/page.html",
        {"state": state, "comment_max": satisfaction.COMMENT_MAX_LENGTH, **context},
        status=status,
    )
    # The link is the customer's key: never sent on to another site, nor indexed. (Not
    # "no-referrer": browsers then send the form's POST with `Origin: null`, which CSRF refuses.)
    response["Referrer-Policy"] = "same-origin"
    response["X-Robots-Tag"] = "noindex, nofollow"
    return response


def _refused(request, exc: ApplicationError, survey: SatisfactionSurvey | None = None):
    return _page(
        request,
        "refused",
        status=exc.status_code,
        message=exc.message,
        code=exc.code,
        survey=survey,
    )


def _answered(request, token: str, survey: SatisfactionSurvey, *, status: int = 200, note=""):
    return _page(request, "answered", status=status, token=token, survey=survey, note=note)


@never_cache
@require_http_methods(["GET", "HEAD", "POST"])
def survey_page(request, token: str):
    try:
        link = satisfaction.survey_for_token(token)
    except ApplicationError as exc:
        return _refused(request, exc)
    survey = link.survey
    if request.method == "POST":
        rating = request.POST.get("rating", "")
        comment = request.POST.get("comment", "")
        try:
            survey = satisfaction.survey_rate(survey=survey, rating=rating, comment=comment)
        except satisfaction.AlreadyRated as exc:
            return _answered(request, token, _fresh(survey), status=409, note=exc.message)
        except ApplicationError as exc:
            if exc.status_code == 400:  # a comment too long, no rating: the form again
                return _confirm(request, token, survey, rating, comment, exc.message, status=400)
            return _refused(request, exc, survey)
        return _answered(request, token, survey)
    if survey.rated_at is not None:
        return _answered(request, token, survey, note="You already rated this. Thank you!")
    return _confirm(request, token, survey, link.rating)


def _fresh(survey: SatisfactionSurvey) -> SatisfactionSurvey:
    """The survey as the answer that came first left it."""
    survey.refresh_from_db()
    return survey


def _confirm(request, token, survey, rating, comment="", error="", *, status=200):
    return _page(
        request,
        "confirm",
        status=status,
        token=token,
        survey=survey,
        rating=rating,
        comment=comment,
        error=error,
        ratings=SatisfactionSurvey.Rating.choices,
    )


@never_cache
@require_POST
def survey_comment(request, token: str):
    try:
        survey = satisfaction.survey_for_token(token).survey
    except ApplicationError as exc:
        return _refused(request, exc)
    try:
        survey = satisfaction.survey_comment(survey=survey, comment=request.POST.get("comment", ""))
    except satisfaction.AlreadyRated as exc:
        return _answered(request, token, _fresh(survey), status=409, note=exc.message)
    except ApplicationError as exc:
        return _page(request, "answered", status=400, token=token, survey=survey, error=exc.message)
    return _answered(request, token, survey, note="Thank you for your comment!")
