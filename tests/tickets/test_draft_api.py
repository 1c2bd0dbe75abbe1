"""POST /api/tickets/<ref>/draft/ (DESIGN §13): the reply the customer could be sent, as the
ticket is now: the latest run's draft while no refund changed since, else written again."""

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from agent.drafts import internal_vocabulary
from refunds.models import RefundRequest
from tests.agent.runs import drive, start_run
from tickets.models import Ticket, TicketMessage

DRAFT_KEYS = {"body", "language", "state", "check", "source", "run"}


def api_as(username: str) -> APIClient:
    client = APIClient()
    client.force_authenticate(get_user_model().objects.get(username=username))
    return client


def draft(reference: str = "TCK-1001", username: str = "agent"):
    return api_as(username).post(f"/api/tickets/{reference}/draft/")


@pytest.fixture
def offline(settings):
    settings.LLM_PROVIDER = "offline"


@pytest.mark.django_db
@pytest.mark.parametrize(
    "username, status",
    [("intern", 200), ("agent", 200), ("supervisor", 200), ("reviewer", 403)],
)
def test_interns_agents_and_supervisors_get_a_draft(demo, offline, username, status):
    response = draft(username=username)

    assert response.status_code == status


@pytest.mark.django_db
def test_a_stranger_gets_401_and_an_unknown_ticket_404(demo, offline):
    assert APIClient().post("/api/tickets/TCK-1001/draft/").status_code in (401, 403)
    assert draft("TCK-9999").status_code == 404


@pytest.mark.django_db
def test_without_a_run_the_draft_is_written_from_templates(demo, offline):
    body = draft().json()

    assert set(body) == DRAFT_KEYS
    assert body["source"] == "template"
    assert body["run"] is None
    assert body["language"] == "en"
    assert body["state"] == {"refunds": []}
    assert body["check"] == {"ok": True, "claims": []}
    assert body["body"].startswith("Dear Li Wei,")
    assert internal_vocabulary(body["body"]) == []


@pytest.mark.django_db(transaction=True)
def test_the_latest_runs_draft_until_a_refund_changes(demo, offline):
    run = start_run("The mug arrived broken, please refund it")
    drive(run)
    refund = RefundRequest.objects.get(run=run)

    before = draft().json()
    RefundRequest.objects.filter(pk=refund.pk).update(status=RefundRequest.Status.SUCCEEDED)
    after = draft().json()

    assert (before["source"], before["run"]) == ("run", str(run.pk))
    assert before["body"] == run.draft_reply
    assert before["state"] == {
        "refunds": [
            {
                "request_id": refund.request_id,
                "order_id": "202610110087",
                "amount": "129.00",
                "currency": "CNY",
                "status": "pending_approval",
            }
        ]
    }
    assert (after["source"], after["run"]) == ("template", None)
    assert after["state"]["refunds"][0]["status"] == "succeeded"
    assert "We have refunded 129.00 CNY for your ceramic mug" in after["body"]
    assert after["check"] == {"ok": True, "claims": []}
    assert refund.request_id not in after["body"]
    assert internal_vocabulary(after["body"]) == []


@pytest.mark.django_db(transaction=True)
def test_a_refund_saved_since_the_run_makes_the_draft_new(demo, offline):
    run = start_run("The mug arrived broken, please refund it")
    drive(run)
    refund = RefundRequest.objects.get(run=run)

    refund.explanation = "Changed after the run."
    refund.save()

    assert draft().json()["source"] == "template"


@pytest.mark.django_db
def test_a_chinese_customer_gets_a_chinese_draft(demo, offline):
    ticket = Ticket.objects.get(reference="TCK-1004")
    TicketMessage.objects.create(
        ticket=ticket, author_kind="customer", body="耳机用了几天就坏了，我想退款。"
    )

    body = draft("TCK-1004").json()

    assert body["language"] == "zh"
    assert body["body"].startswith("Li Wei，您好！")
    assert internal_vocabulary(body["body"]) == []


@pytest.mark.django_db
def test_drafting_changes_nothing(demo, offline):
    ticket = Ticket.objects.get(reference="TCK-1001")
    before = (ticket.messages.count(), ticket.events.count(), ticket.updated_at)

    draft()

    ticket.refresh_from_db()
    assert (ticket.messages.count(), ticket.events.count(), ticket.updated_at) == before
