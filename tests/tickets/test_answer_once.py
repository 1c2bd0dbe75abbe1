"""The ticket page says the assistant's latest answer once: in full in the assistant panel, with
the conversation's note of it folded; older answers stay in the conversation as they were."""

import re

import pytest
from django.contrib.auth import get_user_model

from agent.models import AgentRun
from tickets.models import Ticket, TicketMessage
from tickets.services import ticket_post_message

pytestmark = pytest.mark.django_db


def answered_run(ticket: Ticket, answer: str) -> AgentRun:
    agent = get_user_model().objects.get(username="agent")
    run = AgentRun.objects.create(
        ticket=ticket, started_by=agent, actor_role="agent", status="completed", final_answer=answer
    )
    ticket_post_message(ticket=ticket, author_kind=TicketMessage.AuthorKind.ASSISTANT, body=answer)
    return run


def test_the_latest_answer_is_folded_in_the_conversation_and_older_ones_are_not(client, demo):
    ticket = Ticket.objects.get(reference="TCK-1001")
    answered_run(ticket, "An older answer: the mug cost 129.00 CNY.")
    latest = answered_run(ticket, "The latest answer: nothing is refunded yet.")
    client.force_login(get_user_model().objects.get(username="agent"))

    page = client.get("/tickets/TCK-1001/").content.decode()

    assert f'data-run="{latest.pk}"' in page
    folded = re.findall(
        r'<details class="message-body message-in-panel">(.*?)</details>', page, re.S
    )
    assert len(folded) == 1
    assert "The latest answer: nothing is refunded yet." in folded[0]
    assert '<div class="message-body">An older answer: the mug cost 129.00 CNY.</div>' in page
