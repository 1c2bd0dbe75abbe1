"""Fair use: per user and hour, a limit on runs started and on the model tokens they used."""

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone
from rest_framework.test import APIClient

from agent import services
from agent.models import AgentRun, RunEvent
from config.errors import RateLimited
from tests.agent.runs import start_run
from tests.services import run_in_threads

pytestmark = pytest.mark.django_db


def started_ago(minutes: int, *, username: str = "agent", tokens: int = 0) -> AgentRun:
    """A run `username` started `minutes` ago whose model calls used `tokens`."""
    run = start_run(username=username)
    AgentRun.objects.filter(pk=run.pk).update(
        created_at=timezone.now() - timedelta(minutes=minutes),
        tokens_in=tokens - tokens // 4,
        tokens_out=tokens // 4,
    )
    return run


def ask(username: str = "agent"):
    api = APIClient()
    api.force_authenticate(get_user_model().objects.get(username=username))
    return api.post(
        "/api/tickets/TCK-1001/runs/", {"message": "What did the mug cost?"}, format="json"
    )


def test_it_refuses_a_start_over_the_hourly_run_limit_with_429_and_when_to_retry(demo, settings):
    settings.AGENT_RUNS_PER_HOUR = 3
    for minutes in (48, 30, 5):
        started_ago(minutes)
    events_before = RunEvent.objects.count()

    response = ask()

    assert response.status_code == 429
    body = response.json()
    retry_after = body["extra"]["retry_after"]
    # The oldest of the three leaves the hour 12 minutes from now.
    assert 12 * 60 - 5 <= retry_after <= 12 * 60
    assert response["Retry-After"] == str(retry_after)
    assert body == {
        "message": "You have started 3 assistant runs in the last hour; try again in 12 minutes.",
        "code": "rate_limited",
        "extra": {"limit": 3, "used": 3, "counts": "runs", "retry_after": retry_after},
    }
    assert AgentRun.objects.count() == 3
    assert RunEvent.objects.count() == events_before


def test_runs_started_more_than_an_hour_ago_no_longer_count(demo, settings):
    settings.AGENT_RUNS_PER_HOUR = 2
    for minutes in (61, 75, 10):
        started_ago(minutes)

    response = ask()

    assert response.status_code == 202
    assert AgentRun.objects.count() == 4


def test_it_refuses_a_start_once_the_users_runs_used_the_hourly_tokens(demo, settings):
    settings.AGENT_TOKENS_PER_HOUR = 1000
    started_ago(50, tokens=600)
    started_ago(20, tokens=500)

    response = ask()

    assert response.status_code == 429
    body = response.json()
    # Once the 600 tokens of the older run leave the hour, 500 are under the limit.
    assert 10 * 60 - 5 <= body["extra"]["retry_after"] <= 10 * 60
    assert body["message"] == (
        "Your assistant runs used 1,100 model tokens in the last hour (the limit is 1,000); "
        "try again in 10 minutes."
    )
    assert {key: body["extra"][key] for key in ("limit", "used", "counts")} == {
        "limit": 1000,
        "used": 1100,
        "counts": "tokens",
    }
    assert AgentRun.objects.count() == 2


def test_any_caller_of_the_service_is_limited_until_enough_runs_have_left_the_hour(demo, settings):
    for minutes in (50, 40, 30, 20):
        started_ago(minutes)
    settings.AGENT_RUNS_PER_HOUR = 2

    with pytest.raises(RateLimited) as refused:
        start_run()

    # Four runs against a limit of two: the third oldest must leave before one more fits.
    assert 30 * 60 - 5 <= refused.value.retry_after <= 30 * 60
    assert refused.value.message == (
        "You have started 4 assistant runs in the last hour; try again in 30 minutes."
    )
    assert AgentRun.objects.count() == 4


def test_over_both_limits_the_longer_wait_is_the_one_given(demo, settings):
    settings.AGENT_RUNS_PER_HOUR = 2
    settings.AGENT_TOKENS_PER_HOUR = 1000
    started_ago(50, tokens=50)
    started_ago(10, tokens=1000)

    with pytest.raises(RateLimited) as refused:
        start_run()

    # Runs: free in 10 minutes; tokens: only when the 1,000-token run leaves, in 50.
    assert refused.value.extra["counts"] == "tokens"
    assert 50 * 60 - 5 <= refused.value.retry_after <= 50 * 60


def test_the_limits_are_per_user(demo, settings):
    settings.AGENT_RUNS_PER_HOUR = 1
    started_ago(5, username="agent")

    assert ask("agent").status_code == 429
    assert ask("agent2").status_code == 202


def test_zero_turns_the_limits_off(demo, settings):
    settings.AGENT_RUNS_PER_HOUR = 0
    settings.AGENT_TOKENS_PER_HOUR = 0
    for minutes in (40, 30, 20, 10):
        started_ago(minutes, tokens=1_000_000)

    assert ask().status_code == 202


def test_the_run_start_endpoint_documents_its_429(demo, client):
    client.force_login(get_user_model().objects.get(username="agent"))

    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()

    assert "429" in schema["paths"]["/api/tickets/{reference}/runs/"]["post"]["responses"]


@pytest.mark.django_db(transaction=True)
def test_concurrent_starts_by_one_user_never_exceed_the_limit(demo, settings):
    settings.AGENT_RUNS_PER_HOUR = 4

    outcomes = run_in_threads(12, lambda _: start_run())

    started = [outcome for outcome in outcomes if isinstance(outcome, AgentRun)]
    refused = [outcome for outcome in outcomes if isinstance(outcome, RateLimited)]
    assert (len(started), len(refused)) == (4, 8), outcomes
    assert AgentRun.objects.filter(started_by__username="agent").count() == 4


@pytest.mark.e2e
@pytest.mark.django_db(transaction=True)
def test_the_panel_says_why_a_run_was_refused_and_when_to_try_again(page, login, demo, settings):
    settings.LLM_PROVIDER = "offline"
    settings.AGENT_RUNS_PER_HOUR = 1
    earlier = started_ago(48)
    services.run_request_cancel(run=earlier, user=earlier.started_by)
    login("agent")
    page.goto("/tickets/TCK-1001/")
    page.locator("#assistant-progress li", has_text="Cancelled").wait_for(state="attached")

    page.fill("#assistant-message", "The mug arrived broken, please refund it")
    page.click("#assistant-ask")

    limit = page.locator("#assistant-limit")
    limit.wait_for(state="visible")
    assert limit.inner_text() == (
        "You have started 1 assistant run in the last hour; try again in 12 minutes."
    )
    assert page.locator("#assistant-ask").is_enabled()
    assert AgentRun.objects.count() == 1
