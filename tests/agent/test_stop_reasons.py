"""Every way a run stops (AgentRun.StopReason), and every loop rule, reached through the step
loop against the fake OpenAI server over real HTTP.

A forced ending (step limit, time limit, loop) makes one last model call with tool_choice
"none"; the token budget stops without one (another call would spend more).
"""

import pytest

from agent import services
from agent.executor import loops
from agent.models import AgentRun, RunEvent, ToolCallLog
from tests.agent.runs import drive, start_run
from tests.fakes.openai_server import Sleep, text_reply, tool_call, tool_reply

pytestmark = pytest.mark.django_db(transaction=True)

MUG = "202610110087"
LAMP = "202610150012"


def model_that_calls(*replies, final: str = "Here is what I found."):
    """A model that makes `replies` (one tool call each) while tools are allowed, then answers
    `final` to the call that allows none."""
    script = iter(replies)

    def respond(request):
        if request["tool_choice"] == "none":
            return text_reply(final)
        return tool_reply(next(script))

    return respond


def tool_choices(fake_openai) -> list[str]:
    return [request["tool_choice"] for request in fake_openai.requests]


def stopping(run) -> dict:
    """What the run said when it forced its final answer."""
    (event,) = RunEvent.objects.filter(run=run, type="message", data__kind="run.stopping")
    return event.data


def test_a_model_that_answers_stops_with_final_answer(demo, fake_openai):
    fake_openai.enqueue(
        tool_reply(tool_call("get_order", {"order_id": MUG})), text_reply("Paid 129.00 CNY.")
    )
    run = start_run()

    drive(run)

    assert (run.status, run.stop_reason, run.final_answer) == (
        "completed",
        "final_answer",
        "Paid 129.00 CNY.",
    )
    assert tool_choices(fake_openai) == ["auto", "auto"]
    assert not RunEvent.objects.filter(run=run, data__kind="run.stopping").exists()


def test_a_model_that_keeps_calling_new_tools_stops_with_max_steps(demo, fake_openai, settings):
    settings.AGENT_MAX_STEPS = 2
    fake_openai.respond_with(
        model_that_calls(
            tool_call("get_order", {"order_id": MUG}),
            tool_call("list_customer_orders", {}),
        )
    )
    run = start_run()

    drive(run)

    assert (run.status, run.stop_reason) == ("completed", "max_steps")
    assert tool_choices(fake_openai) == ["auto", "auto", "none"]
    assert stopping(run)["stop_reason"] == "max_steps"


def test_a_spent_token_budget_stops_with_budget_without_another_model_call(
    demo, fake_openai, settings
):
    settings.AGENT_TOKEN_BUDGET = 100  # one reply of the fake server uses 150
    fake_openai.respond_with(model_that_calls(tool_call("get_order", {"order_id": MUG})))
    run = start_run()

    drive(run)

    assert (run.status, run.stop_reason) == ("completed", "budget")
    assert run.final_answer.startswith("I stopped because this run used up its token budget.")
    assert tool_choices(fake_openai) == ["auto"]


def test_a_run_past_its_time_limit_stops_with_budget_and_a_final_call(demo, fake_openai, settings):
    # Given a one-second limit and a model whose first answer takes longer than that
    settings.AGENT_RUN_TIMEOUT_S = 1
    fake_openai.enqueue(Sleep(1.2, tool_reply(tool_call("get_order", {"order_id": MUG}))))
    fake_openai.respond_with(model_that_calls(final="I looked up the order; time ran out."))
    run = start_run()

    drive(run)

    # Then the next step asks for the answer with no tools allowed
    assert tool_choices(fake_openai) == ["auto", "none"]
    assert (run.status, run.stop_reason) == ("completed", "budget")
    assert run.final_answer == "I looked up the order; time ran out."
    said = stopping(run)
    assert (said["stop_reason"], said["budget"]) == ("budget", "time")
    assert said["elapsed_s"] >= 1
    assert ToolCallLog.objects.filter(run=run).count() == 1


def test_the_same_call_in_two_steps_stops_with_loop_detected(demo, fake_openai):
    # Given a model that asks for the mug order again, written differently
    fake_openai.respond_with(
        model_that_calls(
            tool_call("get_order", {"order_id": MUG}),
            tool_call("get_order", f'{{ "order_id" : "{MUG}" }}'),
            tool_call("get_order", {"order_id": MUG}),
        )
    )
    run = start_run()

    drive(run)

    # Then the third step is the final call: the executor's REPEATED_CALL never came into it
    assert tool_choices(fake_openai) == ["auto", "auto", "none"]
    assert (run.status, run.stop_reason) == ("completed", "loop_detected")
    assert run.final_answer == "Here is what I found."
    said = stopping(run)
    assert (said["stop_reason"], said["loop"]) == ("loop_detected", "repeat")
    assert said["content"].startswith("I stopped because I was going round in circles")
    assert not ToolCallLog.objects.filter(run=run, error_code="REPEATED_CALL").exists()


def test_alternating_between_two_calls_stops_with_loop_detected(demo, fake_openai):
    order, status = {"order_id": MUG}, {"order_id": MUG}
    fake_openai.respond_with(
        model_that_calls(
            tool_call("get_order", order),
            tool_call("get_refund_status", status),
            tool_call("get_order", order),
            tool_call("get_refund_status", status),
            tool_call("get_order", order),
        )
    )
    run = start_run()

    drive(run)

    assert tool_choices(fake_openai) == ["auto"] * 4 + ["none"]
    assert (run.status, run.stop_reason) == ("completed", "loop_detected")
    assert stopping(run)["loop"] == "oscillation"
    assert ToolCallLog.objects.filter(run=run).count() == 4


def test_the_same_error_twice_in_a_row_stops_with_loop_detected_and_a_summary(demo, fake_openai):
    # Given a model that tries two orders that do not exist, then answers nothing
    fake_openai.respond_with(
        model_that_calls(
            tool_call("get_order", {"order_id": "209912310001"}),
            tool_call("get_order", {"order_id": "209912310002"}),
            tool_call("get_order", {"order_id": "209912310003"}),
            final="",
        )
    )
    run = start_run()

    drive(run)

    codes = list(ToolCallLog.objects.filter(run=run).values_list("error_code", flat=True))
    assert len(codes) == 2 and codes[0] == codes[1] != ""
    assert tool_choices(fake_openai) == ["auto", "auto", "none"]
    assert (run.status, run.stop_reason) == ("completed", "loop_detected")
    assert stopping(run)["loop"] == "repeated_error"
    # and the empty final reply was replaced by a summary from the tool log saying why
    assert run.final_answer.startswith("I stopped because I was going round in circles")
    assert "get_order did not go through twice in a row" in run.final_answer
    assert codes[0] not in run.final_answer
    assert "What I did not do" in run.final_answer


def test_steps_without_a_new_result_stop_with_loop_detected(demo, fake_openai, settings):
    # Given a model that gets one result, then fails in new ways or gets it again
    settings.AGENT_LOOP_STALL_STEPS = 3
    fake_openai.respond_with(
        model_that_calls(
            tool_call("get_order", {"order_id": MUG}),
            tool_call("look_up_everything", {}),
            tool_call("get_order", '{"order_id": '),
            tool_call("get_order", {"order_id": MUG}),
            tool_call("list_customer_orders", {}),
        )
    )
    run = start_run()

    drive(run)

    # Then three steps brought nothing new (UNKNOWN_TOOL, BAD_JSON, the same order again)
    logs = ToolCallLog.objects.filter(run=run).order_by("created_at", "id")
    assert [(log.tool_name, log.ok) for log in logs] == [
        ("get_order", True),
        ("look_up_everything", False),
        ("get_order", False),
        ("get_order", True),
    ]
    assert tool_choices(fake_openai) == ["auto"] * 4 + ["none"]
    assert (run.status, run.stop_reason) == ("completed", "loop_detected")
    assert stopping(run)["loop"] == "stall"


def test_a_model_repeating_a_proposal_once_is_not_stopped(demo, fake_openai):
    # create_refund answers a repeat with the same proposal: a model confirming it is no loop
    proposal = {
        "order_id": MUG,
        "amount": "10.00",
        "reason": "damaged",
        "explanation": "The mug arrived chipped.",
    }
    fake_openai.enqueue(
        tool_reply(tool_call("get_order", {"order_id": MUG})),
        tool_reply(tool_call("create_refund", proposal)),
        tool_reply(tool_call("create_refund", {**proposal, "amount": 10})),
        text_reply("Proposed a 10.00 refund; a reviewer must approve it."),
    )
    run = start_run("Refund 10 for the chipped mug.")

    drive(run)

    assert (run.status, run.stop_reason) == ("completed", "final_answer")
    assert tool_choices(fake_openai) == ["auto", "auto", "auto", "auto"]


def test_a_cancel_stops_with_cancelled(demo, fake_openai):
    run = start_run()

    services.run_request_cancel(run=run, user=run.started_by)
    drive(run)

    assert (run.status, run.stop_reason) == ("cancelled", "cancelled")
    assert fake_openai.requests == []


def test_a_model_that_cannot_be_reached_stops_with_error(demo, fake_openai):
    fake_openai.enqueue(b"<html>502 Bad Gateway</html>")
    run = start_run()

    drive(run)

    assert (run.status, run.stop_reason) == ("failed", "error")
    assert run.error.startswith("The model call failed")


def test_every_stop_reason_has_a_test_here():
    tested = {"final_answer", "max_steps", "budget", "loop_detected", "cancelled", "error"}
    assert set(AgentRun.StopReason.values) == tested


def test_the_forced_final_call_sees_the_transcript_with_every_tool_result(demo, fake_openai):
    fake_openai.respond_with(
        model_that_calls(
            tool_call("get_order", {"order_id": MUG}, call_id="call_1"),
            tool_call("get_order", {"order_id": MUG}, call_id="call_2"),
        )
    )
    run = start_run()

    drive(run)

    final = fake_openai.requests[-1]
    assert final["tool_choice"] == "none"
    answered = [m["tool_call_id"] for m in final["messages"] if m["role"] == "tool"]
    assert answered == ["call_1", "call_2"]
    run.refresh_from_db()
    assert run.stop_reason == "loop_detected"


def test_each_call_is_worked_out_for_loop_detection_once_however_many_steps_follow(
    demo, fake_openai, monkeypatch
):
    # Given every text loop detection compares noted as it is worked out
    worked_out: list[str] = []
    for name in ("call_key", "result_key"):
        original = getattr(loops, name)

        def noting(*args, _original=original, _name=name):
            worked_out.append(_name)
            return _original(*args)

        monkeypatch.setattr(loops, name, noting)
    fake_openai.enqueue(
        tool_reply(tool_call("get_order", {"order_id": MUG})),
        tool_reply(tool_call("get_order", {"order_id": LAMP})),
        tool_reply(tool_call("search_policies", {"query": "damaged"})),
        tool_reply(tool_call("search_policies", {"query": "window"})),
        text_reply("Done."),
    )
    run = start_run()

    # When the run makes four calls in four steps, each step looking for loops first
    drive(run)

    # Then each call's key and result were worked out once, when it was logged
    assert ToolCallLog.objects.filter(run=run).count() == 4
    assert worked_out.count("call_key") == 4
    assert worked_out.count("result_key") == 4
    assert len(fake_openai.requests) == 5
