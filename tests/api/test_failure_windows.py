"""One counter of failures per client address and window (ops/throttling.py) limits both
failed sign-ins (SIGN_IN_THROTTLE, every door) and wrong inbound secrets
(INBOUND_SECRET_THROTTLE), in the default cache, the same way when that cache is down (issue
43, finding 6)."""

import logging
import time
import uuid

import pytest
from django.conf import settings as django_settings
from django.test import Client
from rest_framework.test import APIClient

from tests.api.conftest import PASSWORD

pytestmark = pytest.mark.django_db

GUESSER, NEIGHBOUR = "203.0.113.50", "203.0.113.51"
SECRET = "failure-windows-inbound-secret-0123456789"


@pytest.fixture(autouse=True)
def counts_of_this_test_only(settings):
    settings.CACHES = {
        **django_settings.CACHES,
        "default": {
            **django_settings.CACHES["default"],
            "KEY_PREFIX": f"failure-windows-{uuid.uuid4().hex}",
        },
    }


def token_request(username: str, password: str, address: str = GUESSER):
    return APIClient().post(
        "/api/auth/token/",
        {"username": username, "password": password},
        format="json",
        REMOTE_ADDR=address,
    )


def login_page(username: str, password: str, address: str = GUESSER):
    return Client().post(
        "/login/", {"username": username, "password": password}, REMOTE_ADDR=address
    )


def inbound(secret: str, n: int, address: str = GUESSER):
    email = {
        "from": f"sender{n}@example.org",
        "subject": "Hello",
        "body": "Where is my parcel?",
        "message_id": f"<windows-{address}-{n}@example.org>",
    }
    return APIClient().post(
        "/api/inbound/email/",
        email,
        format="json",
        headers={"X-Inbound-Secret": secret},
        REMOTE_ADDR=address,
    )


def test_eleven_wrong_passwords_from_one_address_are_answered_429_on_every_door(demo, settings):
    # Given 10 failed sign-ins a minute per address, whatever the username
    settings.SIGN_IN_THROTTLE = "10/min"

    # When one address sends 11 wrong passwords, for several names
    names = ["agent", "agent2", "supervisor", "nobody"]
    answers = [token_request(names[n % 4], f"guess-{n}").status_code for n in range(10)]
    eleventh = token_request("agent", PASSWORD)
    page = login_page("agent2", PASSWORD)

    # Then the 11th is 429 with Retry-After even with the right password, the login page says
    # why, and another address signs in
    assert answers == [400] * 10
    assert eleventh.status_code == 429
    assert 0 < int(eleventh["Retry-After"]) <= 60
    assert page.status_code == 429
    assert "Too many failed sign-ins from your address; try again in " in page.content.decode()
    assert "_auth_user_id" not in page.wsgi_request.session
    assert token_request("agent", PASSWORD, address=NEIGHBOUR).status_code == 200
    assert login_page("agent", PASSWORD, address=NEIGHBOUR).status_code == 302


def test_the_right_password_works_once_the_window_has_passed(demo, settings):
    settings.SIGN_IN_THROTTLE = "2/s"
    assert [token_request("agent", f"guess-{n}").status_code for n in range(2)] == [400, 400]
    assert token_request("agent", PASSWORD).status_code == 429

    time.sleep(1.1)

    assert token_request("agent", PASSWORD).status_code == 200


def test_sign_ins_and_inbound_secrets_are_counted_apart_by_the_one_counter(demo, settings):
    # Given both limits at 2 a minute
    settings.SIGN_IN_THROTTLE = "2/min"
    settings.INBOUND_SECRET = SECRET
    settings.INBOUND_SECRET_THROTTLE = "2/min"

    # When an address fails two sign-ins
    failed = [token_request("agent", f"guess-{n}").status_code for n in range(2)]

    # Then its sign-ins are held back, not its mail, until it guesses secrets too
    assert failed == [400, 400]
    assert token_request("agent", PASSWORD).status_code == 429
    assert inbound(SECRET, 1).status_code == 201
    assert [inbound(f"guess-{n}", n).status_code for n in range(2, 5)] == [401, 401, 429]
    assert inbound(SECRET, 5).status_code == 429
    assert inbound(SECRET, 6, address=NEIGHBOUR).status_code == 201


def test_with_the_cache_down_both_are_limited_in_the_process_and_it_is_logged(
    demo, settings, caplog
):
    # Given a Redis cache nobody answers on (port 1), limits of 2
    settings.CACHES = {
        **settings.CACHES,
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:1/0",
        },
    }
    settings.SIGN_IN_THROTTLE = "2/min"
    settings.INBOUND_SECRET = SECRET
    settings.INBOUND_SECRET_THROTTLE = "2/min"
    # (the process's own counts outlive the test: addresses of this test alone)
    guesser, gateway = f"outage-{uuid.uuid4().hex}", f"gateway-{uuid.uuid4().hex}"

    # When a guesser tries passwords and secrets, and the gateway sends mail
    with caplog.at_level(logging.WARNING, logger="ops.throttling"):
        passwords = [token_request("agent", f"guess-{n}", guesser).status_code for n in range(3)]
        secrets = [inbound(f"guess-{n}", n, guesser).status_code for n in range(3)]
        mail = inbound(SECRET, 9, gateway)

    # Then both limits hold, the gateway's mail is taken, and the outage is in the log
    assert passwords == [400, 400, 429]
    assert secrets == [401, 401, 429]
    assert mail.status_code == 201, mail.content
    assert any("cache is unreachable" in r.getMessage() for r in caplog.records)
