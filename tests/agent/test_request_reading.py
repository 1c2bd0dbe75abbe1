"""How the agent's request is read (agent/vocabulary/requests.py): the rules the offline planner
and small-model mode act on, each held by a case where it decides."""

import pytest

from agent.vocabulary.requests import read_intent, read_reason


def test_thanks_is_a_closing_unless_it_names_an_order():
    assert read_intent("Thanks, that's all.").closing
    assert not read_intent("Thanks, that's all. 202610110087").closing


@pytest.mark.parametrize(
    "request_text",
    [
        "How much is left to refund on 202610110087 under the policy?",
        "How much can still be refunded on this order per policy?",
    ],
)
def test_what_is_left_on_an_order_is_a_question_for_the_order_not_the_policy(request_text):
    assert not read_intent(request_text).asks_policy


def test_a_policy_question_is_one():
    assert read_intent("What does the policy say about refunds?").asks_policy


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("wrong item, but it also arrived broken", "wrong_item"),
        ("refund, reason not_received, it came broken", "not_received"),
    ],
)
def test_a_reason_named_as_such_wins_over_one_described(text, reason):
    assert read_reason(text).reasons == {reason}
