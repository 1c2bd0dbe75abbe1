"""The inbound endpoint's shared secret cannot be guessed without limit: failed secrets are
counted per client address (INBOUND_SECRET_THROTTLE) and, over the limit, that address is
answered 429 without its secret being compared. A desk refuses to start with a secret
shorter than 32 characters."""

import os
import subprocess
import sys
import time
import uuid

import pytest
from django.conf import settings as django_settings
from rest_framework.test import APIClient

from orders.models import Customer
from tests.services import require_redis, run_in_threads
from tickets.models import Ticket, TicketMessage

pytestmark = pytest.mark.django_db

URL = "/api/inbound/email/"
SECRET = "gateway-secret-0123456789-abcdefghij"
GUESSER, GATEWAY = "203.0.113.9", "198.51.100.7"


@pytest.fixture
def counted(settings):
    """Failed secrets counted in the configured cache (files, or Redis with REDIS_URL) under a
    key prefix of this test's own, at most 5 a minute per address."""
    settings.INBOUND_SECRET = SECRET
    settings.INBOUND_SECRET_THROTTLE = "5/min"
    settings.CACHES = {
        **django_settings.CACHES,
        "default": {
            **django_settings.CACHES["default"],
            "KEY_PREFIX": f"inbound-test-{uuid.uuid4().hex}",
        },
    }


def post(secret: str, address: str, n: int = 0):
    email = {
        "from": f"sender{n}@example.org",
        "subject": "Hello",
        "body": "Where is my parcel?",
        "message_id": f"<{address}-{n}@example.org>",
    }
    return APIClient().post(
        URL, email, format="json", headers={"X-Inbound-Secret": secret}, REMOTE_ADDR=address
    )


def counts() -> tuple[int, int, int]:
    return Customer.objects.count(), Ticket.objects.count(), TicketMessage.objects.count()


def test_it_answers_429_to_an_address_that_keeps_guessing_the_secret(counted):
    before = counts()

    responses = [post(f"guess-{n}", GUESSER, n) for n in range(100)]

    assert [r.status_code for r in responses] == [401] * 5 + [429] * 95
    refused = responses[-1]
    retry_after = refused.json()["extra"]["retry_after"]
    assert 0 < retry_after <= 60
    assert refused["Retry-After"] == str(retry_after)
    assert refused.json()["code"] == "throttled"
    assert counts() == before


def test_it_stops_comparing_an_addresss_secret_once_it_is_over_the_limit(counted):
    for n in range(5):
        post(f"guess-{n}", GUESSER, n)
    before = counts()

    right_secret_too_late = post(SECRET, GUESSER, 99)

    assert right_secret_too_late.status_code == 429
    assert counts() == before


def test_it_takes_the_right_secret_from_another_address_while_one_is_over_the_limit(counted):
    for n in range(6):
        post(f"guess-{n}", GUESSER, n)

    response = post(SECRET, GATEWAY)

    assert response.status_code == 201, response.content
    assert Ticket.objects.get(reference=response.json()["ticket"]).subject == "Hello"


def test_it_never_counts_the_right_secret_against_the_gateway(counted):
    responses = [post(SECRET, GATEWAY, n) for n in range(12)]

    assert [r.status_code for r in responses] == [201] * 12


def test_it_lets_an_address_try_again_once_its_window_has_passed(counted, settings):
    settings.INBOUND_SECRET_THROTTLE = "2/s"
    post("guess-1", GUESSER, 1)
    post("guess-2", GUESSER, 2)
    assert post("guess-3", GUESSER, 3).status_code == 429

    time.sleep(1.1)

    assert post(SECRET, GUESSER, 4).status_code == 201


@pytest.mark.services
def test_it_counts_every_one_of_the_guesses_sent_at_once(counted, settings):
    # Given room for 30 failures a minute, in Redis
    require_redis()
    settings.INBOUND_SECRET_THROTTLE = "30/min"

    # When 20 guesses arrive at once
    burst = run_in_threads(20, lambda n: post(f"guess-{n}", GUESSER, n).status_code)

    # Then all 20 were counted: 10 more are answered, the 11th is refused
    assert burst == [401] * 20
    after = [post(f"again-{n}", GUESSER, n).status_code for n in range(11)]
    assert after == [401] * 10 + [429]


def test_it_does_not_count_anything_when_the_throttle_is_off(counted, settings):
    settings.INBOUND_SECRET_THROTTLE = ""

    responses = [post(f"guess-{n}", GUESSER, n) for n in range(8)]

    assert [r.status_code for r in responses] == [401] * 8


# --- the secret's length ------------------------------------------------------------------


def start(inbound_secret: str) -> subprocess.CompletedProcess:
    """A process of the desk reading its settings with this INBOUND_SECRET."""
    environment = {
        "PATH": os.environ["PATH"],
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "INBOUND_SECRET": inbound_secret,
    }
    return subprocess.run(
        [sys.executable, "-c", "import django; django.setup(); print('started')"],
        cwd=django_settings.BASE_DIR,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize("secret", ["short", "x" * 31])
def test_it_refuses_to_start_with_a_secret_shorter_than_32_characters(secret):
    started = start(secret)

    assert started.returncode != 0
    assert "started" not in started.stdout
    assert "ImproperlyConfigured: INBOUND_SECRET is shorter than 32 characters" in started.stderr


@pytest.mark.parametrize("secret", ["", "x" * 32])
def test_it_starts_with_no_secret_or_one_of_32_characters(secret):
    started = start(secret)

    assert (started.returncode, started.stdout) == (0, "started\n"), started.stderr
