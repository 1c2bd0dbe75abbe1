import json

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from agent import services
from agent.models import AgentMessage, AgentRun, RunEvent, ToolCallLog
from tests.agent.runs import drive, start_run
from tests.fakes.openai_server import text_reply, tool_call, tool_reply

pytestmark = pytest.mark.django_db


@pytest.fixture
def api():
    return APIClient()


def as_user(api, username):
    api.force_authenticate(get_user_model().objects.get(username=username))
    return api


def test_it_starts_a_run_and_answers_202(api, demo, settings):
    settings.AGENT_MAX_STEPS = 4
    response = as_user(api, "agent").post(
        "/api/tickets/TCK-1001/runs/", {"message": "  What did the mug cost?  "}, format="json"
    )

    assert response.status_code == 202
    body = response.json()
    run = AgentRun.objects.get()
    assert (body["id"], body["status"], body["ticket"]) == (str(run.pk), "queued", "TCK-1001")
    assert (run.actor_role, run.max_steps, run.started_by.username) == ("agent", 4, "agent")
    assert run.prompt_version and run.tools_version
    first = AgentMessage.objects.get(run=run)
    assert (first.seq, first.role, first.content) == (1, "user", "What did the mug cost?")
    assert list(RunEvent.objects.filter(run=run).values_list("type", flat=True)) == ["run.started"]


def test_an_intern_may_start_a_run_with_the_intern_role(api, demo):
    response = as_user(api, "intern").post(
        "/api/tickets/TCK-1001/runs/", {"message": "Hi"}, format="json"
    )

    assert response.status_code == 202
    assert AgentRun.objects.get().actor_role == "intern"


@pytest.mark.parametrize("username", ["reviewer", "outsider"])
def test_a_reviewer_or_an_outsider_may_not_start_a_run(api, demo, outsider, username):
    if username == "outsider":
        api.force_authenticate(outsider)
    else:
        as_user(api, username)

    response = api.post("/api/tickets/TCK-1001/runs/", {"message": "Refund it"}, format="json")

    assert response.status_code == 403
    assert AgentRun.objects.count() == 0


def test_an_unknown_ticket_is_404_and_an_empty_message_is_400(api, demo):
    as_user(api, "agent")

    missing = api.post("/api/tickets/TCK-9999/runs/", {"message": "Hi"}, format="json")
    empty = api.post("/api/tickets/TCK-1001/runs/", {"message": "   "}, format="json")

    assert missing.status_code == 404
    assert empty.status_code == 400
    assert empty.json()["extra"]["fields"]["message"] == ["This field may not be blank."]
    assert AgentRun.objects.count() == 0


def test_an_anonymous_start_is_401(api, demo):
    response = api.post("/api/tickets/TCK-1001/runs/", {"message": "Hi"}, format="json")

    assert response.status_code == 401
    assert AgentRun.objects.count() == 0


def test_staff_read_a_run_in_the_documented_shape(api, demo):
    run = start_run()

    response = as_user(api, "reviewer").get(f"/api/runs/{run.pk}/")

    assert response.status_code == 200
    body = response.json()
    assert {
        "id",
        "ticket",
        "status",
        "stop_reason",
        "step_count",
        "final_answer",
        "created_at",
    } <= set(body)
    assert (
        body["ticket"],
        body["status"],
        body["stop_reason"],
        body["step_count"],
        body["final_answer"],
        body["untrusted_warning"],
    ) == ("TCK-1001", "queued", "", 0, "", False)


@pytest.mark.django_db(transaction=True)
def test_what_a_run_did_is_rendered_from_its_tool_log_not_its_answer(api, demo, fake_openai):
    # Given a model that proposes, is refused once, and then answers something else entirely
    fake_openai.enqueue(
        tool_reply(tool_call("get_order", {"order_id": "202610110087"})),
        tool_reply(
            tool_call(
                "create_refund",
                {
                    "order_id": "202610110087",
                    "amount": "129.00",
                    "reason": "damaged",
                    "explanation": "The mug arrived broken.",
                },
            ),
            tool_call("get_order", {"order_id": "202610150012x"}),
        ),
        text_reply("Done: the customer has been refunded."),
    )
    run = start_run("The mug arrived broken, refund it.")
    drive(run)
    request_id = ToolCallLog.objects.get(tool_name="create_refund").result["request_id"]

    body = as_user(api, "agent").get(f"/api/runs/{run.pk}/").json()

    # Then the answer is posted as the model wrote it, and beside it the desk's own record
    assert body["final_answer"] == "Done: the customer has been refunded."
    # (worded for people: no tool's name, no error code)
    assert body["did"][:2] == [
        "Looked up order #202610110087 (Ceramic mug): 129.00 CNY paid, delivered 5 days ago, "
        "129.00 CNY left to refund.",
        f"Proposed a refund of 129.00 CNY for order #202610110087 (Ceramic mug) (request "
        f"{request_id}): waiting for a reviewer, nothing refunded yet.",
    ]
    assert body["did"][2].startswith("Could not look up order #202610150012x: ")
    assert len(body["did"]) == 3
    assert not any("get_order" in line or "INVALID_ARGUMENTS" in line for line in body["did"])


def test_an_outsider_cannot_read_a_run_and_an_unknown_run_is_404(api, demo, outsider):
    run = start_run()
    api.force_authenticate(outsider)
    assert api.get(f"/api/runs/{run.pk}/").status_code == 403
    as_user(api, "agent")
    assert api.get("/api/runs/00000000-0000-0000-0000-000000000000/").status_code == 404


def test_events_after_a_seq_are_a_plain_list(api, demo):
    run = start_run()
    services.run_event_append(run=run, type="model.started", data={"step": 1})
    services.run_event_append(run=run, type="message", data={"content": "hi"})

    response = as_user(api, "agent").get(f"/api/runs/{run.pk}/events/?after=1")

    assert response.status_code == 200
    body = response.json()
    assert [(e["seq"], e["type"], e["data"]) for e in body] == [
        (2, "model.started", {"step": 1}),
        (3, "message", {"content": "hi"}),
    ]
    assert set(body[0]) == {"seq", "type", "data", "created_at"}


def sse_events(response) -> list[dict]:
    text = b"".join(response.streaming_content).decode()
    frames = []
    for block in text.split("\n\n"):
        fields = dict(
            line.split(": ", 1)
            for line in block.splitlines()
            if line and not line.startswith(":") and ": " in line
        )
        if "event" in fields:
            frames.append(
                {
                    "id": int(fields["id"]),
                    "event": fields["event"],
                    "data": json.loads(fields["data"]),
                }
            )
    return frames


def test_the_event_stream_resumes_after_last_event_id_and_ends_with_the_run(api, demo):
    run = start_run()
    services.run_event_append(run=run, type="model.started", data={"step": 1})
    services.run_event_append(run=run, type="message", data={"content": "hi"})
    services.run_acquire_lease(run_id=run.pk, owner="t")
    services.run_finish(run=run, owner="t", stop_reason="final_answer", final_answer="hi")

    response = as_user(api, "agent").get(
        f"/api/runs/{run.pk}/events/stream/",
        HTTP_LAST_EVENT_ID="2",
        HTTP_ACCEPT="text/event-stream",
    )

    assert response.status_code == 200
    assert response["Content-Type"] == "text/event-stream"
    frames = sse_events(response)
    assert [(f["id"], f["event"]) for f in frames] == [(3, "message"), (4, "run.completed")]
    assert frames[1]["data"]["data"] == {"stop_reason": "final_answer", "final_answer": "hi"}


def test_the_event_stream_takes_after_from_the_query_string(api, demo):
    run = start_run()
    services.run_request_cancel(run=run, user=run.started_by)

    response = as_user(api, "agent").get(f"/api/runs/{run.pk}/events/stream/?after=1")

    assert [(f["id"], f["event"]) for f in sse_events(response)] == [(2, "run.cancelled")]


def test_the_starter_and_a_supervisor_may_cancel_but_another_agent_may_not(api, demo):
    run = start_run(username="agent")

    refused = as_user(api, "agent2").post(f"/api/runs/{run.pk}/cancel/")
    assert refused.status_code == 403
    assert refused.json()["code"] == "run_forbidden"
    run.refresh_from_db()
    assert (run.status, run.cancel_requested) == ("queued", False)

    allowed = as_user(api, "supervisor").post(f"/api/runs/{run.pk}/cancel/")
    assert allowed.status_code == 200
    assert (allowed.json()["status"], allowed.json()["stop_reason"]) == ("cancelled", "cancelled")
    assert RunEvent.objects.filter(run=run, type="run.cancelled").count() == 1

    own = start_run(username="agent")
    assert as_user(api, "agent").post(f"/api/runs/{own.pk}/cancel/").status_code == 200


def test_cancelling_a_run_that_is_mid_step_only_flags_it(api, demo):
    run = start_run()
    services.run_acquire_lease(run_id=run.pk, owner="busy-worker")

    response = as_user(api, "agent").post(f"/api/runs/{run.pk}/cancel/")

    assert response.status_code == 200
    assert (response.json()["status"], response.json()["cancel_requested"]) == ("running", True)
    assert not RunEvent.objects.filter(run=run, type="run.cancelled").exists()


def test_cancelling_a_finished_run_is_409(api, demo):
    run = start_run()
    services.run_acquire_lease(run_id=run.pk, owner="t")
    services.run_finish(run=run, owner="t", stop_reason="final_answer", final_answer="ok")

    response = as_user(api, "agent").post(f"/api/runs/{run.pk}/cancel/")

    assert response.status_code == 409
    assert response.json()["code"] == "run_finished"


@pytest.mark.django_db(transaction=True)
def test_tool_calls_list_the_log_rows_in_the_documented_shape(api, demo, fake_openai):
    fake_openai.enqueue(
        tool_reply(tool_call("get_order", {"order_id": "202610110087"}, call_id="call_1")),
        text_reply("Paid 129.00."),
    )
    run = start_run()
    drive(run)

    response = as_user(api, "reviewer").get(f"/api/runs/{run.pk}/tool-calls/")

    assert response.status_code == 200
    [row] = response.json()
    assert set(row) == {
        "tool_call_id",
        "tool_name",
        "arguments",
        "ok",
        "error_code",
        "error_words",
        "result",
        "actor",
        "elapsed_ms",
        "created_at",
    }
    assert (
        row["tool_call_id"],
        row["tool_name"],
        row["arguments"],
        row["ok"],
        row["error_code"],
        row["actor"],
    ) == ("call_1", "get_order", {"order_id": "202610110087"}, True, "", "agent")
    assert row["result"] == ToolCallLog.objects.get(run=run).result


def test_the_schema_documents_the_run_endpoints(api, demo):
    response = as_user(api, "agent").get("/api/schema/", HTTP_ACCEPT="application/json")

    paths = response.json()["paths"]
    assert "/api/tickets/{reference}/runs/" in paths
    assert "/api/runs/{run_id}/events/stream/" in paths
    assert "202" in paths["/api/tickets/{reference}/runs/"]["post"]["responses"]
