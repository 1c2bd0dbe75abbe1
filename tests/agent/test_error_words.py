"""A refusal reaches the desk user in words: no error code such as AMOUNT_OVER_ROLE_LIMIT and no
sentence said twice, in the progress lines, the tool-call trail, the assistant's note and the
summary of a run that ended without an answer. One source: agent/errors.py ERROR_WORDS."""

import re

import pytest
from django.contrib.auth import get_user_model

from agent.errors import ERROR_WORDS, ErrorCode, codes_in_words, error_in_words
from agent.models import RunEvent
from agent.runtime.calls import summary_from_tool_log
from tests.agent.runs import drive, start_run

CODE = re.compile(r"\b[A-Z]{2,}(?:_[A-Z]+)+\b")


def sentences(text: str) -> list[str]:
    """The text's sentences and clauses, normalised, in order."""
    parts = re.split(r"(?<=[.;:!?])\s+|\n+", text)
    return [" ".join(part.lower().strip(" .;:-—").split()) for part in parts if part.strip()]


def assert_in_words(text: str) -> None:
    assert not CODE.search(text), f"a code in {text!r}"
    said = [part for part in sentences(text) if len(part.split()) >= 3]  # not "ok" per call
    repeated = {part for part in said if said.count(part) > 1}
    assert not repeated, f"said twice in {text!r}: {repeated}"


def test_every_error_code_has_its_sentence():
    assert set(ERROR_WORDS) == set(ErrorCode)
    for code in ErrorCode:
        words = error_in_words({"code": code.value, "message": f"{code.value}: for the model."})
        assert words == ERROR_WORDS[code] or words.startswith(ERROR_WORDS[code] + " "), code
        assert words.endswith(".")
        assert_in_words(words)


def test_it_gives_the_facts_of_a_refusal_once():
    error = {
        "code": "AMOUNT_OVER_ROLE_LIMIT",
        "message": "The amount is over what your role may propose (R-5: ...).",
        "verdicts": [
            {"clause": "R-5", "detail": "requested 899.00 CNY exceeds the agent limit"},
            {"clause": "R-5", "detail": "requested 899.00 CNY exceeds the agent limit"},
        ],
    }

    assert error_in_words(error) == (
        "The amount is over what your role may propose. "
        "R-5: requested 899.00 CNY exceeds the agent limit."
    )


def test_it_names_the_wrong_fields_and_an_unknown_outcome():
    invalid = {"code": "INVALID_ARGUMENTS", "field_errors": {"amount": "must be positive"}}
    timeout = {"code": "TOOL_TIMEOUT", "retryable": False}

    assert error_in_words(invalid).endswith(" amount: must be positive.")
    assert "not known yet" in error_in_words(timeout)
    assert error_in_words({"code": "NO_SUCH_CODE"}) == "The tool refused."


def test_a_code_a_model_quotes_reaches_the_desk_in_words():
    text = codes_in_words("create_refund failed with AMOUNT_OVER_ROLE_LIMIT, so I stopped.")

    assert text == (
        "create_refund failed with “The amount is over what your role may propose”, so I stopped."
    )


@pytest.mark.django_db(transaction=True)
def test_an_over_limit_proposal_reads_in_words_on_every_surface(demo, settings, client):
    # Given an agent asking for the 899.00 headphones, over their 500.00 limit
    settings.LLM_PROVIDER = "offline"
    run = start_run(
        "The headphones stopped working, please refund them in full", reference="TCK-1004"
    )

    # When the run ends
    drive(run)

    # Then the progress line, the event's words, the trail and the note say it in words, once
    completed = RunEvent.objects.get(
        run=run, type="tool_call.completed", data__name="create_refund"
    ).data
    assert completed["error_code"] == "AMOUNT_OVER_ROLE_LIMIT"  # for programs
    assert_in_words(completed["summary"])
    assert "over what your role may propose" in completed["summary"]
    assert_in_words(completed["error_words"])
    client.force_login(get_user_model().objects.get(username="agent"))
    trail = client.get(f"/api/runs/{run.pk}/tool-calls/").json()
    calls = trail if isinstance(trail, list) else trail["results"]
    refused = [call for call in calls if not call["ok"]]
    assert [call["error_words"] for call in refused] == [completed["error_words"]]
    run.refresh_from_db()
    assert_in_words(run.final_answer)
    assert "over what your role may propose" in run.final_answer
    assert "R-5" in run.final_answer
    assert_in_words(summary_from_tool_log(run, "The run stopped."))
