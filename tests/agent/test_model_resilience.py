"""Model calls that fail: backoff with full jitter and Retry-After, a cap on the wait per step,
the circuit breaker shared by every run and process, and the context-length retry.

Driven in this process with the real `openai` client against the fake server over HTTP; the
retry countdowns are read from the step's outcome, never slept.
"""

import json
import logging
import os
import subprocess
import sys
import time
from datetime import timedelta
from email.utils import format_datetime

import pytest
from django.conf import settings as django_settings
from django.core.cache import caches
from django.utils import timezone

from agent.models import RunEvent
from agent.providers.breaker import ModelBreaker
from agent.providers.llm import ModelError
from agent.providers.openai_client import OpenAIProvider
from agent.runtime import run_step, step_model
from tests.agent.runs import drive, start_run
from tests.fakes.openai_server import (
    context_length_error,
    error_body,
    text_reply,
    tool_call,
    tool_reply,
)

pytestmark = pytest.mark.django_db(transaction=True)

MUG, HEADPHONES = "202610110087", "202610150012"
BASE_DIR = django_settings.BASE_DIR


@pytest.fixture
def breaker(fake_openai, settings):
    """The breaker of the fake endpoint, closed before and after the test."""
    settings.LLM_BREAKER_THRESHOLD = 5
    settings.LLM_BREAKER_COOLDOWN_S = 30
    breaker = ModelBreaker.for_provider(OpenAIProvider())
    breaker.record_success()
    yield breaker
    breaker.record_success()


def waiting_events(run) -> list[dict]:
    return [
        event.data
        for event in RunEvent.objects.filter(run=run, type="message").order_by("seq")
        if event.data.get("kind") == run_step.MODEL_UNAVAILABLE
    ]


def step(run, *, attempt: int = 0, version: int | None = None) -> run_step.StepOutcome:
    return run_step.advance(run_id=run.pk, expected_version=version, attempt=attempt)


# --- backoff -------------------------------------------------------------------------------


def test_a_429_with_retry_after_in_seconds_is_retried_no_sooner_than_asked(
    demo, fake_openai, breaker
):
    fake_openai.enqueue(error_body(429, "slow down", retry_after="2"), text_reply("Paid 129.00."))
    run = start_run()

    outcome = step(run)

    assert outcome.kind == run_step.StepKind.RETRY
    assert 2 <= outcome.retry_in <= 2.2
    (waiting,) = waiting_events(run)
    retry_at = timezone.now() + timedelta(seconds=outcome.retry_in)
    assert waiting["content"].startswith(
        "Model unavailable (the model endpoint is rate limiting us (HTTP 429)), retrying at "
    )
    assert waiting["content"].endswith(" UTC.")
    around = [retry_at + timedelta(seconds=delta) for delta in (-1, 0, 1)]
    assert waiting["content"].split("retrying at ")[1][:8] in {f"{t:%H:%M:%S}" for t in around}

    drive(run)
    assert (run.status, run.final_answer) == ("completed", "Paid 129.00.")
    assert len(fake_openai.requests) == 2


def test_a_retry_after_given_as_an_http_date_is_honoured(demo, fake_openai, breaker):
    when = format_datetime(timezone.now() + timedelta(seconds=30), usegmt=True)
    fake_openai.enqueue(error_body(503, "overloaded", retry_after=when))
    run = start_run()

    outcome = step(run)

    assert outcome.kind == run_step.StepKind.RETRY
    # The date has whole seconds: up to one less than asked, plus the small jitter.
    assert 28 <= outcome.retry_in <= 33


def test_a_503_without_retry_after_waits_a_jittered_time_within_the_ceiling(
    demo, fake_openai, breaker, settings
):
    settings.LLM_RETRY_BASE_S = 2
    settings.LLM_RETRY_CAP_S = 5
    fake_openai.respond_with(lambda request: error_body(503, "overloaded"))
    run = start_run()

    outcomes = drive(run)

    assert [o.kind for o in outcomes] == ["retry", "retry", "retry", "finished"]
    ceilings = [2, 4, 5]
    for outcome, ceiling in zip(outcomes, ceilings, strict=False):
        assert 0 <= outcome.retry_in <= ceiling
    assert [event["wait_s"] for event in waiting_events(run)] == [
        round(o.retry_in, 3) for o in outcomes[:3]
    ]
    assert (
        run.error
        == "The model call failed: the model endpoint failed (HTTP 503) (after 4 attempts)."
    )


def test_the_backoff_is_full_jitter_under_an_exponential_ceiling(settings):
    settings.LLM_RETRY_BASE_S = 2
    settings.LLM_RETRY_CAP_S = 30
    error = ModelError("the model endpoint failed (HTTP 503)", retryable=True)

    for attempt, ceiling in [(0, 2), (1, 4), (2, 8), (3, 16), (4, 30), (9, 30)]:
        delays = [run_step.model_retry_delay(error, attempt) for _ in range(300)]
        assert all(0 <= delay <= ceiling for delay in delays)
        # Spread over the whole range, not clustered at the ceiling.
        assert min(delays) < ceiling / 4 and max(delays) > ceiling * 3 / 4


def test_a_step_that_would_wait_past_the_cap_fails_its_run_with_the_reason(
    demo, fake_openai, breaker, settings
):
    settings.LLM_RETRY_MAX_WAIT_S = 5
    fake_openai.enqueue(
        error_body(429, "slow down", retry_after="3"), error_body(429, "slow down", retry_after="3")
    )
    run = start_run()

    outcomes = drive(run)

    assert [o.kind for o in outcomes] == ["retry", "finished"]
    assert (run.status, run.stop_reason) == ("failed", "error")
    assert run.error == (
        "The model call failed: the model endpoint is rate limiting us (HTTP 429). Retrying "
        "would mean waiting 3s more, past the 5s a step may wait for the model."
    )
    assert RunEvent.objects.get(run=run, type="run.failed").data == {"reason": run.error}
    assert len(fake_openai.requests) == 2


def test_a_retry_after_longer_than_the_cap_fails_the_run_at_once(
    demo, fake_openai, breaker, settings
):
    settings.LLM_RETRY_MAX_WAIT_S = 120
    fake_openai.enqueue(error_body(429, "slow down", retry_after="600"))
    run = start_run()

    outcomes = drive(run)

    assert [o.kind for o in outcomes] == ["finished"]
    assert run.status == "failed"
    assert "past the 120s a step may wait for the model" in run.error
    assert waiting_events(run) == []


# --- the circuit breaker ---------------------------------------------------------------------


def open_the_breaker(fake_openai) -> None:
    """Five failed calls in a row over two runs: four in the first (which fails), one in the
    second."""
    fake_openai.respond_with(lambda request: error_body(500, "upstream down"))
    first = start_run()
    drive(first)
    assert first.status == "failed"
    second = start_run("And the headphones?")
    assert step(second).kind == run_step.StepKind.RETRY
    assert len(fake_openai.requests) == 5


def test_the_breaker_opens_after_consecutive_failures_across_runs_and_new_steps_do_not_call(
    demo, fake_openai, breaker, caplog
):
    caplog.set_level(logging.INFO, logger="agent.providers.breaker")
    open_the_breaker(fake_openai)
    assert breaker.failures() == 5
    assert "open: 5 failed calls in a row" in caplog.text

    third = start_run("Was the order shipped?")
    outcome = step(third)

    assert len(fake_openai.requests) == 5
    assert outcome.kind == run_step.StepKind.RETRY
    assert 28 <= outcome.retry_in <= 30
    (waiting,) = waiting_events(third)
    assert waiting["content"].startswith(
        "Model unavailable (the last 5 calls to the model endpoint failed), retrying at "
    )
    assert not RunEvent.objects.filter(run=third, type="model.started").exists()


def test_the_breaker_state_is_seen_by_another_process(demo, fake_openai, breaker):
    open_the_breaker(fake_openai)
    script = (
        "import django, sys; django.setup(); "
        "from agent.providers.breaker import ModelBreaker; "
        "b = ModelBreaker(sys.argv[1]); print(b.failures(), round(b.wait_s()))"
    )

    found = subprocess.run(
        [sys.executable, "-c", script, breaker.endpoint],
        cwd=BASE_DIR,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings"},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )

    failures, wait = found.stdout.split()
    assert int(failures) == 5
    # Still cooling down: starting Django in the other process can take seconds on a busy machine.
    assert 0 < int(wait) <= 30


def test_after_the_cool_down_one_successful_call_closes_the_breaker(
    demo, fake_openai, breaker, settings, caplog
):
    caplog.set_level(logging.INFO, logger="agent.providers.breaker")
    settings.LLM_BREAKER_COOLDOWN_S = 1
    open_the_breaker(fake_openai)
    assert breaker.is_open()
    time.sleep(1.1)
    fake_openai.respond_with(lambda request: text_reply("Paid 129.00."))

    run = start_run()
    drive(run)

    assert (run.status, run.final_answer) == ("completed", "Paid 129.00.")
    assert breaker.failures() == 0
    assert breaker.wait_s() == 0
    assert "closed: the model answered again" in caplog.text


def test_a_failed_probe_after_the_cool_down_opens_the_breaker_again(
    demo, fake_openai, breaker, settings
):
    settings.LLM_BREAKER_COOLDOWN_S = 1
    open_the_breaker(fake_openai)
    time.sleep(1.1)
    settings.LLM_BREAKER_COOLDOWN_S = 30

    run = start_run()
    assert step(run).kind == run_step.StepKind.RETRY
    assert len(fake_openai.requests) == 6

    assert 28 <= breaker.wait_s() <= 30


def test_a_success_after_failures_below_the_threshold_clears_them(demo, fake_openai, breaker):
    fake_openai.enqueue(error_body(500, "upstream down"), text_reply("Paid 129.00."))
    run = start_run()
    assert step(run).kind == run_step.StepKind.RETRY
    assert breaker.failures() == 1

    drive(run)

    assert run.status == "completed"
    assert breaker.failures() == 0


def test_a_step_whose_breaker_found_no_failures_reads_the_ops_cache_once(
    demo, fake_openai, breaker, monkeypatch
):
    """The step's own look before the call tells the success there is nothing to clear."""
    ops = caches["ops"]
    reads: list[str] = []

    def counted_get(key, *args, **kwargs):
        reads.append(key)
        return type(ops).get(ops, key, *args, **kwargs)

    monkeypatch.setattr(ops, "get", counted_get)
    fake_openai.enqueue(text_reply("Paid 129.00."))

    run = start_run()
    assert step(run).kind == run_step.StepKind.FINISHED

    assert reads == [breaker.failures_key]
    assert breaker.failures() == 0


# --- context length --------------------------------------------------------------------------


def assert_no_orphans(messages: list[dict]) -> None:
    """Every tool result follows the assistant message that called it, and every call made
    is answered."""
    asked: set[str] = set()
    answered: set[str] = set()
    for message in messages:
        if message["role"] == "assistant":
            assert asked == answered, "an earlier call was left without its result"
            asked = {call["id"] for call in message.get("tool_calls") or []}
            answered = set()
        elif message["role"] == "tool":
            assert message["tool_call_id"] in asked, "a tool result without its call"
            answered.add(message["tool_call_id"])
    assert asked == answered


def three_lookups_then(fake_openai, *then) -> None:
    fake_openai.enqueue(
        tool_reply(tool_call("get_order", {"order_id": MUG}, call_id="call_a")),
        tool_reply(tool_call("get_order", {"order_id": HEADPHONES}, call_id="call_b")),
        tool_reply(tool_call("get_refund_status", {"order_id": MUG}, call_id="call_c")),
        *then,
    )


def test_a_context_length_error_trims_the_history_at_a_safe_cut_and_retries_once(
    demo, fake_openai, breaker, monkeypatch
):
    monkeypatch.setattr(step_model, "TRIMMED_HISTORY_BUDGET", 1)
    three_lookups_then(fake_openai, context_length_error(), text_reply("Paid 129.00."))
    run = start_run()

    outcomes = drive(run)

    assert (run.status, run.final_answer) == ("completed", "Paid 129.00.")
    assert run_step.StepKind.RETRY not in [o.kind for o in outcomes]
    assert len(fake_openai.requests) == 5
    refused, retried = fake_openai.requests[3]["messages"], fake_openai.requests[4]["messages"]
    assert len(retried) < len(refused)
    assert_no_orphans(refused)
    assert_no_orphans(retried)
    # The agent's request and the latest exchange stay; what was left out is said.
    assert [m["content"] for m in retried if m["role"] == "user"] == [
        "How much did the customer pay for the mug?"
    ]
    assert [m["tool_call_id"] for m in retried if m["role"] == "tool"] == ["call_c"]
    assert any("earlier messages of this run omitted" in (m["content"] or "") for m in retried)
    assert breaker.failures() == 0


def test_a_second_context_length_error_fails_the_run_with_the_reason(
    demo, fake_openai, breaker, monkeypatch
):
    monkeypatch.setattr(step_model, "TRIMMED_HISTORY_BUDGET", 1)
    three_lookups_then(fake_openai, context_length_error(), context_length_error())
    run = start_run()

    drive(run)

    assert (run.status, run.stop_reason) == ("failed", "error")
    assert run.error == (
        "The model call failed: the conversation is longer than the model's context window, "
        "even with older messages of this run left out."
    )
    assert len(fake_openai.requests) == 5
    assert json.dumps(fake_openai.requests[4]).count('"role": "tool"') == 1
