"""The reference acceptance list, end to end: `POST /api/tickets/<ref>/runs/` as the demo
user, a scripted model, the run executed by a real Celery worker process, payments through the
simulated provider (its ledger is the SimulatedRefund table the worker writes to)."""

import json

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from agent.models import AgentMessage, AgentRun, RunEvent, ToolCallLog
from agent.runtime.prompts import FINAL_CALL_NOTE
from agent.untrusted import untrusted_blocks
from refunds.models import RefundConfirmation, RefundEvent, RefundRequest, SimulatedRefund
from refunds.tasks import execute_refund, reconcile_refunds
from tests.acceptance.conftest import (
    api_as,
    post_run,
    tasks_received,
    wait_for,
    wait_for_run,
)
from tests.fakes.openai_server import text_reply, tool_call, tool_reply
from tests.services import run_in_threads
from tickets.models import TicketMessage

pytestmark = pytest.mark.django_db(transaction=True)

MUG_ORDER = "202610110087"
HEADPHONES_ORDER = "202610150012"
PRICE_QUESTION = "How much did the customer pay for the mug?"
MUG_REFUND = (
    '{"order_id": "202610110087", "amount": 129.00, "reason": "damaged", '
    '"explanation": "The mug arrived broken; the photo is on the ticket."}'
)
AGENT_TOOLS = [
    "get_order",
    "list_customer_orders",
    "search_policies",
    "get_refund_status",
    "read_tool_result",
    "create_refund",
]


def offered_tools(request: dict) -> list[str]:
    return [tool["function"]["name"] for tool in request.get("tools", [])]


def sent_result(tool_message: dict) -> dict:
    """A tool result as the model got it: JSON inside one untrusted block."""
    content = tool_message["content"]
    assert content.startswith('<untrusted source="tool_result">')
    (body,) = untrusted_blocks(content)
    return json.loads(body)


def logs(run_id: str) -> list[ToolCallLog]:
    return list(ToolCallLog.objects.filter(run_id=run_id).order_by("created_at", "pk"))


def ticket_refunds(reference: str = "TCK-1001"):
    return RefundRequest.objects.filter(ticket__reference=reference)


def price_question_script(fake_openai, *calls: dict) -> None:
    fake_openai.enqueue(tool_reply(*calls), text_reply("The customer paid 129.00 CNY for the mug."))


# --- 1-3: a price question ------------------------------------------------------------------


def test_it_answers_a_price_question_by_calling_get_order_first(worker, fake_openai):
    # Given a model that looks the order up, then answers
    price_question_script(
        fake_openai, tool_call("get_order", {"order_id": MUG_ORDER}, call_id="call_price")
    )

    # When an agent asks the price through the API and the worker runs the steps
    run_id = post_run(PRICE_QUESTION)
    run = wait_for_run(run_id, worker)

    # Then the first model request offered the agent's tools but create_refund, which comes
    # once an order was looked up in the run (DESIGN §16), and asked the question
    first = fake_openai.requests[0]
    assert offered_tools(first) == [tool for tool in AGENT_TOOLS if tool != "create_refund"]
    assert offered_tools(fake_openai.requests[1]) == AGENT_TOOLS
    assert first["tool_choice"] == "auto"
    assert first["messages"][-1] == {"role": "user", "content": PRICE_QUESTION}
    # and the first thing the run did was the get_order call the model asked for
    assistant = AgentMessage.objects.filter(run=run, role="assistant").order_by("seq").first()
    assert [(c["id"], c["function"]["name"]) for c in assistant.tool_calls] == [
        ("call_price", "get_order")
    ]
    assert [(log.tool_call_id, log.tool_name) for log in logs(run_id)] == [
        ("call_price", "get_order")
    ]
    started = RunEvent.objects.filter(run=run, type="tool_call.started").order_by("seq")
    assert [e.data["name"] for e in started] == ["get_order"]
    # and the run answered, after exactly two model calls
    assert (run.status, run.stop_reason, run.step_count) == ("completed", "final_answer", 2)
    assert run.final_answer == "The customer paid 129.00 CNY for the mug."
    assert len(fake_openai.requests) == 2
    detail = api_as("agent").get(f"/api/runs/{run_id}/").json()
    assert (detail["status"], detail["final_answer"]) == (
        "completed",
        "The customer paid 129.00 CNY for the mug.",
    )
    # and a question moved no money
    assert not ticket_refunds().exists()
    assert SimulatedRefund.objects.count() == 0


def test_it_logs_get_order_arguments_as_json_with_a_digit_string_order_id(worker, fake_openai):
    # Given a model whose first call sends the order id as a number, then as a string
    fake_openai.enqueue(
        tool_reply(tool_call("get_order", '{"order_id": 202610110087}', call_id="call_number")),
        tool_reply(tool_call("get_order", '{"order_id": "202610110087"}', call_id="call_text")),
        text_reply("The customer paid 129.00 CNY for the mug."),
    )

    # When the run goes through the worker
    run_id = post_run(PRICE_QUESTION)
    run = wait_for_run(run_id, worker)

    # Then the schema the model was offered asks for a digit string
    (get_order,) = [
        t["function"]
        for t in fake_openai.requests[0]["tools"]
        if t["function"]["name"] == "get_order"
    ]
    assert get_order["parameters"]["properties"]["order_id"]["type"] == "string"
    assert get_order["parameters"]["properties"]["order_id"]["pattern"] == "^[0-9]{8,20}$"
    assert get_order["parameters"]["additionalProperties"] is False
    # and the numeric id was refused before the tool ran: no order data went back
    number, text = logs(run_id)
    assert (number.tool_call_id, number.ok, number.error_code) == (
        "call_number",
        False,
        "INVALID_ARGUMENTS",
    )
    assert number.result["error"]["field_errors"] == {"order_id": "must be a string, not a number"}
    assert "amount_paid" not in number.result
    # and the accepted call's arguments are JSON holding the order id as a digit string
    assert (text.tool_call_id, text.tool_name, text.ok, text.error_code) == (
        "call_text",
        "get_order",
        True,
        "",
    )
    assert json.loads(text.arguments_raw) == {"order_id": MUG_ORDER}
    assert text.arguments == {"order_id": MUG_ORDER}
    assert isinstance(text.arguments["order_id"], str)
    assert text.arguments["order_id"].isdigit()
    assert (text.result["order_id"], text.result["amount_paid"]) == (MUG_ORDER, "129.00")
    # the API shows the same log
    shown = api_as("agent").get(f"/api/runs/{run_id}/tool-calls/").json()
    shown = shown["results"] if isinstance(shown, dict) else shown
    assert sorted(
        (c["tool_call_id"], c["ok"], c["arguments"] == {"order_id": MUG_ORDER}) for c in shown
    ) == [("call_number", False, False), ("call_text", True, True)]
    assert (run.status, run.step_count) == ("completed", 3)


def test_it_returns_the_tool_result_under_the_same_tool_call_id(worker, fake_openai):
    # Given a model that looks the order up, then answers
    price_question_script(
        fake_openai, tool_call("get_order", {"order_id": MUG_ORDER}, call_id="call_price")
    )

    # When the run goes through the worker
    run = wait_for_run(post_run(PRICE_QUESTION), worker)

    # Then the second request carries the assistant's call and one result under its id
    second = fake_openai.requests[1]["messages"]
    (assistant,) = [m for m in second if m["role"] == "assistant"]
    assert [c["id"] for c in assistant["tool_calls"]] == ["call_price"]
    (tool_message,) = fake_openai.tool_messages(1)
    assert tool_message["tool_call_id"] == "call_price"
    assert second.index(tool_message) == second.index(assistant) + 1
    # and the result is the order, as data inside an untrusted block
    result = sent_result(tool_message)
    assert (result["ok"], result["order_id"], result["amount_paid"], result["currency"]) == (
        True,
        MUG_ORDER,
        "129.00",
        "CNY",
    )
    assert result == ToolCallLog.objects.get(run=run).result
    assert run.status == "completed"


# --- 4-5: proposals wait for a reviewer ----------------------------------------------------


def test_it_leaves_an_unapproved_refund_pending_and_the_provider_untouched(worker, fake_openai):
    # Given a model that proposes a refund of the mug
    fake_openai.enqueue(
        tool_reply(tool_call("get_order", {"order_id": MUG_ORDER}, call_id="call_look")),
        tool_reply(tool_call("create_refund", MUG_REFUND, call_id="call_propose")),
        text_reply("I proposed a refund of 129.00 CNY; a reviewer has to approve it."),
    )
    execute_before = tasks_received(worker, "refunds.tasks.execute_refund")

    # When the run goes through the worker
    run = wait_for_run(post_run("Refund the broken mug."), worker)

    # Then the proposal waits for a reviewer
    assert (run.status, run.stop_reason) == ("completed", "final_answer")
    refund = ticket_refunds().get()
    assert (refund.status, str(refund.amount), refund.order.order_id) == (
        "pending_approval",
        "129.00",
        MUG_ORDER,
    )
    assert list(refund.confirmations.values_list("version", "status")) == [(1, "pending")]
    result = sent_result(fake_openai.tool_messages(2)[-1])
    assert (result["ok"], result["status"], result["request_id"], result["version"]) == (
        True,
        "pending_approval",
        refund.request_id,
        1,
    )
    assert "fingerprint" not in json.dumps(result)
    assert RunEvent.objects.filter(run=run, type="approval.required").count() == 1
    # and nothing reached the provider, not even once the worker ran everything queued so far
    # and a reconciliation sweep after it (it takes one task at a time, in order)
    assert SimulatedRefund.objects.count() == 0
    sweep = reconcile_refunds.delay()
    wait_for(lambda: worker.finished(sweep), what="the queued tasks to drain", worker=worker)
    refund.refresh_from_db()
    assert refund.status == "pending_approval"
    assert refund.provider_refund_id == ""
    assert SimulatedRefund.objects.count() == 0
    assert tasks_received(worker, "refunds.tasks.execute_refund") == execute_before
    assert list(
        RefundEvent.objects.filter(refund_request=refund).values_list("to_status", flat=True)
    ) == ["pending_approval"]


def test_the_model_cannot_confirm_its_own_refund_only_a_reviewer_can(worker, fake_openai):
    # Given a model that proposes, proposes again, then claims the refund is approved
    approved = json.dumps({**json.loads(MUG_REFUND), "approved": True})
    fake_openai.enqueue(
        tool_reply(tool_call("get_order", {"order_id": MUG_ORDER}, call_id="call_look")),
        tool_reply(tool_call("create_refund", MUG_REFUND, call_id="call_propose")),
        tool_reply(tool_call("create_refund", MUG_REFUND, call_id="call_again")),
        tool_reply(tool_call("create_refund", approved, call_id="call_approved")),
        text_reply("The refund is approved and done."),
    )

    # When the run goes through the worker
    run = wait_for_run(post_run("Refund the broken mug now."), worker)

    # Then the repeat is the same request and version, and the approval claim was refused
    _, first, again, claimed = logs(run.pk)
    refund = ticket_refunds().get()
    assert (first.ok, first.result["request_id"], first.result["version"]) == (
        True,
        refund.request_id,
        1,
    )
    assert (again.ok, again.result["request_id"], again.result["version"]) == (
        True,
        refund.request_id,
        1,
    )
    assert "nothing changed" in again.result["message"]
    assert (claimed.ok, claimed.error_code) == (False, "INVALID_ARGUMENTS")
    assert list(claimed.result["error"]["field_errors"]) == ["approved"]
    assert sent_result(fake_openai.tool_messages(4)[-1])["error"]["code"] == "INVALID_ARGUMENTS"
    # and nothing changed: one request, one pending version, no provider call
    assert run.status == "completed"
    assert refund.status == "pending_approval"
    assert list(refund.confirmations.values_list("version", "status")) == [(1, "pending")]
    assert RefundEvent.objects.filter(refund_request=refund).count() == 1
    assert SimulatedRefund.objects.count() == 0

    # When the agent tries the approval endpoint itself
    shown = api_as("reviewer").get(f"/api/refunds/{refund.request_id}/").json()
    (confirmation,) = shown["confirmations"]
    body = {"version": confirmation["version"], "fingerprint": confirmation["fingerprint"]}
    denied = api_as("agent").post(f"/api/refunds/{refund.request_id}/approve/", body, format="json")

    # Then it is refused and nothing moves
    assert denied.status_code == 403
    refund.refresh_from_db()
    assert refund.status == "pending_approval"
    assert SimulatedRefund.objects.count() == 0

    # When a reviewer approves the version and fingerprint they saw
    response = api_as("reviewer").post(
        f"/api/refunds/{refund.request_id}/approve/", body, format="json"
    )

    # Then the worker executes it, once
    assert response.status_code == 200, response.content
    wait_for(
        lambda: RefundRequest.objects.get(pk=refund.pk).status == "succeeded",
        what="the approved refund to succeed",
        worker=worker,
    )
    refund.refresh_from_db()
    ledger = SimulatedRefund.objects.get()
    assert (ledger.idempotency_key, str(ledger.amount)) == (refund.request_id, "129.00")
    assert refund.provider_refund_id == ledger.provider_refund_id
    assert list(refund.confirmations.values_list("version", "status", "decided_by__username")) == [
        (1, "approved", "reviewer")
    ]


# --- 6-7: authority -------------------------------------------------------------------------


def test_it_refuses_an_agent_refund_over_500_naming_r5(worker, fake_openai):
    # Given a model that looks the headphones up, then proposes the full 899.00
    fake_openai.enqueue(
        tool_reply(tool_call("get_order", {"order_id": HEADPHONES_ORDER}, call_id="call_look")),
        tool_reply(
            tool_call(
                "create_refund",
                {
                    "order_id": HEADPHONES_ORDER,
                    "amount": 899.00,
                    "reason": "damaged",
                    "explanation": "The headphones stopped working after twelve days.",
                },
                call_id="call_big",
            )
        ),
        text_reply("This needs a supervisor."),
    )

    # When an agent's run goes through the worker
    run = wait_for_run(post_run("Refund the headphones in full.", reference="TCK-1004"), worker)

    # Then the call was refused by the role limit of clause R-5
    log = ToolCallLog.objects.get(run=run, tool_name="create_refund")
    assert (log.tool_call_id, log.ok, log.error_code, log.actor_role) == (
        "call_big",
        False,
        "AMOUNT_OVER_ROLE_LIMIT",
        "agent",
    )
    error = sent_result(fake_openai.tool_messages(2)[-1])["error"]
    assert error["code"] == "AMOUNT_OVER_ROLE_LIMIT"
    assert error["clauses"] == ["R-5"]
    assert error["message"].startswith(
        "R-5: requested 899.00 CNY exceeds the agent limit of 500.00 CNY"
    )
    # and no request was recorded, nothing proposed on the ticket, nothing refunded
    assert run.status == "completed"
    assert not RefundRequest.objects.filter(order__order_id=HEADPHONES_ORDER).exists()
    assert not TicketMessage.objects.filter(
        ticket__reference="TCK-1004", body__contains="proposed"
    ).exists()
    assert SimulatedRefund.objects.count() == 0


def test_it_refuses_create_refund_for_an_intern_and_never_offers_it(worker, fake_openai):
    # Given a model that calls create_refund although it was not offered
    fake_openai.enqueue(
        tool_reply(tool_call("create_refund", MUG_REFUND, call_id="call_intern")),
        text_reply("An agent has to propose this refund."),
    )

    # When an intern's run goes through the worker
    run = wait_for_run(post_run("Refund the broken mug.", username="intern"), worker)

    # Then the intern's first request offered only the read tools
    assert offered_tools(fake_openai.requests[0]) == AGENT_TOOLS[:5]
    # and the call was refused by role before anything ran
    log = ToolCallLog.objects.get(run=run)
    assert (log.tool_call_id, log.ok, log.error_code, log.actor_role, log.actor.username) == (
        "call_intern",
        False,
        "PERMISSION_DENIED",
        "intern",
        "intern",
    )
    assert sent_result(fake_openai.tool_messages(1)[0])["error"]["code"] == "PERMISSION_DENIED"
    assert run.status == "completed"
    assert not ticket_refunds().exists()
    assert SimulatedRefund.objects.count() == 0


# --- 8: concurrency -------------------------------------------------------------------------


def propose_then_answer(request: dict) -> dict:
    """Look the mug up, propose its refund (DESIGN §16: only after the lookup), answer."""
    tool_results = [m for m in request["messages"] if m["role"] == "tool"]
    if not tool_results:
        return tool_reply(tool_call("get_order", {"order_id": MUG_ORDER}))
    if len(tool_results) == 1:
        return tool_reply(tool_call("create_refund", MUG_REFUND))
    return text_reply("Proposed; waiting for a reviewer.")


def start_runs_at_once(count: int, message: str) -> list:
    """`count` API calls released together from threads; each returns a run id or an error."""
    user = get_user_model().objects.get(username="agent")

    def start(_index: int):
        client = APIClient()
        client.force_authenticate(user)
        return post_run(message, client=client)

    return run_in_threads(count, start)


def test_ten_concurrent_identical_proposals_make_one_request_and_one_provider_refund(
    worker, extra_workers, fake_openai
):
    # Given three workers and a model that proposes the same refund in every run
    helpers = extra_workers(2)
    fake_openai.respond_with(propose_then_answer)

    # When ten runs are started at once through the API
    run_ids = start_runs_at_once(10, "Refund the broken mug.")
    assert [r for r in run_ids if not isinstance(r, str)] == []
    runs = [wait_for_run(run_id, worker, timeout=60) for run_id in run_ids]

    # Then every run proposed, and all got the one request and its version 1
    assert [run.status for run in runs] == ["completed"] * 10
    refund = ticket_refunds().get()
    proposals = list(ToolCallLog.objects.filter(run_id__in=run_ids, tool_name="create_refund"))
    assert len(proposals) == 10
    assert {(p.ok, p.result["request_id"], p.result["version"]) for p in proposals} == {
        (True, refund.request_id, 1)
    }
    assert sorted(p.result["message"].split(" ")[0] for p in proposals) == (
        ["Proposed"] + ["This"] * 9
    )
    assert list(refund.confirmations.values_list("version", "status")) == [(1, "pending")]
    assert SimulatedRefund.objects.count() == 0
    for helper in helpers:
        helper.stop()

    # When a reviewer approves and the worker executes it
    confirmation = RefundConfirmation.objects.get(refund_request=refund)
    response = api_as("reviewer").post(
        f"/api/refunds/{refund.request_id}/approve/",
        {"version": 1, "fingerprint": confirmation.fingerprint},
        format="json",
    )
    assert response.status_code == 200, response.content
    wait_for(
        lambda: RefundRequest.objects.get(pk=refund.pk).status == "succeeded",
        what="the approved refund to succeed",
        worker=worker,
    )
    # and the execution is enqueued ten more times, and reconciliation runs
    executions_before = tasks_received(worker, "refunds.tasks.execute_refund")
    sent = [execute_refund.delay(refund.pk) for _ in range(10)]
    sent.append(reconcile_refunds.delay())
    # Wait for each one: the filesystem broker orders messages published in the same
    # millisecond at random, so the sweep finishing says nothing of the others.
    wait_for(
        lambda: all(worker.finished(task) for task in sent),
        what="the queued tasks to drain",
        worker=worker,
    )

    # Then the provider holds exactly one refund, under the request's key
    assert tasks_received(worker, "refunds.tasks.execute_refund") == executions_before + 10
    refund.refresh_from_db()
    ledger = SimulatedRefund.objects.get()
    assert ledger.idempotency_key == refund.request_id
    assert refund.provider_refund_id == ledger.provider_refund_id
    assert ticket_refunds().count() == 1
    assert list(
        RefundEvent.objects.filter(refund_request=refund)
        .order_by("pk")
        .values_list("to_status", flat=True)
    ) == ["pending_approval", "approved", "executing", "succeeded"]


# --- 10: the step limit ---------------------------------------------------------------------


def always_wants_a_tool(request: dict) -> dict:
    # Even the final call (tool_choice "none") asks for one more lookup.
    return tool_reply(
        tool_call("get_order", {"order_id": MUG_ORDER}),
        content=None
        if request["tool_choice"] == "auto"
        else "I looked the mug order up twice and stopped; no refund was proposed.",
    )


def test_it_stops_at_max_steps_with_an_explanation(worker, fake_openai, settings):
    # Given a step limit of 2 (bound to the run when it starts) and a model that always
    # wants another tool
    settings.AGENT_MAX_STEPS = 2
    fake_openai.respond_with(always_wants_a_tool)

    # When the run goes through the worker
    run_id = post_run(PRICE_QUESTION)
    run = wait_for_run(run_id, worker)

    # Then two calls could use tools, and the last one could not
    assert [r["tool_choice"] for r in fake_openai.requests] == ["auto", "auto", "none"]
    assert fake_openai.requests[-1]["messages"][-1] == {
        "role": "system",
        "content": FINAL_CALL_NOTE,
    }
    # and the run stopped with the model's explanation, without running the last tool call
    assert (run.status, run.stop_reason, run.step_count, run.max_steps) == (
        "completed",
        "max_steps",
        3,
        2,
    )
    assert run.final_answer == (
        "I looked the mug order up twice and stopped; no refund was proposed."
    )
    assert ToolCallLog.objects.filter(run=run).count() == 2
    assert (
        AgentMessage.objects.filter(run=run, role="assistant").order_by("seq").last().tool_calls
        is None
    )
    detail = api_as("agent").get(f"/api/runs/{run_id}/").json()
    assert (detail["stop_reason"], detail["final_answer"]) == ("max_steps", run.final_answer)
    assert AgentRun.objects.get(pk=run_id).status == "completed"
