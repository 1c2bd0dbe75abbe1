from datetime import timedelta
from decimal import Decimal

import pytest
from django.contrib.auth.models import Group
from django.utils import timezone
from rest_framework.test import APIClient

from refunds.models import RefundConfirmation, RefundEvent, RefundRequest
from tests.factories import (
    AgentRunFactory,
    RefundProposalFactory,
    TicketFactory,
    propose_new_version,
    publish_role_limits,
)

pytestmark = pytest.mark.django_db


def client_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def state(refund: RefundRequest) -> tuple:
    return (
        RefundRequest.objects.values().get(pk=refund.pk),
        list(RefundConfirmation.objects.filter(refund_request=refund).values()),
        RefundEvent.objects.filter(refund_request=refund).count(),
    )


@pytest.fixture
def refund(agent_user):
    ticket = TicketFactory(reference="TCK-7100", order__order_id="202610110087")
    run = AgentRunFactory(ticket=ticket, started_by=agent_user, untrusted_instructions=True)
    return RefundProposalFactory(ticket=ticket, requested_by=agent_user, run=run)


@pytest.fixture
def on_commit(django_capture_on_commit_callbacks):
    return django_capture_on_commit_callbacks


def url(refund_or_id, action: str = "") -> str:
    request_id = getattr(refund_or_id, "request_id", refund_or_id)
    return f"/api/refunds/{request_id}/" + (f"{action}/" if action else "")


def test_it_shows_a_refund_in_the_documented_shape(refund, agent_user):
    confirmation = refund.confirmations.get()

    response = client_for(agent_user).get(url(refund))

    assert response.status_code == 200
    body = response.json()
    assert body == {
        "request_id": refund.request_id,
        "ticket": "TCK-7100",
        "order_id": "202610110087",
        "customer": refund.order.customer.name,
        "amount": "129.00",
        "currency": "CNY",
        "reason": "damaged",
        "explanation": "The mug arrived in pieces.",
        "status": "pending_approval",
        "requested_by": "t_agent",
        "run": str(refund.run_id),
        "provider_refund_id": "",
        "policy_evaluation": refund.policy_evaluation,
        "untrusted_warning": True,
        "confirmations": [
            {
                "version": 1,
                "fingerprint": confirmation.fingerprint,
                "status": "pending",
                "expires_at": body["confirmations"][0]["expires_at"],
                "decided_by": None,
                "decided_at": None,
                "decision_note": "",
                "requester_note": {},
                "created_at": body["confirmations"][0]["created_at"],
            }
        ],
        "created_at": body["created_at"],
        "updated_at": body["updated_at"],
    }
    assert body["confirmations"][0]["expires_at"].startswith(
        confirmation.expires_at.strftime("%Y-%m-%dT%H:%M:%S")
    )


def test_an_unknown_refund_is_a_json_404(agent_user):
    response = client_for(agent_user).get(url("rf_000000000000000000000000"))

    assert response.status_code == 404
    assert response.json() == {"message": "Not found.", "code": "not_found", "extra": {}}


def test_it_lists_refunds_paginated_and_filtered_by_status(refund, agent_user, reviewer):
    other = RefundProposalFactory(requested_by=agent_user)
    client_for(reviewer).post(url(other, "reject"), {"version": 1}, format="json")

    everything = client_for(agent_user).get("/api/refunds/").json()
    pending = client_for(agent_user).get("/api/refunds/", {"status": "pending_approval"}).json()

    assert set(everything) == {"count", "next", "previous", "results"}
    assert everything["count"] == 2
    assert [r["request_id"] for r in everything["results"]] == [refund.request_id, other.request_id]
    assert pending["count"] == 1
    assert pending["results"][0]["request_id"] == refund.request_id


def test_an_unknown_status_filter_is_a_400(agent_user):
    response = client_for(agent_user).get("/api/refunds/", {"status": "done"})

    assert response.status_code == 400
    assert list(response.json()["extra"]["fields"]) == ["status"]


def test_the_refund_api_is_for_staff_only(refund, outsider):
    assert client_for(outsider).get("/api/refunds/").status_code == 403
    assert client_for(outsider).get(url(refund)).status_code == 403
    assert APIClient().get("/api/refunds/").status_code == 401


def test_a_reviewer_approves_and_gets_the_refund_back(refund, reviewer, on_commit):
    fingerprint = refund.confirmations.get().fingerprint

    with on_commit(execute=False) as callbacks:
        response = client_for(reviewer).post(
            url(refund, "approve"),
            {"version": 1, "fingerprint": fingerprint, "note": "ok"},
            format="json",
        )

    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "approved"
    assert body["confirmations"][0]["status"] == "approved"
    assert body["confirmations"][0]["decided_by"] == "t_reviewer"
    assert body["confirmations"][0]["decision_note"] == "ok"
    assert len(callbacks) == 1


def test_approving_a_stale_version_is_a_409(refund, reviewer, agent_user, on_commit):
    old_fingerprint = refund.confirmations.get().fingerprint
    propose_new_version(refund, requested_by=agent_user)
    before = state(refund)

    with on_commit(execute=False) as callbacks:
        response = client_for(reviewer).post(
            url(refund, "approve"), {"version": 1, "fingerprint": old_fingerprint}, format="json"
        )

    assert response.status_code == 409
    assert response.json()["code"] == "stale_confirmation"
    assert response.json()["extra"] == {"current_version": 2}
    assert state(refund) == before
    assert callbacks == []


def test_approving_with_a_wrong_fingerprint_is_a_409(refund, reviewer, on_commit):
    before = state(refund)

    with on_commit(execute=False) as callbacks:
        response = client_for(reviewer).post(
            url(refund, "approve"), {"version": 1, "fingerprint": "0" * 64}, format="json"
        )

    assert response.status_code == 409
    assert response.json()["code"] == "fingerprint_mismatch"
    assert state(refund) == before
    assert callbacks == []


def test_approving_what_the_policy_now_refuses_is_a_422(refund, reviewer, on_commit):
    refund.order.delivered_at = timezone.now() - timedelta(days=40)
    refund.order.save()
    before = state(refund)

    with on_commit(execute=False) as callbacks:
        response = client_for(reviewer).post(
            url(refund, "approve"),
            {"version": 1, "fingerprint": refund.confirmations.get().fingerprint},
            format="json",
        )

    assert response.status_code == 422
    assert response.json()["code"] == "refund_refused"
    assert response.json()["extra"]["failing_clauses"] == ["R-1"]
    assert state(refund) == before
    assert callbacks == []


def test_an_agent_cannot_approve(refund, agent2_user, on_commit):
    before = state(refund)

    with on_commit(execute=False) as callbacks:
        response = client_for(agent2_user).post(
            url(refund, "approve"),
            {"version": 1, "fingerprint": refund.confirmations.get().fingerprint},
            format="json",
        )

    assert response.status_code == 403
    assert state(refund) == before
    assert callbacks == []


def test_a_reviewer_cannot_approve_their_own_request(reviewer, on_commit):
    reviewer.groups.add(Group.objects.get(name="support_agent"))
    own = RefundProposalFactory(requested_by=reviewer)
    before = state(own)

    with on_commit(execute=False) as callbacks:
        response = client_for(reviewer).post(
            url(own, "approve"),
            {"version": 1, "fingerprint": own.confirmations.get().fingerprint},
            format="json",
        )

    assert response.status_code == 403
    assert response.json()["code"] == "own_request"
    assert state(own) == before
    assert callbacks == []


@pytest.mark.parametrize(
    "body, fields",
    [
        ({}, ["version", "fingerprint"]),
        ({"version": True, "fingerprint": "a" * 64}, ["version"]),
        ({"version": "one", "fingerprint": "a" * 64}, ["version"]),
        ({"version": 0, "fingerprint": "a" * 64}, ["version"]),
        ({"version": 1, "fingerprint": "not-a-fingerprint"}, ["fingerprint"]),
    ],
)
def test_a_bad_approve_body_is_a_400_with_field_errors(refund, reviewer, on_commit, body, fields):
    before = state(refund)

    with on_commit(execute=False) as callbacks:
        response = client_for(reviewer).post(url(refund, "approve"), body, format="json")

    assert response.status_code == 400
    assert sorted(response.json()["extra"]["fields"]) == sorted(fields)
    assert state(refund) == before
    assert callbacks == []


def test_approving_an_unknown_refund_is_a_404(reviewer):
    response = client_for(reviewer).post(
        url("rf_000000000000000000000000", "approve"),
        {"version": 1, "fingerprint": "a" * 64},
        format="json",
    )

    assert response.status_code == 404
    assert response.json()["code"] == "not_found"


def test_a_reviewer_rejects(refund, reviewer):
    response = client_for(reviewer).post(
        url(refund, "reject"), {"version": 1, "note": "No photo."}, format="json"
    )

    assert response.status_code == 200
    assert response.json()["status"] == "rejected"
    assert response.json()["confirmations"][0]["status"] == "rejected"


def test_rejecting_a_stale_version_is_a_409(refund, reviewer, agent_user):
    propose_new_version(refund, requested_by=agent_user)
    before = state(refund)

    response = client_for(reviewer).post(url(refund, "reject"), {"version": 1}, format="json")

    assert response.status_code == 409
    assert state(refund) == before


def test_an_agent_cannot_reject(refund, agent2_user):
    before = state(refund)

    response = client_for(agent2_user).post(url(refund, "reject"), {"version": 1}, format="json")

    assert response.status_code == 403
    assert state(refund) == before


def test_a_bad_reject_body_is_a_400(refund, reviewer):
    response = client_for(reviewer).post(url(refund, "reject"), {"note": 3}, format="json")

    assert response.status_code == 400
    assert list(response.json()["extra"]["fields"]) == ["version"]


def test_the_schema_documents_the_refund_endpoints(agent_user):
    response = client_for(agent_user).get("/api/schema/", {"format": "json"})

    assert response.status_code == 200
    paths = response.json()["paths"]
    approve = paths["/api/refunds/{request_id}/approve/"]["post"]
    assert approve["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith(
        "/ApproveRequest"
    )
    assert set(approve["responses"]) == {"200", "400", "401", "403", "404", "409", "422"}
    assert "/api/refunds/{request_id}/reject/" in paths
    assert "confirmations" in response.json()["components"]["schemas"]["Refund"]["properties"]


def test_approval_is_refused_once_the_published_policy_no_longer_names_the_currency(
    agent_user, reviewer, on_commit
):
    # Given a 19.00 KWD refund proposed under a policy with KWD limits
    cny = {"intern": "0.00", "agent": "500.00", "supervisor": "5000.00"}
    publish_role_limits({"CNY": cny, "KWD": {"agent": "20.00", "supervisor": "200.00"}})
    ticket = TicketFactory(order__currency="KWD", order__amount_paid=Decimal("19.00"))
    refund = RefundProposalFactory(ticket=ticket, requested_by=agent_user, amount=Decimal("19.00"))
    fingerprint = refund.confirmations.get().fingerprint
    # and a newer published policy that sets limits in CNY only
    publish_role_limits({"CNY": cny})
    before = state(refund)

    with on_commit(execute=False) as callbacks:
        response = client_for(reviewer).post(
            url(refund, "approve"), {"version": 1, "fingerprint": fingerprint}, format="json"
        )

    assert response.status_code == 422
    body = response.json()
    detail = (
        "the policy sets no refund limits for KWD (only for CNY); a refund in KWD cannot be "
        "proposed or approved at the desk"
    )
    assert body == {
        "message": f"The policy refuses this refund now. R-5: {detail}",
        "code": "currency_not_supported",
        "extra": {
            "failing_clauses": ["R-5"],
            "verdicts": [{"clause": "R-5", "outcome": "fail", "detail": detail}],
        },
    }
    assert state(refund) == before
    assert callbacks == []


def test_the_requester_withdraws_a_pending_proposal(refund, agent_user):
    response = client_for(agent_user).post(
        url(refund, "withdraw"), {"note": "The customer keeps it."}, format="json"
    )

    assert response.status_code == 200
    assert response.json()["status"] == "withdrawn"
    assert response.json()["confirmations"][0]["status"] == "withdrawn"


def test_a_supervisor_withdraws_with_an_empty_body(refund, supervisor):
    response = client_for(supervisor).post(url(refund, "withdraw"), {}, format="json")

    assert (response.status_code, response.json()["status"]) == (200, "withdrawn")


@pytest.mark.parametrize("who", ["agent2_user", "reviewer"])
def test_anyone_else_cannot_withdraw(refund, who, request):
    before = state(refund)

    response = client_for(request.getfixturevalue(who)).post(
        url(refund, "withdraw"), {}, format="json"
    )

    assert response.status_code == 403
    assert response.json() == {
        "message": "Only whoever proposed this refund, or a supervisor, may withdraw it.",
        "code": "withdraw_forbidden",
        "extra": {},
    }
    assert state(refund) == before


def test_withdrawing_an_approved_request_is_a_409_with_its_status(refund, agent_user, reviewer):
    client_for(reviewer).post(
        url(refund, "approve"),
        {"version": 1, "fingerprint": refund.confirmations.get().fingerprint},
        format="json",
    )
    before = state(refund)

    response = client_for(agent_user).post(url(refund, "withdraw"), {}, format="json")

    assert response.status_code == 409
    assert response.json() == {
        "message": f"Refund {refund.request_id} is approved; only a proposal awaiting review "
        f"can be withdrawn.",
        "code": "refund_not_withdrawable",
        "extra": {"status": "approved"},
    }
    assert state(refund) == before


def test_a_bad_withdraw_body_is_a_400(refund, agent_user):
    before = state(refund)

    response = client_for(agent_user).post(
        url(refund, "withdraw"), {"note": "x" * 2001}, format="json"
    )

    assert response.status_code == 400
    assert list(response.json()["extra"]["fields"]) == ["note"]
    assert state(refund) == before


def test_withdrawing_an_unknown_request_is_a_404(agent_user):
    response = client_for(agent_user).post(url("RF-nope", "withdraw"), {}, format="json")

    assert (response.status_code, response.json()["code"]) == (404, "not_found")


def test_the_schema_documents_the_withdraw_endpoint(agent_user):
    response = client_for(agent_user).get("/api/schema/", {"format": "json"})

    withdraw = response.json()["paths"]["/api/refunds/{request_id}/withdraw/"]["post"]
    assert withdraw["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith(
        "/WithdrawRequest"
    )
    assert set(withdraw["responses"]) == {"200", "400", "401", "403", "404", "409"}
