"""The count of wrong inbound secrets lives in the cache; with Redis gone the inbound endpoint
goes on (the secret still guards it), wrong secrets are counted in the process's memory, as
failed sign-ins are, and the outage is logged."""

import logging
import uuid

import pytest
from rest_framework.test import APIClient

from tickets.models import Ticket

pytestmark = pytest.mark.django_db

SECRET = "gateway-secret-0123456789-abcdefghij"


def post(secret: str, n: int, address: str):
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
        REMOTE_ADDR=address,
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
    # (the process's own counts outlive the test: addresses of this test alone)
    guesser, gateway = f"guesser-{uuid.uuid4().hex}", f"gateway-{uuid.uuid4().hex}"

    # When wrong secrets arrive from one address and the right one from the gateway's
    with caplog.at_level(logging.WARNING, logger="ops.throttling"):
        wrong = [post(f"guess-{n}", n, guesser).status_code for n in range(4)]
        right = post(SECRET, 9, gateway)

    # Then the wrong ones are refused and, past the limit, held back; the gateway's mail gets
    # in, and the outage is logged
    assert wrong == [401, 401, 429, 429]
    assert right.status_code == 201, right.content
    assert Ticket.objects.get(reference=right.json()["ticket"]).subject == "Hello"
    warnings = [r.getMessage() for r in caplog.records if r.name == "ops.throttling"]
    assert warnings
    assert all(
        w == "Wrong inbound secrets: the cache is unreachable; counting in this process until "
        "it is back"
        for w in warnings
    )
