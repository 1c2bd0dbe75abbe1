"""GET /metrics: Prometheus metrics for staff or the METRICS_TOKEN only; counters right even
when the work happened in a worker process."""

import random
import re
import threading
from datetime import timedelta

import pytest
from celery import current_app
from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import Count
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families
from rest_framework.test import APIClient

from agent.metrics import MODEL_ERRORS, model_call_observed
from agent.models import AgentRun, RunEvent, ToolCallLog
from agent.providers.breaker import ModelBreaker
from agent.providers.llm import ModelError
from agent.providers.openai_client import OpenAIProvider
from ops.metrics import REFUNDS
from refunds.models import RefundRequest
from tests.factories import AgentRunFactory, RefundRequestFactory, TicketFactory
from tests.fakes.openai_server import error_body, text_reply, tool_call, tool_reply
from tests.services import WorkerProcess, wait_for

pytestmark = pytest.mark.django_db

FAMILIES = {
    "desk_agent_steps": "counter",
    "desk_model_call_seconds": "histogram",
    "desk_model_errors": "counter",
    "desk_tool_calls": "counter",
    "desk_agent_runs": "counter",
    "desk_refund_requests": "gauge",
    "desk_review_oldest_pending_seconds": "gauge",
    "desk_sweep_lag_seconds": "gauge",
    "desk_worker_heartbeat_age_seconds": "gauge",
    "desk_model_breaker_failures": "gauge",
    "desk_model_breaker_open": "gauge",
    "desk_tool_call_seconds": "histogram",
    "desk_agent_run_tokens": "histogram",
    "desk_agent_run_steps": "histogram",
}


def scrape(client: Client | None = None, **headers) -> dict[tuple[str, tuple], float]:
    """(sample name, sorted labels) -> value."""
    response = (client or Client()).get("/metrics", **headers)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=0.0.4")
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.content.decode())
        for sample in family.samples
    }


def staff_client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_anonymous_callers_and_wrong_tokens_get_401(settings):
    settings.METRICS_TOKEN = "a-long-scrape-token"

    anonymous = Client().get("/metrics")
    wrong = Client().get("/metrics", HTTP_AUTHORIZATION="Bearer a-long-scrape-tokex")
    empty = Client().get("/metrics", HTTP_AUTHORIZATION="Bearer ")

    assert [anonymous.status_code, wrong.status_code, empty.status_code] == [401, 401, 401]
    assert anonymous["WWW-Authenticate"].startswith("Bearer")
    assert b"desk_" not in anonymous.content + wrong.content + empty.content


def test_no_token_is_accepted_while_metrics_token_is_unset(settings):
    settings.METRICS_TOKEN = ""

    response = Client().get("/metrics", HTTP_AUTHORIZATION="Bearer ")

    assert response.status_code == 401


def test_a_signed_in_user_who_is_not_staff_gets_403(agent_user):
    assert not agent_user.is_staff

    assert staff_client(agent_user).get("/metrics").status_code == 403


def test_staff_and_the_token_may_scrape(reviewer, settings):
    settings.METRICS_TOKEN = "a-long-scrape-token"
    assert reviewer.is_staff

    by_session = scrape(staff_client(reviewer))
    by_token = scrape(HTTP_AUTHORIZATION="Bearer a-long-scrape-token")

    assert by_session.keys() == by_token.keys()


def test_every_metric_family_is_exposed(reviewer):
    response = staff_client(reviewer).get("/metrics")

    types = {
        family.name: family.type
        for family in text_string_to_metric_families(response.content.decode())
    }
    assert {name: types.get(name) for name in FAMILIES} == FAMILIES


def test_refunds_by_status_and_the_oldest_pending_review_are_read_from_the_database(
    reviewer, agent_user
):
    for status in ["pending_approval", "pending_approval", "approved", "succeeded"]:
        RefundRequestFactory(status=status, requested_by=agent_user)
    oldest = RefundRequest.objects.filter(status="pending_approval").first()
    RefundRequest.objects.filter(pk=oldest.pk).update(
        created_at=timezone.now() - timedelta(minutes=10)
    )

    samples = scrape(staff_client(reviewer))

    by_status = {
        dict(labels)["status"]: value
        for (name, labels), value in samples.items()
        if name == "desk_refund_requests"
    }
    assert by_status == {
        status: {"pending_approval": 2, "approved": 1, "succeeded": 1}.get(status, 0)
        for status in RefundRequest.Status.values
    }
    assert 600 <= samples[("desk_review_oldest_pending_seconds", ())] < 660


def test_no_pending_review_is_an_age_of_zero(reviewer):
    assert scrape(staff_client(reviewer))[("desk_review_oldest_pending_seconds", ())] == 0


def test_runs_are_counted_by_stop_reason(reviewer):
    for reason in ["final_answer", "final_answer", "max_steps", "error"]:
        AgentRunFactory(status="completed", stop_reason=reason)
    AgentRunFactory(status="running")  # not ended: not counted

    samples = scrape(staff_client(reviewer))

    runs = {
        dict(labels)["stop_reason"]: value
        for (name, labels), value in samples.items()
        if name == "desk_agent_runs_total"
    }
    assert runs == {
        reason: {"final_answer": 2, "max_steps": 1, "error": 1}.get(reason, 0)
        for reason in AgentRun.StopReason.values
    }


def log_tool_calls(*calls: tuple[str, str], ticket, actor, age=timedelta(0)) -> None:
    """ToolCallLog rows of one run, (tool name, error code) each, written `age` ago."""
    run = AgentRunFactory(ticket=ticket, started_by=actor)
    for tool_name, error_code in calls:
        row = ToolCallLog.objects.create(
            run=run,
            ticket=ticket,
            tool_call_id=f"call_{ToolCallLog.objects.count()}",
            tool_name=tool_name,
            ok=not error_code,
            result={"ok": not error_code},
            error_code=error_code,
            actor=actor,
            actor_role="agent",
        )
        ToolCallLog.objects.filter(pk=row.pk).update(created_at=timezone.now() - age)


def tool_call_samples(client) -> dict[tuple, float]:
    return samples_named(scrape(client), "desk_tool_calls_total")


def test_tool_calls_are_counted_once_settled_and_the_newest_at_each_scrape(reviewer, agent_user):
    # Given tool calls of an hour ago and of now
    ticket = TicketFactory()
    hour = timedelta(hours=1)
    log_tool_calls(
        ("get_order", ""), ("get_order", "NOT_FOUND"), ticket=ticket, actor=agent_user, age=hour
    )
    log_tool_calls(
        ("get_order", ""), ("no_such_tool", "UNKNOWN_TOOL"), ticket=ticket, actor=agent_user
    )
    client = staff_client(reviewer)
    assert tool_call_samples(client) == {
        (("error_code", "none"), ("tool", "get_order")): 2,
        (("error_code", "NOT_FOUND"), ("tool", "get_order")): 1,
        (("error_code", "UNKNOWN_TOOL"), ("tool", "(unknown)")): 1,
    }

    # When more calls are made, old and new, and the next scrape's queries are captured
    log_tool_calls(("search_policies", ""), ticket=ticket, actor=agent_user, age=hour)
    log_tool_calls(("get_order", ""), ticket=ticket, actor=agent_user)
    with CaptureQueriesContext(connection) as captured:
        samples = tool_call_samples(client)

    # Then each is counted once
    assert samples == {
        (("error_code", "none"), ("tool", "get_order")): 3,
        (("error_code", "none"), ("tool", "search_policies")): 1,
        (("error_code", "NOT_FOUND"), ("tool", "get_order")): 1,
        (("error_code", "UNKNOWN_TOOL"), ("tool", "(unknown)")): 1,
    }
    # and every count read only the rows above what the process had counted already
    counts = [
        q["sql"] for q in captured if "COUNT(" in q["sql"] and "agent_toolcalllog" in q["sql"]
    ]
    assert len(counts) == 2
    assert all('"agent_toolcalllog"."id" >' in sql for sql in counts), counts


def counted(samples: dict, name: str, label: str) -> dict[str, float]:
    return {dict(labels)[label]: n for labels, n in samples_named(samples, name).items() if n}


def test_runs_and_refunds_written_long_ago_are_counted_as_they_are_now(reviewer, agent_user):
    # Given an hour-old run still going and an hour-old refund waiting for its reviewer,
    # beside ended and settled ones of the same age
    going = AgentRunFactory(status="running")
    AgentRunFactory(status="completed", stop_reason="final_answer")
    waiting = RefundRequestFactory(status="pending_approval", requested_by=agent_user)
    RefundRequestFactory(status="succeeded", requested_by=agent_user)
    an_hour_ago = timezone.now() - timedelta(hours=1)
    AgentRun.objects.update(created_at=an_hour_ago)
    RefundRequest.objects.update(created_at=an_hour_ago)
    client = staff_client(reviewer)
    first = scrape(client)
    assert counted(first, "desk_agent_runs_total", "stop_reason") == {"final_answer": 1}
    assert counted(first, "desk_refund_requests", "status") == {
        "pending_approval": 1,
        "succeeded": 1,
    }

    # When the run ends and the refund is rejected
    AgentRun.objects.filter(pk=going.pk).update(status="completed", stop_reason="max_steps")
    RefundRequest.objects.filter(pk=waiting.pk).update(status="rejected")
    with CaptureQueriesContext(connection) as captured:
        second = scrape(client)

    # Then the next scrape counts them as they are now
    assert counted(second, "desk_agent_runs_total", "stop_reason") == {
        "final_answer": 1,
        "max_steps": 1,
    }
    assert counted(second, "desk_refund_requests", "status") == {"rejected": 1, "succeeded": 1}
    # and counted only the rows above the mark and those it knew were still open
    counts = [
        q["sql"]
        for q in captured
        if "COUNT(" in q["sql"] and ("agent_agentrun" in q["sql"] or "refunds_" in q["sql"])
    ]
    assert counts
    above_mark_or_open = re.compile(r'"(id|created_at)" > |"id" IN \(')
    assert all(above_mark_or_open.search(sql) for sql in counts), counts


def test_tool_calls_deleted_with_their_ticket_are_no_longer_counted(reviewer, agent_user):
    # Given settled tool calls on two tickets, counted by a scrape
    kept, deleted = TicketFactory(), TicketFactory()
    hour = timedelta(hours=1)
    log_tool_calls(("get_order", ""), ticket=kept, actor=agent_user, age=hour)
    log_tool_calls(("get_order", ""), ("get_order", ""), ticket=deleted, actor=agent_user, age=hour)
    client = staff_client(reviewer)
    assert tool_call_samples(client) == {(("error_code", "none"), ("tool", "get_order")): 3}

    # When the newer ticket is deleted, and its calls with it
    deleted.delete()

    # Then the next scrape counts what is left
    assert tool_call_samples(client) == {(("error_code", "none"), ("tool", "get_order")): 1}


def test_sweep_lag_is_infinite_for_a_sweep_that_never_ran(reviewer, ops_store):
    samples = scrape(staff_client(reviewer))

    assert samples[("desk_sweep_lag_seconds", (("sweep", "reconcile-refunds"),))] == float("inf")


def own_count(kind: str) -> float:
    """This process's own count (the scrape adds up every process's)."""
    return MODEL_ERRORS.labels(kind)._value.get()


def test_a_failed_model_call_is_counted_by_its_kind(fake_openai):
    fake_openai.enqueue(
        error_body(500, "upstream failed"),
        error_body(429, "slow down"),
        error_body(400, "bad request"),
    )
    provider = OpenAIProvider()
    kinds = ["server_error", "rate_limited", "refused"]
    before = {kind: own_count(kind) for kind in kinds}

    for _ in kinds:
        with pytest.raises(ModelError), model_call_observed():
            provider.complete(messages=[{"role": "user", "content": "Hello"}], tools=[])

    assert {kind: own_count(kind) - before[kind] for kind in kinds} == dict.fromkeys(kinds, 1)


def test_the_model_breaker_is_seen_opening_and_closing(reviewer, fake_openai, settings):
    # Given the breaker of the endpoint runs call, closed
    settings.LLM_BREAKER_THRESHOLD = 2
    breaker = ModelBreaker.for_provider(OpenAIProvider())
    breaker.record_success()
    labels = (("endpoint", breaker.endpoint),)
    client = staff_client(reviewer)

    def state() -> tuple[float, float]:
        samples = scrape(client)
        return (
            samples[("desk_model_breaker_failures", labels)],
            samples[("desk_model_breaker_open", labels)],
        )

    try:
        assert state() == (0, 0)
        # When calls fail, up to the threshold, then the model answers again
        breaker.record_failure("HTTP 503")
        assert state() == (1, 0)
        breaker.record_failure("HTTP 503")
        assert state() == (2, 1)
        breaker.record_success()
        # Then the scrape saw it count, open, and close
        assert state() == (0, 0)
    finally:
        breaker.record_success()


def samples_named(samples: dict, name: str) -> dict[tuple, float]:
    return {labels: value for (sample, labels), value in samples.items() if sample == name}


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_counters_include_the_work_of_a_worker_process(
    demo, fake_openai, reviewer, settings, tmp_path
):
    # Given a worker process writing its metrics to a folder of its own
    settings.PROMETHEUS_MULTIPROC_DIR = str(tmp_path)
    fake_openai.enqueue(
        tool_reply(tool_call("get_order", {"order_id": "202610110087"}, call_id="call_1")),
        tool_reply(tool_call("no_such_tool", {}, call_id="call_2")),
        text_reply("The mug cost 129.00 CNY."),
    )
    worker = WorkerProcess(
        current_app.conf.task_default_queue,
        extra_env={**fake_openai.worker_env, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)},
        log_name="ops-metrics",
    ).start()
    try:
        # When a run started over the API is worked to its answer by that worker
        api = APIClient()
        api.force_authenticate(get_user_model().objects.get(username="agent"))
        response = api.post(
            "/api/tickets/TCK-1001/runs/",
            {"message": "Price of the mug?"},
            format="json",
            HTTP_X_REQUEST_ID="trace-run-1",
        )
        assert response.status_code == 202
        run_id = response.json()["id"]
        wait_for(
            lambda: AgentRun.objects.get(pk=run_id).status == "completed",
            what="the run to complete",
            worker=worker,
        )
        wait_for(lambda: "finished" in worker.log(), what="the last step", worker=worker)
    finally:
        worker.stop()

    # Then the web process's scrape counts what the worker did
    samples = scrape(staff_client(reviewer))
    steps = samples_named(samples, "desk_agent_steps_total")
    assert (steps[(("outcome", "continue"),)], steps[(("outcome", "finished"),)]) == (2, 1)
    model_calls = RunEvent.objects.filter(run_id=run_id, type="model.completed").count()
    openai_calls = (("provider", "openai"),)
    assert samples[("desk_model_call_seconds_count", openai_calls)] == model_calls == 3
    assert samples[("desk_model_call_seconds_sum", openai_calls)] > 0
    tool_calls = samples_named(samples, "desk_tool_calls_total")
    assert tool_calls == {
        (("error_code", "none"), ("tool", "get_order")): 1,
        (("error_code", "UNKNOWN_TOOL"), ("tool", "(unknown)")): 1,
    }
    assert samples[("desk_agent_runs_total", (("stop_reason", "final_answer"),))] == 1
    # And what the run used: each tool's handler time (an unknown tool has none), and the
    # run's steps and tokens as the model's usage gave them (120 prompt, 30 completion a call)
    run = AgentRun.objects.get(pk=run_id)
    timed = (("tool", "get_order"),)
    assert samples[("desk_tool_call_seconds_count", timed)] == 1
    assert 0 < samples[("desk_tool_call_seconds_sum", timed)] < 8
    assert not any(
        name.startswith("desk_tool_call_seconds") and dict(labels).get("tool") == "no_such_tool"
        for name, labels in samples
    )
    ended = (("stop_reason", "final_answer"),)
    assert samples[("desk_agent_run_steps_count", ended)] == 1
    assert samples[("desk_agent_run_steps_sum", ended)] == run.step_count == 3
    assert (run.tokens_in, run.tokens_out) == (360, 90)
    assert samples[("desk_agent_run_tokens_sum", (("kind", "prompt"),))] == 360
    assert samples[("desk_agent_run_tokens_sum", (("kind", "completion"),))] == 90
    assert samples[("desk_agent_run_tokens_count", (("kind", "prompt"),))] == 1
    # And the worker's log lines name the run and the request that started it
    assert f"Assistant step: continue [req=trace-run-1 run={run_id}]" in worker.log()


def test_the_counts_kept_between_scrapes_always_equal_a_count_of_the_whole_table(
    reviewer, agent_user
):
    # Given a scrape after each of 60 random changes: runs and refunds made an hour ago or
    # now, runs ended, open refunds moved to any status, tool calls logged
    chance = random.Random(13)
    ticket = TicketFactory()
    open_statuses = [
        status
        for status in RefundRequest.Status.values
        if status not in RefundRequest.SETTLED_STATUSES
    ]
    client = staff_client(reviewer)
    for _ in range(60):
        age = chance.choice([timedelta(0), timedelta(hours=1)])
        change = chance.choice(["run", "end run", "refund", "move refund", "tool call"])
        if change == "run":
            run = AgentRunFactory(ticket=ticket, status="running")
            AgentRun.objects.filter(pk=run.pk).update(created_at=timezone.now() - age)
        elif change == "end run":
            going = list(AgentRun.objects.filter(stop_reason="").values_list("pk", flat=True))
            if going:
                AgentRun.objects.filter(pk=chance.choice(going)).update(
                    status="completed", stop_reason=chance.choice(["final_answer", "max_steps"])
                )
        elif change == "refund":
            refund = RefundRequestFactory(
                status=chance.choice(open_statuses), requested_by=agent_user
            )
            RefundRequest.objects.filter(pk=refund.pk).update(created_at=timezone.now() - age)
        elif change == "move refund":
            still_open = list(
                RefundRequest.objects.filter(status__in=open_statuses).values_list("pk", flat=True)
            )
            if still_open:
                RefundRequest.objects.filter(pk=chance.choice(still_open)).update(
                    status=chance.choice(RefundRequest.Status.values)
                )
        else:
            error = chance.choice(["", "NOT_FOUND"])
            log_tool_calls(("get_order", error), ticket=ticket, actor=agent_user, age=age)

        # When the desk is scraped
        samples = scrape(client)

        # Then every count is the one a count of the whole table gives
        assert counted(samples, "desk_agent_runs_total", "stop_reason") == dict(
            AgentRun.objects.exclude(stop_reason="")
            .order_by()
            .values_list("stop_reason")
            .annotate(n=Count("pk"))
        )
        assert counted(samples, "desk_refund_requests", "status") == dict(
            RefundRequest.objects.order_by().values_list("status").annotate(n=Count("pk"))
        )
        assert sum(samples_named(samples, "desk_tool_calls_total").values()) == (
            ToolCallLog.objects.count()
        )


@pytest.mark.django_db(transaction=True)
def test_a_refund_settled_while_a_scrape_reads_is_counted_once(postgres, agent_user):
    # Given an hour-old refund waiting for its reviewer, and a process that has not counted
    waiting = RefundRequestFactory(status="pending_approval", requested_by=agent_user)
    RefundRequest.objects.filter(pk=waiting.pk).update(
        created_at=timezone.now() - timedelta(hours=1)
    )
    REFUNDS.forget()

    def reject_elsewhere():
        RefundRequest.objects.filter(pk=waiting.pk).update(status="rejected")
        connection.close()

    rejected = []

    def reject_after_the_first_count(execute, sql, params, many, context):
        result = execute(sql, params, many, context)
        if "COUNT(" in sql and not rejected:
            rejected.append(sql)
            other = threading.Thread(target=reject_elsewhere)
            other.start()
            other.join()
        return result

    # When the reviewer's rejection commits between two of a count's reads
    with connection.execute_wrapper(reject_after_the_first_count):
        during = REFUNDS.counts_now()

    # Then the count saw the refund as it was when it began, and the next one as it is now
    assert rejected
    assert during == {("pending_approval",): 1}
    assert REFUNDS.counts_now() == {("rejected",): 1}


@pytest.mark.django_db(transaction=True)
def test_scrapes_at_once_while_refunds_settle_keep_counts_a_whole_count_gives(postgres, agent_user):
    # Given twenty hour-old refunds waiting for review, and a process that has not counted
    waiting = [
        RefundRequestFactory(status="pending_approval", requested_by=agent_user).pk
        for _ in range(20)
    ]
    RefundRequest.objects.update(created_at=timezone.now() - timedelta(hours=1))
    REFUNDS.forget()
    errors: list[BaseException] = []

    def in_thread(work):
        def run():
            try:
                work()
            except BaseException as exc:  # reported by the test thread
                errors.append(exc)
            finally:
                connection.close()

        return threading.Thread(target=run)

    def scrape_often():
        for _ in range(15):
            REFUNDS.counts_now()

    def settle_them():
        for n, pk in enumerate(waiting):
            RefundRequest.objects.filter(pk=pk).update(status="rejected" if n % 2 else "succeeded")

    # When four threads scrape while a reviewer settles them one by one
    threads = [in_thread(scrape_often) for _ in range(4)] + [in_thread(settle_them)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    # Then the kept counts are those of the whole table
    assert errors == []
    assert REFUNDS.counts_now() == {("rejected",): 10, ("succeeded",): 10}
