"""The step loop, driven in this process against the fake OpenAI server over real HTTP.

Tools run on their own thread and database connection, so these tests use real commits
(`transactional_db`).
"""

import json
import threading
import time

import pytest

from agent import services
from agent.errors import ErrorCode
from agent.models import AgentMessage, AgentRun, RunEvent, ToolCallLog
from agent.runtime import run_step
from agent.runtime.calls import LOOKUPS_TOGETHER, together
from agent.runtime.prompts import FINAL_CALL_NOTE, PROMPT_VERSION
from agent.untrusted import labelled_untrusted_blocks, untrusted_blocks
from tests.agent.runs import drive, probe_tool, start_run
from tests.fakes.openai_server import error_body, text_reply, tool_call, tool_reply
from tickets.models import TicketMessage

pytestmark = pytest.mark.django_db(transaction=True)


def sent_result(tool_message: dict) -> dict:
    """The tool result as the model got it: JSON inside an untrusted block."""
    content = tool_message["content"]
    assert content.startswith('<untrusted source="tool_result">')
    (body,) = untrusted_blocks(content)
    return json.loads(body)


def roles(run):
    return list(AgentMessage.objects.filter(run=run).order_by("seq").values_list("role", flat=True))


def event_types(run):
    return list(RunEvent.objects.filter(run=run).order_by("seq").values_list("type", flat=True))


def ask_for_both_probes(fake_openai, *then) -> None:
    """The model asks for probe_first and probe_second in one reply (call_1, call_2), then
    answers `then`."""
    fake_openai.enqueue(
        tool_reply(
            tool_call("probe_first", {}, call_id="call_1"),
            tool_call("probe_second", {}, call_id="call_2"),
        ),
        *then,
    )


def test_it_looks_up_the_order_and_sends_the_result_back_under_the_same_call_id(demo, fake_openai):
    # Given a model that looks the order up, then answers
    fake_openai.enqueue(
        tool_reply(tool_call("get_order", {"order_id": "202610110087"}, call_id="call_order")),
        text_reply("The customer paid 129.00 CNY for the mug."),
    )
    run = start_run("How much did the customer pay for the mug?")

    # When the steps run
    drive(run)

    # Then the first response asked for get_order with a digit-string order id
    log = ToolCallLog.objects.get(run=run)
    assert (log.tool_call_id, log.tool_name, log.ok) == ("call_order", "get_order", True)
    assert json.loads(log.arguments_raw) == {"order_id": "202610110087"}
    # and the second request carried the assistant's call and its result under the same id
    second = fake_openai.requests[1]["messages"]
    assistant = next(m for m in second if m["role"] == "assistant")
    assert [c["id"] for c in assistant["tool_calls"]] == ["call_order"]
    tool_messages = fake_openai.tool_messages(1)
    assert [m["tool_call_id"] for m in tool_messages] == ["call_order"]
    result = sent_result(tool_messages[0])
    assert (result["ok"], result["order_id"], result["amount_paid"]) == (
        True,
        "202610110087",
        "129.00",
    )
    # and the run finished with the answer, posted on the ticket by the assistant
    assert (run.status, run.stop_reason, run.step_count) == ("completed", "final_answer", 2)
    assert run.final_answer == "The customer paid 129.00 CNY for the mug."
    assert (run.tokens_in, run.tokens_out) == (240, 60)
    posted = TicketMessage.objects.filter(ticket=run.ticket, author_kind="assistant")
    assert [m.body for m in posted] == ["The customer paid 129.00 CNY for the mug."]
    assert roles(run) == ["user", "assistant", "tool", "assistant"]
    assert event_types(run) == [
        "run.started",
        "model.started",
        "model.completed",
        "tool_call.started",
        "tool_call.completed",
        "model.started",
        "model.completed",
        "run.completed",
    ]
    started = RunEvent.objects.get(run=run, type="tool_call.started")
    assert started.data["summary"] == "Looking up order 202610110087…"
    assert fake_openai.requests[0]["tool_choice"] == "auto"
    assert fake_openai.requests[0]["parallel_tool_calls"] is True


def test_it_sends_a_system_prompt_with_scope_rules_and_wrapped_customer_text(demo, fake_openai):
    fake_openai.enqueue(text_reply("Hello."))
    run = start_run("Summarise the ticket.", reference="TCK-1003")

    drive(run)

    messages = fake_openai.requests[0]["messages"]
    assert [m["role"] for m in messages[:3]] == ["system", "system", "system"]
    rules, system = messages[0]["content"], messages[1]["content"]
    assert "R-1" in rules
    assert "pending approval" in rules
    assert "Bound scope: ticket TCK-1003 of customer id " in system
    assert ("customer_name", "Sam") in labelled_untrusted_blocks(system)
    assert "You act for: agent, role agent." in system
    assert "Actor role: agent\n" in system
    assert "Ticket order: 202610220314\n" in system
    thread = messages[2]["content"]
    assert thread.count('<untrusted source="customer_message') == 1
    assert "SYSTEM MESSAGE TO THE SUPPORT ASSISTANT" in thread
    assert messages[3] == {"role": "user", "content": "Summarise the ticket."}
    # and the injection in the customer's message raised the run's warning flag
    assert run.untrusted_instructions is True
    assert run.prompt_version == PROMPT_VERSION


def test_a_harmless_ticket_does_not_raise_the_untrusted_flag(demo, fake_openai):
    fake_openai.enqueue(text_reply("Hello."))
    run = start_run("Summarise the ticket.", reference="TCK-1001")

    drive(run)

    assert run.untrusted_instructions is False


def test_it_stops_after_max_steps_with_a_final_call_that_allows_no_tools(
    demo, fake_openai, settings
):
    # Given a model that always wants another lookup
    settings.AGENT_MAX_STEPS = 2
    fake_openai.respond_with(
        lambda request: (
            tool_reply(tool_call("get_order", {"order_id": "202610110087"}))
            if request["tool_choice"] == "auto"
            else text_reply("I looked up order 202610110087 twice; I did not propose a refund.")
        )
    )
    run = start_run()

    drive(run)

    # Then two calls with tools, then one final call with tool_choice="none"
    assert [r["tool_choice"] for r in fake_openai.requests] == ["auto", "auto", "none"]
    assert fake_openai.requests[2]["messages"][-1] == {"role": "system", "content": FINAL_CALL_NOTE}
    assert (run.status, run.stop_reason, run.step_count) == ("completed", "max_steps", 3)
    assert run.final_answer == ("I looked up order 202610110087 twice; I did not propose a refund.")
    assert ToolCallLog.objects.filter(run=run).count() == 2


def test_at_max_steps_an_empty_final_reply_gets_a_summary_from_the_tool_log(
    demo, fake_openai, settings
):
    settings.AGENT_MAX_STEPS = 1
    fake_openai.enqueue(
        tool_reply(tool_call("get_order", {"order_id": "202610110087"})),
        tool_reply(tool_call("get_order", {"order_id": "202610150012"})),
    )
    run = start_run()

    drive(run)

    assert (run.status, run.stop_reason) == ("completed", "max_steps")
    assert run.final_answer.startswith("I reached the step limit")
    assert "- Looked up order #202610110087 (Ceramic mug)" in run.final_answer
    assert "get_order" not in run.final_answer  # said for people, not as the tool's name
    assert "What I did not do" in run.final_answer
    # the tool call smuggled into the final reply was neither saved nor executed
    assert ToolCallLog.objects.filter(run=run).count() == 1
    assert AgentMessage.objects.filter(run=run, role="assistant").last().tool_calls is None


def test_a_slow_tool_times_out_and_the_loop_continues(demo, fake_openai, settings):
    settings.TOOL_TIMEOUT_S = 0.5
    release = threading.Event()
    with probe_tool("slow_probe", body=lambda calls: release.wait(30)):
        fake_openai.enqueue(
            tool_reply(tool_call("slow_probe", {}, call_id="call_slow")),
            text_reply("The lookup timed out."),
        )
        run = start_run()
        try:
            drive(run)
        finally:
            release.set()

    log = ToolCallLog.objects.get(run=run)
    assert (log.tool_call_id, log.ok, log.error_code) == ("call_slow", False, "TOOL_TIMEOUT")
    sent_back = sent_result(fake_openai.tool_messages(1)[0])
    assert sent_back["error"]["code"] == "TOOL_TIMEOUT"
    assert (run.status, run.final_answer) == ("completed", "The lookup timed out.")


def test_every_parallel_tool_call_gets_exactly_one_answer_in_call_order(demo, fake_openai):
    fake_openai.enqueue(
        tool_reply(
            tool_call("get_order", {"order_id": "202610110087"}, call_id="call_a"),
            tool_call("search_policies", {"query": "damaged on arrival"}, call_id="call_b"),
            tool_call("get_order", {"order_id": "202610150012"}, call_id="call_c"),
        ),
        text_reply("Done."),
    )
    run = start_run()

    drive(run)

    assert [m["tool_call_id"] for m in fake_openai.tool_messages(1)] == [
        "call_a",
        "call_b",
        "call_c",
    ]
    assert sorted(ToolCallLog.objects.filter(run=run).values_list("tool_call_id", flat=True)) == [
        "call_a",
        "call_b",
        "call_c",
    ]
    assert roles(run) == ["user", "assistant", "tool", "tool", "tool", "assistant"]


def test_bad_json_arguments_get_bad_json_and_the_corrected_call_succeeds(demo, fake_openai):
    fake_openai.enqueue(
        tool_reply(tool_call("get_order", '{"order_id": "202610110087"', call_id="call_bad")),
        tool_reply(tool_call("get_order", {"order_id": "202610110087"}, call_id="call_good")),
        text_reply("Paid 129.00."),
    )
    run = start_run()

    drive(run)

    bad = sent_result(fake_openai.tool_messages(1)[0])
    assert (bad["ok"], bad["error"]["code"]) == (False, ErrorCode.BAD_JSON)
    logs = {
        log.tool_call_id: (log.ok, log.error_code) for log in ToolCallLog.objects.filter(run=run)
    }
    assert logs == {"call_bad": (False, "BAD_JSON"), "call_good": (True, "")}
    assert (run.status, run.final_answer) == ("completed", "Paid 129.00.")


def test_an_unknown_tool_gets_unknown_tool(demo, fake_openai):
    fake_openai.enqueue(
        tool_reply(tool_call("get_orders", {"order_id": "202610110087"}, call_id="call_x")),
        text_reply("Sorry."),
    )
    run = start_run()

    drive(run)

    sent_back = sent_result(fake_openai.tool_messages(1)[0])
    assert sent_back["error"]["code"] == ErrorCode.UNKNOWN_TOOL
    assert "get_order" in sent_back["error"]["next_actions"]
    log = ToolCallLog.objects.get(run=run)
    assert (log.tool_name, log.error_code) == ("get_orders", "UNKNOWN_TOOL")


def test_a_second_delivery_of_the_same_step_changes_nothing(demo, fake_openai):
    # Given a step that already ran
    fake_openai.enqueue(
        tool_reply(tool_call("get_order", {"order_id": "202610110087"})), text_reply("Paid 129.00.")
    )
    run = start_run()
    first = run_step.advance(run_id=run.pk, expected_version=0)
    assert first.kind == run_step.StepKind.CONTINUE
    messages_before = roles(run)
    events_before = event_types(run)

    # When the same task is delivered again
    again = run_step.advance(run_id=run.pk, expected_version=0)

    # Then it does nothing: no model call, no tool, no message, no event
    assert again.kind == run_step.StepKind.SKIPPED
    assert len(fake_openai.requests) == 1
    assert ToolCallLog.objects.filter(run=run).count() == 1
    assert roles(run) == messages_before
    assert event_types(run) == events_before


def test_a_step_delivered_while_another_holds_the_lease_does_nothing(demo, fake_openai):
    run = start_run()
    held = services.run_acquire_lease(run_id=run.pk, owner="other-worker")
    assert held is not None

    outcome = run_step.advance(run_id=run.pk)

    assert outcome.kind == run_step.StepKind.SKIPPED
    assert fake_openai.requests == []
    assert roles(run) == ["user"]
    run.refresh_from_db()
    assert run.lease_owner == "other-worker"


def test_a_step_that_died_after_the_model_answered_runs_the_saved_calls_without_asking_again(
    demo, fake_openai
):
    # Given the model's tool calls were saved, then the worker died before any tool ran
    run = start_run()
    calls = [
        tool_call("get_order", {"order_id": "202610110087"}, call_id="call_saved_1"),
        tool_call("search_policies", {"query": "broken item"}, call_id="call_saved_2"),
    ]
    services.run_message_append(run=run, role="assistant", tool_calls=calls)
    AgentRun.objects.filter(pk=run.pk).update(step_count=1)

    # When the step runs again
    outcome = run_step.advance(run_id=run.pk)

    # Then it executed the saved calls and did not call the model
    assert outcome.kind == run_step.StepKind.CONTINUE
    assert fake_openai.requests == []
    assert sorted(ToolCallLog.objects.filter(run=run).values_list("tool_call_id", flat=True)) == [
        "call_saved_1",
        "call_saved_2",
    ]
    assert roles(run) == ["user", "assistant", "tool", "tool"]

    # and the next step asks the model with both results
    fake_openai.enqueue(text_reply("Paid 129.00."))
    drive(run)
    assert [m["tool_call_id"] for m in fake_openai.tool_messages(0)] == [
        "call_saved_1",
        "call_saved_2",
    ]
    assert run.status == "completed"


def test_a_half_answered_step_runs_only_the_calls_without_a_result(demo, fake_openai):
    run = start_run()
    with probe_tool("probe_a") as a_calls, probe_tool("probe_b") as b_calls:
        calls = [
            tool_call("probe_a", {}, call_id="call_a"),
            tool_call("probe_b", {}, call_id="call_b"),
        ]
        services.run_message_append(run=run, role="assistant", tool_calls=calls)
        # probe_a already ran and was answered before the worker died
        run_step.Step(
            run=services.run_acquire_lease(run_id=run.pk, owner="dead"), owner="dead"
        ).execute_tools([(0, calls[0])])
        AgentRun.objects.filter(pk=run.pk).update(lease_owner="", lease_expires_at=None)
        assert (len(a_calls), len(b_calls)) == (1, 0)

        run_step.advance(run_id=run.pk)

        assert (len(a_calls), len(b_calls)) == (1, 1)
    assert [m.tool_call_id for m in AgentMessage.objects.filter(run=run, role="tool")] == [
        "call_a",
        "call_b",
    ]
    assert fake_openai.requests == []


@pytest.mark.parametrize(
    ("first_quick", "second_quick"),
    [(False, False), (True, False), (False, True)],
    ids=["reads", "quick-then-read", "read-then-quick"],
)
def test_cancel_during_a_step_stops_before_the_next_tool_and_the_model_is_not_called_again(
    demo, fake_openai, agent_user, first_quick, second_quick
):
    # Given a model asking for two tools that do not run together, and a cancel arriving
    # while the first one runs
    run = start_run()

    def cancel_now(calls):
        services.run_request_cancel(run=AgentRun.objects.get(pk=run.pk), user=run.started_by)

    with (
        probe_tool("probe_first", body=cancel_now, quick=first_quick) as first,
        probe_tool("probe_second", quick=second_quick) as second,
    ):
        ask_for_both_probes(fake_openai)
        drive(run)

        # Then the second tool never ran, and the run is cancelled
        assert (len(first), len(second)) == (1, 0)
    assert (run.status, run.stop_reason) == ("cancelled", "cancelled")
    logs = {log.tool_call_id: log.error_code for log in ToolCallLog.objects.filter(run=run)}
    assert logs == {"call_1": "", "call_2": "CANCELLED"}
    assert event_types(run).count("run.cancelled") == 1
    assert "tool_call.started" in event_types(run)
    assert len(fake_openai.requests) == 1

    # and a later delivery does not call the model
    assert run_step.advance(run_id=run.pk).kind == run_step.StepKind.SKIPPED
    assert len(fake_openai.requests) == 1


def test_a_cancel_during_quick_lookups_lets_them_finish_and_stops_before_the_model(
    demo, fake_openai, agent_user
):
    # Given a model asking for two quick lookups, and a cancel arriving while they run
    run = start_run()
    both_started = threading.Barrier(2, timeout=10)

    def cancel_now(calls):
        both_started.wait()
        services.run_request_cancel(run=AgentRun.objects.get(pk=run.pk), user=run.started_by)

    with (
        probe_tool("probe_first", body=cancel_now, quick=True) as first,
        probe_tool("probe_second", body=lambda calls: both_started.wait(), quick=True) as second,
    ):
        ask_for_both_probes(fake_openai)
        drive(run)

        # Then both lookups ran (they started together, after the step's last check) and
        # their results are kept, and the run is cancelled before the model is asked again
        assert (len(first), len(second)) == (1, 1)
    assert (run.status, run.stop_reason) == ("cancelled", "cancelled")
    logs = {
        log.tool_call_id: (log.ok, log.error_code) for log in ToolCallLog.objects.filter(run=run)
    }
    assert logs == {"call_1": (True, ""), "call_2": (True, "")}
    assert len(fake_openai.requests) == 1
    assert run_step.advance(run_id=run.pk).kind == run_step.StepKind.SKIPPED
    assert len(fake_openai.requests) == 1


def test_quick_lookups_of_one_reply_run_at_the_same_time_and_answer_in_call_order(
    demo, fake_openai
):
    # Given three quick lookups in one reply that each wait for the other two to start
    all_started = threading.Barrier(3, timeout=10)

    def wait_for_the_others(calls):
        all_started.wait()

    with (
        probe_tool("probe_a", body=wait_for_the_others, quick=True),
        probe_tool("probe_b", body=wait_for_the_others, quick=True),
        probe_tool("probe_c", body=wait_for_the_others, quick=True),
    ):
        fake_openai.enqueue(
            tool_reply(
                tool_call("probe_a", {}, call_id="call_a"),
                tool_call("probe_b", {}, call_id="call_b"),
                tool_call("probe_c", {}, call_id="call_c"),
            ),
            text_reply("Done."),
        )
        run = start_run()
        drive(run)

    # Then none of them waited in vain (one after the other, the first would time out), and
    # the results are saved and sent back in the reply's order
    logs = ToolCallLog.objects.filter(run=run).order_by("id")
    assert [(log.tool_call_id, log.ok) for log in logs] == [
        ("call_a", True),
        ("call_b", True),
        ("call_c", True),
    ]
    assert [m["tool_call_id"] for m in fake_openai.tool_messages(1)] == [
        "call_a",
        "call_b",
        "call_c",
    ]
    assert event_types(run).count("tool_call.started") == 3
    assert run.status == "completed"


def test_quick_lookups_that_run_together_share_one_timeout(demo, fake_openai, settings):
    # Given two quick lookups in one reply that both hang
    settings.TOOL_TIMEOUT_S = 0.5
    release = threading.Event()
    with (
        probe_tool("slow_a", body=lambda calls: release.wait(30), quick=True),
        probe_tool("slow_b", body=lambda calls: release.wait(30), quick=True),
    ):
        fake_openai.enqueue(
            tool_reply(
                tool_call("slow_a", {}, call_id="call_a"),
                tool_call("slow_b", {}, call_id="call_b"),
            ),
            text_reply("Both timed out."),
        )
        run = start_run()
        started = time.monotonic()
        try:
            drive(run)
        finally:
            release.set()
        elapsed = time.monotonic() - started

    # Then each answered TOOL_TIMEOUT once TOOL_TIMEOUT_S had passed since both started: the
    # step did not wait for the second as long again after giving up on the first
    logs = ToolCallLog.objects.filter(run=run).order_by("id")
    assert [(log.tool_call_id, log.error_code) for log in logs] == [
        ("call_a", "TOOL_TIMEOUT"),
        ("call_b", "TOOL_TIMEOUT"),
    ]
    assert elapsed < 2 * settings.TOOL_TIMEOUT_S
    assert run.final_answer == "Both timed out."


def test_a_call_repeated_within_quick_lookups_that_run_together_is_counted_as_made(
    demo, fake_openai
):
    # Given a reply that makes the same lookup three times (two identical calls may run)
    lookup = {"order_id": "202610110087"}
    fake_openai.enqueue(
        tool_reply(
            tool_call("get_order", lookup, call_id="call_1"),
            tool_call("get_order", lookup, call_id="call_2"),
            tool_call("get_order", lookup, call_id="call_3"),
        ),
        text_reply("Done."),
    )
    run = start_run()

    drive(run)

    # Then the third is answered REPEATED_CALL without running, as if they had run in turn
    logs = ToolCallLog.objects.filter(run=run).order_by("id")
    assert [(log.tool_call_id, log.error_code) for log in logs] == [
        ("call_1", ""),
        ("call_2", ""),
        ("call_3", "REPEATED_CALL"),
    ]


def test_together_groups_quick_lookups_next_to_each_other_and_no_more_than_it_may():
    def call(name, call_id):
        return {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}

    cap = LOOKUPS_TOGETHER
    many = [call("search_policies", f"call_s{n}") for n in range(cap + 1)]
    calls = [
        call("get_order", "call_1"),
        call("get_refund_status", "call_2"),
        call("create_refund", "call_write"),
        call("no_such_tool", "call_unknown"),
        *many,
    ]

    groups = together(list(enumerate(calls)))

    assert [[position for position, _ in group] for group in groups] == [
        [0, 1],
        [2],
        [3],
        list(range(4, 4 + cap)),
        [4 + cap],
    ]
    # and an id the reply repeats starts a group of its own
    again = list(enumerate([calls[0], calls[1], calls[0]]))
    assert [[position for position, _ in group] for group in together(again)] == [
        [0, 1],
        [2],
    ]


@pytest.mark.parametrize(
    ("first_quick", "second_quick", "saved_before_second"),
    [(False, False, 1), (False, True, 1), (True, False, 1), (True, True, 0)],
)
def test_a_result_is_saved_before_the_next_tool_starts_unless_both_are_quick_lookups(
    demo, fake_openai, first_quick, second_quick, saved_before_second
):
    run = start_run()
    saved = []

    def count_saved(calls):
        saved.append(ToolCallLog.objects.filter(run=run).count())

    with (
        probe_tool("probe_first", quick=first_quick),
        probe_tool("probe_second", body=count_saved, quick=second_quick),
    ):
        ask_for_both_probes(fake_openai, text_reply("Done."))
        drive(run)

    assert saved == [saved_before_second]
    assert run.status == "completed"
    assert ToolCallLog.objects.filter(run=run).count() == 2


def test_a_queued_run_cancelled_before_its_first_step_never_calls_the_model(demo, fake_openai):
    run = start_run()

    cancelled = services.run_request_cancel(run=run, user=run.started_by)

    assert (cancelled.status, cancelled.stop_reason) == ("cancelled", "cancelled")
    assert run_step.advance(run_id=run.pk).kind == run_step.StepKind.SKIPPED
    assert fake_openai.requests == []
    assert event_types(run) == ["run.started", "run.cancelled"]


def test_a_rate_limit_and_a_server_error_are_retried_then_the_run_completes(demo, fake_openai):
    fake_openai.enqueue(
        error_body(429, "slow down"), error_body(500, "oops"), text_reply("Paid 129.00.")
    )
    run = start_run()

    outcomes = drive(run)

    assert [o.kind for o in outcomes] == ["retry", "retry", "finished"]
    # Full jitter: each wait is drawn from [0, base * 2**attempt] (base 2 s).
    assert 0 <= outcomes[0].retry_in <= 2 and 0 <= outcomes[1].retry_in <= 4
    assert (run.status, run.final_answer, run.step_count) == ("completed", "Paid 129.00.", 1)
    assert len(fake_openai.requests) == 3


def test_a_persistent_server_error_fails_the_run_with_a_readable_reason(demo, fake_openai):
    fake_openai.respond_with(lambda request: error_body(500, "upstream exploded"))
    run = start_run()

    outcomes = drive(run)

    assert [o.kind for o in outcomes] == ["retry", "retry", "retry", "finished"]
    assert len(fake_openai.requests) == 4
    assert (run.status, run.stop_reason) == ("failed", "error")
    assert run.error == (
        "The model call failed: the model endpoint failed (HTTP 500) (after 4 attempts)."
    )
    failed = RunEvent.objects.get(run=run, type="run.failed")
    assert failed.data == {"reason": run.error}
    assert not TicketMessage.objects.filter(ticket=run.ticket, author_kind="assistant").exists()


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"<html>502 Bad Gateway</html>", "the body is not a chat completion"),
        ((200, {"id": "x", "object": "chat.completion"}), "no choices"),
        ((200, {"id": "x", "object": "chat.completion", "choices": []}), "empty choices"),
    ],
)
def test_a_garbage_response_fails_the_run_with_a_readable_reason(demo, fake_openai, body, reason):
    fake_openai.enqueue(body)
    run = start_run()

    drive(run)

    assert (run.status, run.stop_reason) == ("failed", "error")
    assert run.error == f"The model call failed: the model returned a malformed response: {reason}."
    assert len(fake_openai.requests) == 1
    assert ToolCallLog.objects.filter(run=run).count() == 0


def test_a_spent_token_budget_stops_the_run_with_an_answer(demo, fake_openai, settings):
    settings.AGENT_TOKEN_BUDGET = 100
    fake_openai.enqueue(tool_reply(tool_call("get_order", {"order_id": "202610110087"})))
    run = start_run()

    drive(run)

    assert (run.status, run.stop_reason) == ("completed", "budget")
    assert run.final_answer.startswith("I stopped because this run used up its token budget.")
    assert len(fake_openai.requests) == 1


def test_the_sweep_finds_runs_whose_lease_expired_or_that_were_never_picked_up(demo, fake_openai):
    from datetime import timedelta

    from django.utils import timezone

    from agent.run_selectors import stalled_runs

    now = timezone.now()
    dead = start_run()
    services.run_acquire_lease(run_id=dead.pk, owner="dead-worker")
    AgentRun.objects.filter(pk=dead.pk).update(lease_expires_at=now - timedelta(seconds=1))
    forgotten = start_run()
    AgentRun.objects.filter(pk=forgotten.pk).update(updated_at=now - timedelta(seconds=31))
    busy = start_run()
    services.run_acquire_lease(run_id=busy.pk, owner="live-worker")
    fresh = start_run()

    found = dict(stalled_runs(now=now))

    assert found == {dead.pk: 1, forgotten.pk: 0}
    assert fresh.pk not in found and busy.pk not in found
    # and the resumed step takes over the expired lease
    fake_openai.enqueue(text_reply("Done."))
    assert run_step.advance(run_id=dead.pk, expected_version=1).kind == run_step.StepKind.FINISHED
