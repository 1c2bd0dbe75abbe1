"""A step whose next step runs in the same process hands it the run's transcript and tool-call
log (agent/runtime/handover.py): the next step reads neither again, and asks the model exactly
what a step that read them would ask."""

import pytest

from agent.models import AgentMessage
from agent.runtime import handover, run_step
from tests.agent.runs import start_run
from tests.dbcost import DatabaseCost
from tests.fakes.openai_server import text_reply, tool_call, tool_reply
from tickets.models import TicketMessage

pytestmark = pytest.mark.django_db(transaction=True)


def lookups(count: int) -> list[dict]:
    return [
        tool_reply(
            tool_call("get_order", {"order_id": "202610110087"}, call_id=f"call_order_{step}"),
            tool_call("search_policies", {"query": "damaged"}, call_id=f"call_policy_{step}"),
        )
        for step in range(count)
    ]


def reads_of(cost: DatabaseCost, table: str) -> int:
    return sum(1 for sql in cost.statements if sql.startswith("SELECT") and f'"{table}"' in sql)


def steps(run, *, forget_between_steps: bool) -> list[DatabaseCost]:
    """Run every step of `run` in this process, as a worker does when each next step lands
    on it; `forget_between_steps`: as when it lands on another worker."""
    costs: list[DatabaseCost] = []
    outcome = run_step.advance(run_id=run.pk)
    while outcome.kind == run_step.StepKind.CONTINUE:
        if forget_between_steps:
            handover.clear()
        with DatabaseCost() as cost:
            outcome = run_step.advance(
                run_id=run.pk, expected_version=outcome.version, owner=outcome.owner
            )
        costs.append(cost)
    assert outcome.kind == run_step.StepKind.FINISHED
    return costs


def test_the_next_step_carries_on_without_reading_the_transcript_or_the_tool_log(demo, fake_openai):
    fake_openai.enqueue(*lookups(2), text_reply("Done."))
    run = start_run("Check the order and the policy.")

    costs = steps(run, forget_between_steps=False)

    assert len(costs) == 2
    for cost in costs:
        assert reads_of(cost, "agent_agentmessage") == 0
        assert reads_of(cost, "agent_toolcalllog") == 0
    run.refresh_from_db()
    assert (run.status, run.final_answer, run.step_count) == ("completed", "Done.", 3)
    assert AgentMessage.objects.filter(run=run).count() == 1 + 3 * 2 + 1


def test_the_model_is_asked_the_same_whether_the_step_carried_on_or_read_everything(
    demo, fake_openai
):
    # Given the same run twice: its steps on one worker, then each on a new one
    fake_openai.enqueue(*lookups(2), text_reply("Done."))
    steps(start_run("Check the order and the policy."), forget_between_steps=False)
    carried = fake_openai.requests[:]
    fake_openai.requests.clear()
    # (the first run's answer, posted on the ticket, is not part of the second's thread)
    TicketMessage.objects.filter(author_kind="assistant").delete()
    fake_openai.enqueue(*lookups(2), text_reply("Done."))

    costs = steps(start_run("Check the order and the policy."), forget_between_steps=True)

    # Then the steps that read everything did read it
    assert all(reads_of(cost, "agent_agentmessage") == 1 for cost in costs)
    # and the model saw the same conversations, call for call (after the system prompt,
    # which tells the time)
    assert [request["messages"][1:] for request in fake_openai.requests] == [
        request["messages"][1:] for request in carried
    ]


def test_what_a_step_left_is_not_taken_by_a_delivery_for_another_version(demo, fake_openai):
    fake_openai.enqueue(*lookups(1), text_reply("Done."))
    run = start_run()
    outcome = run_step.advance(run_id=run.pk)
    assert outcome.kind == run_step.StepKind.CONTINUE

    assert handover.take(run_id=run.pk, owner=outcome.owner, version=outcome.version - 1) is None
    assert handover.take(run_id=run.pk, owner="another owner", version=outcome.version) is None
    kept = handover.take(run_id=run.pk, owner=outcome.owner, version=outcome.version)
    assert kept is not None
    assert [message.role for message in kept.transcript] == ["user", "assistant", "tool", "tool"]
    assert set(kept.prior.rows) == {"call_order_0", "call_policy_0"}
    # and what was taken is gone: a second delivery of the same step reads afresh
    assert handover.take(run_id=run.pk, owner=outcome.owner, version=outcome.version) is None
