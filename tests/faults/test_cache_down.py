"""The cache that counts API throttling stops (Redis down): throttling steps aside, logged once,
and reviewers keep approving through the API with their tokens."""

import logging

import pytest
from rest_framework.test import APIClient

from refunds.models import RefundEvent, RefundRequest
from tests.factories import RefundProposalFactory, api_token_key

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]


def throttle_logs(caplog) -> list[tuple[int, str]]:
    return [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "ops.throttling"]


def test_it_approves_through_the_api_with_a_token_while_the_throttle_cache_is_down(
    private_redis, settings, simulated_provider, agent_user, reviewer, caplog
):
    # Given API throttling counted in a Redis that then stops, and a pending proposal
    settings.API_THROTTLE_USER = "600/min"
    settings.API_THROTTLE_ANON = "60/min"
    settings.CACHES = {
        **settings.CACHES,
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": private_redis.url,
        },
    }
    refund = RefundProposalFactory(requested_by=agent_user)
    confirmation = refund.confirmations.get()
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {api_token_key(reviewer)}")
    assert api.get(f"/api/refunds/{refund.request_id}/").status_code == 200
    private_redis.stop()

    # When the reviewer reads the proposal and approves it with their token
    with caplog.at_level(logging.INFO, logger="ops.throttling"):
        read = api.get(f"/api/refunds/{refund.request_id}/")
        approved = api.post(
            f"/api/refunds/{refund.request_id}/approve/",
            {"version": 1, "fingerprint": confirmation.fingerprint},
            format="json",
        )

    # Then both answer, the refund is approved, and the outage is logged once, not per request
    assert read.status_code == 200, read.content
    assert approved.status_code == 200, approved.content
    assert approved.json()["status"] == "approved"
    refund.refresh_from_db()
    assert refund.status == RefundRequest.Status.APPROVED
    assert list(
        RefundEvent.objects.filter(refund_request=refund).values_list("from_status", "to_status")
    ) == [("", "pending_approval"), ("pending_approval", "approved")]
    assert throttle_logs(caplog) == [
        (
            logging.ERROR,
            "The throttle cache cannot be reached (ConnectionError): "
            "API requests are not throttled until it answers again.",
        )
    ]

    # When it is back, throttling counts again, and says so once
    private_redis.start()
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="ops.throttling"):
        answers = [api.get(f"/api/refunds/{refund.request_id}/").status_code for _ in range(2)]
    assert answers == [200, 200]
    assert throttle_logs(caplog) == [
        (logging.WARNING, "The throttle cache answers again: API requests are throttled.")
    ]
