"""An assistant answer made stale by a later refund decision says so in the browser: on the
assistant panel and under the answer in the conversation, fitting a phone and a laptop."""

from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model

from agent.models import AgentMessage, AgentRun, RunEvent
from refunds.services import refund_approve, refund_propose
from tests.e2e.overflow import LAPTOP, PHONE, assert_fits
from tickets.models import Ticket, TicketMessage
from tickets.services import ticket_post_message

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

ANSWER = "I proposed 129.00 CNY for the mug; it waits for a reviewer."


def answered_then_approved() -> str:
    ticket = Ticket.objects.get(reference="TCK-1001")
    agent = get_user_model().objects.get(username="agent")
    refund = refund_propose(
        ticket=ticket,
        order=ticket.order,
        amount=Decimal("129.00"),
        reason="damaged",
        explanation="Broken on arrival.",
        requested_by=agent,
        role="agent",
    ).refund
    run = AgentRun.objects.create(
        ticket=ticket, started_by=agent, actor_role="agent", status="completed", final_answer=ANSWER
    )
    AgentMessage.objects.create(run=run, seq=1, role="user", content="Refund the mug in full.")
    RunEvent.objects.create(run=run, seq=1, type="run.completed", data={})
    ticket_post_message(ticket=ticket, author_kind=TicketMessage.AuthorKind.ASSISTANT, body=ANSWER)
    refund.run = run
    refund.save(update_fields=["run"])
    pending = refund.confirmations.get()
    refund_approve(
        refund=refund,
        reviewer=get_user_model().objects.get(username="reviewer"),
        version=pending.version,
        fingerprint=pending.fingerprint,
    )
    return refund.request_id


@pytest.mark.parametrize("window", [PHONE, LAPTOP], ids=["390", "1280"])
def test_a_stale_answer_says_since_when_on_the_panel_and_in_the_conversation(
    page, login, demo, window, tmp_path
):
    request_id = answered_then_approved()
    page.set_viewport_size(window)
    login("agent")
    page.goto("/tickets/TCK-1001/")

    since = page.locator("#assistant-answer-since")
    since.wait_for(state="visible")
    assert since.inner_text().startswith(f"Since this answer: the refund {request_id} was approved")
    assert "Olivia Brown" in since.inner_text()
    in_conversation = page.locator(".message-assistant .answer-since")
    assert in_conversation.count() == 1
    assert "was approved by Olivia Brown" in in_conversation.inner_text()
    assert_fits(page, f"the ticket page at {window['width']}px")
    page.screenshot(path=str(tmp_path / f"since-{window['width']}.png"), full_page=True)
