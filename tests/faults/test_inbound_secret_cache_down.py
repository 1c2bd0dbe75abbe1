"""The count of wrong inbound secrets lives in the cache; with Redis gone the inbound endpoint
goes on (the secret still guards it), nothing is counted, and the outage is logged."""

import logging

import pytest
from rest_framework.test import APIClient

from tickets.models import Ticket

pytestmark = pytest.mark.django_db

SECRET = "gateway-secret-0123456789-abcdefghij"


def post(secret: str, n: int):
    email = {
        "from": f"sender{n}@example.org",
        "subject": "Hello",
        "body": "Where is my parcel?",
        "message_id": f"<cache-down-{n}@example.org>",
    }
    return APIClient().post(
        "/api/inbound/email/",
        email,
        format="json",
        headers={"X-Inbound-Secret": secret},
        REMOTE_ADDR="203.0.113.9",
    )


def test_it_takes_inbound_mail_and_refuses_wrong_secrets_while_the_cache_is_down(
    private_redis, settings, caplog
):
    # Given failed secrets counted in a Redis that goes away
    settings.INBOUND_SECRET = SECRET
    settings.INBOUND_SECRET_THROTTLE = "2/min"
    settings.CACHES = {
        **settings.CACHES,
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": private_redis.url,
        },
    }
    private_redis.stop()

    # When wrong secrets and the right one arrive from one address
    with caplog.at_level(logging.WARNING, logger="desk.api"):
        wrong = [post(f"guess-{n}", n).status_code for n in range(4)]
        right = post(SECRET, 9)

    # Then the wrong ones are refused, the right one gets in, and the outage is logged
    assert wrong == [401] * 4
    assert right.status_code == 201, right.content
    assert Ticket.objects.get(reference=right.json()["ticket"]).subject == "Hello"
    warnings = [r.getMessage() for r in caplog.records if r.name == "desk.api"]
    assert len(warnings) == 9  # each wait check and each count, for five requests
    assert all(
        w.startswith("Wrong inbound secrets are not counted: the cache is unreachable")
        for w in warnings
    )
