"""Loop detection over a run's tool calls (agent/executor/loops.py): pure functions, no database."""

import json

import pytest

from agent.executor.loops import LoggedCall, LoopRule, call_key, calls_by_step, detect_loop

MUG = "202610110087"
LAMP = "202610150012"


def call(
    step, tool, arguments, *, ok=True, error_code="", retryable=False, result=None, write=False
):
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return LoggedCall(
        step=step,
        tool=tool,
        arguments_raw=raw,
        ok=ok,
        error_code=error_code,
        retryable=retryable,
        result=result if result is not None else {"ok": ok, "step": step, "tool": tool},
        write=write,
    )


def refund(amount) -> str:
    return f'{{"order_id": "{MUG}", "amount": {amount}, "reason": "damaged"}}'


# --- Normalisation ---------------------------------------------------------------------------


@pytest.mark.parametrize("amount", ["129", "129.0", '"129.00"', '" 129.00 "', "1.29e2"])
def test_an_amount_written_any_way_is_the_same_amount(amount):
    assert call_key("create_refund", refund(amount)) == call_key("create_refund", refund("129"))


def test_a_different_amount_is_a_different_call():
    assert call_key("create_refund", refund("129")) != call_key("create_refund", refund("129.01"))


def test_key_order_and_whitespace_around_strings_and_json_do_not_matter():
    one = f'{{"order_id": "{MUG}", "reason": "damaged"}}'
    other = f'{{ "reason" : " damaged",\n "order_id":"{MUG} " }}'
    assert call_key("create_refund", one) == call_key("create_refund", other)


def test_two_different_orders_are_two_different_calls():
    assert call_key("get_order", json.dumps({"order_id": MUG})) != call_key(
        "get_order", json.dumps({"order_id": LAMP})
    )


def test_an_id_that_looks_like_a_number_stays_text():
    # Leading zeros and case can matter in an id; only amount fields compare as numbers.
    assert call_key("get_order", '{"order_id": "0087"}') != call_key(
        "get_order", '{"order_id": "87"}'
    )
    assert call_key("get_order", '{"order_id": "87"}') != call_key("get_order", '{"order_id": 87}')
    assert call_key("get_refund_status", '{"request_id": "r-1"}') != call_key(
        "get_refund_status", '{"request_id": "R-1"}'
    )


def test_the_same_arguments_for_another_tool_are_another_call():
    arguments = json.dumps({"order_id": MUG})
    assert call_key("get_order", arguments) != call_key("get_refund_status", arguments)


def test_text_that_is_not_json_is_compared_as_it_is():
    assert call_key("get_order", '{"order_id": ') == call_key("get_order", ' {"order_id": ')
    assert call_key("get_order", '{"order_id": ') != call_key("get_order", '{"order_id": 1')


# --- The same call twice in a row ---------------------------------------------------------------


def test_the_same_call_in_two_steps_in_a_row_is_a_loop():
    calls = [
        call(0, "get_order", {"order_id": MUG}),
        call(1, "get_order", f'{{ "order_id":" {MUG}" }}'),
    ]

    loop = detect_loop(calls, stall_steps=3)

    assert loop is not None and loop.rule == LoopRule.REPEAT


def test_two_different_orders_in_a_row_are_not_a_loop():
    calls = [call(0, "get_order", {"order_id": MUG}), call(1, "get_order", {"order_id": LAMP})]

    assert detect_loop(calls, stall_steps=3) is None


def test_the_same_call_twice_in_one_reply_is_left_to_the_executor():
    calls = [call(0, "get_order", {"order_id": MUG}), call(0, "get_order", {"order_id": MUG})]

    assert detect_loop(calls, stall_steps=3) is None


def test_a_retry_after_a_timeout_is_not_a_loop():
    calls = [
        call(
            0, "get_order", {"order_id": MUG}, ok=False, error_code="TOOL_TIMEOUT", retryable=True
        ),
        call(1, "get_order", {"order_id": MUG}),
    ]

    assert detect_loop(calls, stall_steps=3) is None


def test_a_write_repeated_once_is_not_a_loop():
    # create_refund answers a repeat with the same proposal: that is how a model confirms it.
    calls = [
        call(0, "create_refund", refund("129"), write=True),
        call(1, "create_refund", refund("129.00"), write=True),
    ]

    assert detect_loop(calls, stall_steps=3) is None


def test_a_repeat_from_before_the_latest_step_does_not_stop_the_run_later():
    calls = [
        call(
            0, "get_order", {"order_id": MUG}, ok=False, error_code="TOOL_TIMEOUT", retryable=True
        ),
        call(1, "get_order", {"order_id": MUG}),
        call(2, "list_customer_orders", {}),
    ]

    assert detect_loop(calls, stall_steps=3) is None


# --- A-B-A-B --------------------------------------------------------------------------------------


def test_alternating_between_two_calls_is_a_loop():
    order, status = {"order_id": MUG}, {"order_id": MUG}
    calls = [
        call(0, "get_order", order),
        call(1, "get_refund_status", status),
        call(2, "get_order", order),
        call(3, "get_refund_status", status),
    ]

    loop = detect_loop(calls, stall_steps=0)

    assert loop is not None and loop.rule == LoopRule.OSCILLATION


def test_the_same_pair_of_calls_in_two_replies_is_a_loop():
    calls = [
        call(0, "get_order", {"order_id": MUG}),
        call(0, "get_refund_status", {"order_id": MUG}),
        call(1, "get_order", {"order_id": MUG}),
        call(1, "get_refund_status", {"order_id": MUG}),
    ]

    loop = detect_loop(calls, stall_steps=0)

    assert loop is not None and loop.rule == LoopRule.OSCILLATION


def test_a_b_a_c_is_not_oscillation():
    calls = [
        call(0, "get_order", {"order_id": MUG}),
        call(1, "get_refund_status", {"order_id": MUG}),
        call(2, "get_order", {"order_id": MUG}),
        call(3, "get_refund_status", {"order_id": LAMP}),
    ]

    assert detect_loop(calls, stall_steps=0) is None


def test_alternating_calls_within_one_reply_are_not_oscillation():
    # The model chose all four before it saw any result: it cannot be going round in circles
    # (identical calls within one reply are the executor's to refuse).
    calls = [
        call(1, "get_order", {"order_id": MUG}),
        call(1, "get_refund_status", {"order_id": MUG}),
        call(1, "get_order", {"order_id": MUG}),
        call(1, "get_refund_status", {"order_id": MUG}),
    ]

    assert detect_loop(calls, stall_steps=0) is None
    # Nor after an earlier reply that made an unrelated call.
    assert detect_loop([call(0, "list_customer_orders", {}), *calls], stall_steps=0) is None


def test_a_reply_that_alternates_the_calls_of_the_reply_before_is_oscillation():
    calls = [
        call(0, "get_order", {"order_id": MUG}),
        call(1, "get_refund_status", {"order_id": MUG}),
        call(1, "get_order", {"order_id": MUG}),
        call(1, "get_refund_status", {"order_id": MUG}),
    ]

    loop = detect_loop(calls, stall_steps=0)

    assert loop is not None and loop.rule == LoopRule.OSCILLATION


# --- The same error twice in a row ------------------------------------------------------------


def test_the_same_tool_failing_with_the_same_code_twice_in_a_row_is_a_loop():
    calls = [
        call(0, "get_order", {"order_id": "1"}, ok=False, error_code="NOT_FOUND"),
        call(1, "get_order", {"order_id": "2"}, ok=False, error_code="NOT_FOUND"),
    ]

    loop = detect_loop(calls, stall_steps=3)

    assert loop is not None and loop.rule == LoopRule.REPEATED_ERROR
    assert loop.description == (
        "get_order did not go through twice in a row "
        "(Not found among this customer's orders and records)"
    )


@pytest.mark.parametrize(
    ("second_tool", "second_code"),
    [("get_order", "INVALID_ARGUMENTS"), ("get_refund_status", "NOT_FOUND")],
)
def test_a_different_code_or_tool_is_not_a_repeated_error(second_tool, second_code):
    calls = [
        call(0, "get_order", {"order_id": "1"}, ok=False, error_code="NOT_FOUND"),
        call(1, second_tool, {"order_id": "2"}, ok=False, error_code=second_code),
    ]

    assert detect_loop(calls, stall_steps=3) is None


def test_two_failures_in_one_reply_are_not_a_repeated_error():
    # The model had not seen the first failure when it made the second call.
    calls = [
        call(0, "get_order", {"order_id": "1"}, ok=False, error_code="NOT_FOUND"),
        call(0, "get_order", {"order_id": "2"}, ok=False, error_code="NOT_FOUND"),
    ]

    assert detect_loop(calls, stall_steps=3) is None


# --- No progress ------------------------------------------------------------------------------


def stalled_run(steps_without_progress: int) -> list[LoggedCall]:
    calls = [call(0, "get_order", {"order_id": MUG}, result={"order_id": MUG})]
    tools = ["list_customer_orders", "search_policies", "get_refund_status", "get_order"]
    for step in range(1, steps_without_progress + 1):
        # Each step either fails with a new code or gets a result already seen.
        if step % 2:
            calls.append(
                call(step, tools[step % 4], {"n": step}, ok=False, error_code=f"CODE_{step}")
            )
        else:
            calls.append(call(step, tools[step % 4], {"n": step}, result={"order_id": MUG}))
    return calls


def test_k_steps_without_a_new_result_is_a_loop():
    loop = detect_loop(stalled_run(3), stall_steps=3)

    assert loop is not None and loop.rule == LoopRule.STALL


def test_fewer_than_k_steps_without_a_new_result_is_not_a_loop():
    assert detect_loop(stalled_run(2), stall_steps=3) is None


def test_a_new_result_resets_the_count():
    calls = [*stalled_run(2), call(3, "search_policies", {"query": "x"}, result={"new": 1})]

    assert detect_loop(calls, stall_steps=3) is None


def test_zero_turns_the_stall_rule_off():
    assert detect_loop(stalled_run(5), stall_steps=0) is None


# --- From the log -------------------------------------------------------------------------------


def test_calls_are_ordered_by_reply_and_calls_not_run_yet_are_left_out():
    row = {"arguments_raw": "{}", "ok": True, "error_code": "", "retryable": False, "result": {}}
    logs = {
        "b": {**row, "tool_name": "get_order"},
        "a": {**row, "tool_name": "create_refund"},
    }

    calls = calls_by_step([["a"], ["b", "c"]], logs, write_tools={"create_refund"})

    assert [(c.step, c.tool, c.write) for c in calls] == [
        (0, "create_refund", True),
        (1, "get_order", False),
    ]
