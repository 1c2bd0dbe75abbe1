"""Whatever the model sends, the executor answers with data and logs exactly one row."""

import json
import uuid

import pytest
from django.contrib.auth import get_user_model
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.context import RunContext
from agent.errors import ErrorCode
from agent.executor.calls import execute_tool_call
from agent.models import AgentRun, ToolCallLog
from agent.tools.paging import MAX_RESULT_CHARS
from agent.tools.registry import get_tool, tool_names
from tickets.models import Ticket

pytestmark = pytest.mark.django_db(transaction=True)

DOCUMENTED_CODES = {value for name, value in vars(ErrorCode).items() if name.isupper()}

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True)
    | st.text(max_size=30)
    | st.sampled_from(["202610110087", "202610250777", "damaged"]),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=12,
)


def argument_strings(tool_name: str):
    """Arbitrary JSON, arbitrary text, and objects built from the tool's own argument names
    (plus forbidden ones) so the schema checks are reached, not only the JSON parser."""
    names = [*get_tool(tool_name).parameters["properties"], "customer_id", "approved"]
    near_objects = st.dictionaries(st.sampled_from(names), json_values, max_size=5)
    return st.one_of(
        json_values.map(json.dumps),
        near_objects.map(json.dumps),
        st.text(max_size=60),
    )


@pytest.fixture
def supervisor_context(demo) -> RunContext:
    user = get_user_model().objects.get(username="supervisor")
    run = AgentRun.objects.create(
        ticket=Ticket.objects.get(reference="TCK-1001"), started_by=user, actor_role="supervisor"
    )
    return RunContext.for_run(run)


@pytest.mark.parametrize("tool_name", tool_names())
def test_it_answers_any_arguments_with_data_and_one_log_row(supervisor_context, tool_name):
    ctx = supervisor_context
    invocations = []

    @settings(
        max_examples=60,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(raw=argument_strings(tool_name))
    def check(raw):
        call_id = f"call_{uuid.uuid4().hex}"
        invocations.append(call_id)

        result = execute_tool_call(ctx, tool_call_id=call_id, name=tool_name, arguments_raw=raw)

        row = ToolCallLog.objects.get(run=ctx.run, tool_call_id=call_id)
        assert row.result == result
        assert row.ok is result["ok"]
        assert len(json.dumps(result, ensure_ascii=False, separators=(",", ":"))) <= (
            MAX_RESULT_CHARS
        )
        if result["ok"]:
            assert row.error_code == ""
        else:
            assert set(result) == {"ok", "error"}
            assert result["error"]["code"] in DOCUMENTED_CODES
            assert result["error"]["code"] == row.error_code
            assert {"code", "message", "retryable", "next_actions"} <= set(result["error"])
            assert "Traceback" not in result["error"]["message"]

    before = ToolCallLog.objects.count()
    check()
    assert ToolCallLog.objects.count() - before == len(invocations)
    assert len(invocations) >= 60
    assert (
        ToolCallLog.objects.exclude(error_code="").exclude(error_code__in=DOCUMENTED_CODES).count()
        == 0
    )


@given(name=st.text(max_size=40), raw=st.text(max_size=40))
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_it_answers_any_tool_name_with_data_and_one_log_row(supervisor_context, name, raw):
    call_id = f"call_{uuid.uuid4().hex}"

    result = execute_tool_call(
        supervisor_context, tool_call_id=call_id, name=name, arguments_raw=raw
    )

    row = ToolCallLog.objects.get(run=supervisor_context.run, tool_call_id=call_id)
    assert row.result == result
    if name not in tool_names():
        assert result["error"]["code"] == "UNKNOWN_TOOL"
