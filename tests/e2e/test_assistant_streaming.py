"""The assistant panel shows the answer as the model writes it (issue 14): a real worker calls
the fake OpenAI server, which streams the answer slowly; the browser follows the run's
server-sent events and the text grows in the answer bubble before the run completes, then the
saved answer replaces it. The page's own observer records every text the bubble showed."""

import pytest
from playwright.sync_api import expect

from agent import api
from tests import services
from tests.conftest import TEST_QUEUE
from tests.fakes.openai_server import Streamed, text_reply

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

ANSWER = (
    "I checked order 202610110087: the ceramic mug was delivered five days ago and arrived "
    "broken, so it qualifies for a full refund of 129.00 CNY under the damaged-item clause. "
    "I have not proposed the refund yet; ask me to and a reviewer will approve it."
)

# Installed before the question is asked: every text the answer bubble shows, in order, with
# whether it was still being written and whether the run had completed by then.
RECORD_ANSWER_TEXTS = """() => {
  window.answerTexts = [];
  const answer = document.getElementById("assistant-answer");
  const text = document.getElementById("assistant-answer-text");
  new MutationObserver(() => {
    window.answerTexts.push({
      text: text.textContent,
      streaming: answer.dataset.streaming === "true",
      replyButtonShown: !answer.querySelector(".answer-actions").hidden,
      completed: !!document.querySelector("#assistant-progress .progress-run-completed"),
    });
  }).observe(text, {childList: true, characterData: true, subtree: true});
}"""


@pytest.fixture
def streaming_worker(fake_openai):
    worker = services.WorkerProcess(
        TEST_QUEUE,
        extra_env=fake_openai.worker_env,
        log_name="e2e-stream",
    ).start()
    yield worker
    worker.stop()


def ask(page, message: str) -> None:
    page.evaluate(RECORD_ANSWER_TEXTS)
    page.fill("#assistant-message", message)
    page.click("#assistant-ask")


def test_the_answer_appears_piece_by_piece_before_the_run_completes(
    page, login, demo, fake_openai, streaming_worker
):
    # Given a model that writes its answer a word every 100 ms (about 4 s)
    fake_openai.enqueue(Streamed(text_reply(ANSWER), delay=0.1))
    login("agent")
    page.goto("/tickets/TCK-1001/")

    # When the agent asks
    ask(page, "Is the broken mug refundable?")

    # Then the answer ends as the saved one, with the reply button back
    expect(page.locator("#assistant-progress .progress-run-completed")).to_be_attached(
        timeout=30_000
    )
    expect(page.locator("#assistant-answer-text")).to_have_text(ANSWER)
    expect(page.locator("#assistant-use-answer")).to_be_visible()
    # and before that it grew through several partial texts, each the start of the answer,
    # none repeated, while the reply button stayed hidden
    texts = page.evaluate("window.answerTexts")
    partial = [t for t in texts if t["streaming"]]
    assert len({t["text"] for t in partial if t["text"] != ANSWER}) >= 3, texts
    assert all(not t["completed"] and not t["replyButtonShown"] for t in partial)
    lengths = [len(t["text"]) for t in partial]
    assert lengths == sorted(lengths)
    assert all(ANSWER.startswith(t["text"]) for t in partial)
    last = texts[-1]
    assert (last["text"], last["streaming"], last["replyButtonShown"]) == (ANSWER, False, True)


def test_a_stream_the_server_ends_every_second_resumes_without_repeating_text(
    page, login, demo, fake_openai, streaming_worker, monkeypatch
):
    # Given an event stream the server closes after a second, so the browser reconnects
    # (sending Last-Event-ID) several times while the answer is being written
    monkeypatch.setattr(api, "STREAM_MAX_S", 1.0)
    fake_openai.enqueue(Streamed(text_reply(ANSWER), delay=0.12))
    streams: list = []
    # The run's stream (the ticket page also follows the ticket's own: /api/tickets/.../events/)
    page.on(
        "request",
        lambda request: (
            "/api/runs/" in request.url and "/events/" in request.url and streams.append(request)
        ),
    )
    login("agent")
    page.goto("/tickets/TCK-1001/")

    ask(page, "Is the broken mug refundable?")

    expect(page.locator("#assistant-progress .progress-run-completed")).to_be_attached(
        timeout=30_000
    )
    expect(page.locator("#assistant-answer-text")).to_have_text(ANSWER)
    # The browser resumed the stream itself, after the last event seen, more than once, and
    # never fell back to polling
    assert all("/events/stream/" in request.url for request in streams)
    first, *reconnects = [request.all_headers().get("last-event-id") for request in streams]
    assert first is None and len(reconnects) >= 2, reconnects
    seen = [int(seq) for seq in reconnects]
    assert seen == sorted(set(seen))
    # and every text shown on the way was the start of the answer: nothing doubled
    partial = [t["text"] for t in page.evaluate("window.answerTexts") if t["streaming"]]
    assert len(set(partial)) >= 3
    assert all(ANSWER.startswith(text) for text in partial)
    # and each progress line shows once
    assert page.locator("#assistant-progress li", has_text="Thinking").count() == 1
