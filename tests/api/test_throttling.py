"""Throttling: API requests per user and per address, failed sign-ins per address and
username on every door (login page, admin login, token endpoint), counted in a cache every
web process shares."""

import os
import subprocess
import sys
import textwrap
import uuid

import pytest
from django.conf import settings as django_settings
from django.contrib.auth import get_user_model
from django.test import Client
from rest_framework.test import APIClient

from config.errors import wait_in_words
from ops.models import ApiToken
from tests.api.conftest import PASSWORD, token_header
from tests.api.hashers import CountingMD5PasswordHasher
from tests.services import run_in_threads

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def counts_of_this_test_only(settings):
    """Throttle counts under a key prefix of this test's own, in the configured cache (files,
    or Redis with REDIS_URL): nothing counted before or elsewhere reaches them."""
    prefix = f"throttle-test-{uuid.uuid4().hex}"
    settings.CACHES = {
        **django_settings.CACHES,
        "default": {**django_settings.CACHES["default"], "KEY_PREFIX": prefix},
    }
    return prefix


@pytest.fixture
def checked_passwords(settings) -> type[CountingMD5PasswordHasher]:
    """The hasher that checks every password from here on, counting the checks."""
    settings.PASSWORD_HASHERS = ["tests.api.hashers.CountingMD5PasswordHasher"]
    CountingMD5PasswordHasher.checked = 0
    return CountingMD5PasswordHasher


def token_request(username: str, password: str, address: str = "10.0.0.1"):
    return APIClient().post(
        "/api/auth/token/",
        {"username": username, "password": password},
        format="json",
        REMOTE_ADDR=address,
    )


def login_page(client, username: str, password: str, address: str = "10.0.0.1"):
    return client.post("/login/", {"username": username, "password": password}, REMOTE_ADDR=address)


def assert_throttled(response, *, at_most: int) -> None:
    assert response.status_code == 429
    body = response.json()
    retry_after = body["extra"]["retry_after"]
    assert 0 < retry_after <= at_most
    assert response["Retry-After"] == str(retry_after)
    assert body == {
        "message": f"Too many requests; try again in {wait_in_words(retry_after)}.",
        "code": "throttled",
        "extra": {"retry_after": retry_after},
    }


def test_a_caller_over_the_user_rate_is_throttled_with_retry_after(demo, settings):
    settings.API_THROTTLE_USER = "3/min"
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=token_header("agent"))

    answers = [api.get("/api/tickets/").status_code for _ in range(3)]
    throttled = api.get("/api/tickets/")

    assert answers == [200, 200, 200]
    assert_throttled(throttled, at_most=60)
    other = APIClient()
    other.credentials(HTTP_AUTHORIZATION=token_header("agent2"))
    assert other.get("/api/tickets/").status_code == 200


def test_anonymous_callers_are_throttled_per_address(demo, settings):
    settings.API_THROTTLE_ANON = "2/min"

    answers = [token_request("agent", PASSWORD).status_code for _ in range(2)]
    throttled = token_request("agent", PASSWORD)

    assert answers == [200, 200]
    assert_throttled(throttled, at_most=60)
    assert token_request("agent", PASSWORD, address="10.0.0.2").status_code == 200


def test_the_token_endpoint_refuses_guesses_over_the_limit_even_the_right_one(demo, settings):
    settings.LOGIN_THROTTLE = "3/min"
    ApiToken.objects.all().delete()

    guesses = [token_request("agent", f"guess-{n}").status_code for n in range(3)]
    right_one = token_request("agent", PASSWORD)

    assert guesses == [400, 400, 400]
    assert_throttled(right_one, at_most=60)
    assert not ApiToken.objects.filter(user__username="agent").exists()
    # Another username from the address, and the username from another address, are not
    # held back by these failures.
    assert token_request("agent2", PASSWORD).status_code == 200
    assert token_request("agent", PASSWORD, address="10.0.0.2").status_code == 200


def test_the_right_password_forgets_that_usernames_failures(demo, settings):
    settings.LOGIN_THROTTLE = "3/min"

    first = [token_request("agent", "wrong").status_code for _ in range(2)]
    signed_in = token_request("agent", PASSWORD)
    again = [token_request("agent", "wrong").status_code for _ in range(2)]

    assert [*first, signed_in.status_code, *again] == [400, 400, 200, 400, 400]
    assert token_request("agent", PASSWORD).status_code == 200


def test_failures_across_usernames_from_one_address_are_limited(demo, settings):
    settings.SIGN_IN_THROTTLE = "4/min"

    sprayed = [token_request(name, "Summer2026!").status_code for name in ("a", "b", "c", "d")]

    assert sprayed == [400, 400, 400, 400]
    assert_throttled(token_request("agent", PASSWORD), at_most=60)
    assert token_request("agent", PASSWORD, address="10.0.0.2").status_code == 200


def test_the_login_page_refuses_an_address_over_the_limit_with_a_clear_message(
    demo, settings, client
):
    settings.LOGIN_THROTTLE = "3/min"

    guesses = [login_page(client, "agent", f"guess-{n}") for n in range(3)]
    right_one = login_page(client, "agent", PASSWORD)

    assert [guess.status_code for guess in guesses] == [200, 200, 200]
    assert all(b"didn't match" in guess.content for guess in guesses)
    assert right_one.status_code == 429
    assert 0 < int(right_one["Retry-After"]) <= 60
    page = right_one.content.decode()
    assert "Too many failed sign-ins from your address; try again in " in page
    assert "didn't match" not in page
    assert 'value="agent"' in page
    assert "_auth_user_id" not in client.session
    assert login_page(client, "agent2", PASSWORD).status_code == 302
    assert client.session["_auth_user_id"] == str(
        get_user_model().objects.get(username="agent2").pk
    )


def test_the_admin_login_counts_the_same_failures(demo, settings, client):
    settings.LOGIN_THROTTLE = "3/min"
    login_page(client, "admin", "guess-1")
    login_page(client, "admin", "guess-2")
    client.post(
        "/admin/login/", {"username": "admin", "password": "guess-3"}, REMOTE_ADDR="10.0.0.1"
    )

    right_one = client.post(
        "/admin/login/", {"username": "admin", "password": PASSWORD}, REMOTE_ADDR="10.0.0.1"
    )

    assert right_one.status_code == 200
    assert "Too many failed sign-ins from your address; try again in " in right_one.content.decode()
    assert "_auth_user_id" not in client.session


def test_failures_counted_by_another_process_count_here(demo, settings, client):
    """The default cache is shared by processes (files in var/cache/, or Redis): a failure a
    second web process counted holds here too."""
    settings.LOGIN_THROTTLE = "3/min"
    other_process = textwrap.dedent(
        """
        import sys
        import django
        from django.conf import settings
        django.setup()
        settings.CACHES["default"]["KEY_PREFIX"] = sys.argv[1]
        settings.LOGIN_THROTTLE = "3/min"
        from django.test import RequestFactory
        from ops.throttling import sign_in_guard
        request = RequestFactory().post("/login/", REMOTE_ADDR="10.9.9.9")
        for _ in range(3):
            sign_in_guard.start(request, "agent")
        """
    )
    prefix = settings.CACHES["default"]["KEY_PREFIX"]
    environment = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings"}
    subprocess.run(
        [sys.executable, "-c", other_process, prefix],
        cwd=django_settings.BASE_DIR,
        env=environment,
        check=True,
        timeout=60,
    )

    refused = login_page(client, "agent", PASSWORD, address="10.9.9.9")

    assert refused.status_code == 429
    assert login_page(client, "agent", PASSWORD, address="10.9.9.8").status_code == 302


def test_outside_the_test_suite_throttling_is_on_and_the_cache_is_shared(tmp_path):
    """The suite runs with throttles off (PYTEST_VERSION); a server does not."""
    environment = {
        key: value
        for key, value in os.environ.items()
        if key not in ("PYTEST_VERSION", "REDIS_URL", "CACHE_DIR")
        and not key.startswith(("API_THROTTLE", "LOGIN_THROTTLE", "SIGN_IN_THROTTLE"))
    }
    environment["DJANGO_SETTINGS_MODULE"] = "config.settings"
    shown = subprocess.run(
        [
            sys.executable,
            "-c",
            "from django.conf import settings as s; print(s.API_THROTTLE_USER, "
            "s.API_THROTTLE_ANON, s.LOGIN_THROTTLE, s.SIGN_IN_THROTTLE, "
            "s.CACHES['default']['BACKEND'])",
        ],
        cwd=django_settings.BASE_DIR,
        env=environment,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )

    assert shown.stdout.split() == [
        "600/min",
        "60/min",
        "10/min",
        "10/min",
        "django.core.cache.backends.filebased.FileBasedCache",
    ]


def test_the_mail_gateway_is_not_throttled_as_an_anonymous_address(demo, settings):
    # Given a strict anonymous rate and a gateway posting one customer email after another
    settings.API_THROTTLE_ANON = "2/min"
    settings.INBOUND_SECRET = "gateway-secret-0123456789-abcdefghij"
    api = APIClient()

    # Then every email gets in: the secret gates the endpoint, not a per-address rate
    for n in range(5):
        response = api.post(
            "/api/inbound/email/",
            {
                "from": f"customer{n}@example.com",
                "subject": "Where is my order?",
                "body": "Hello",
                "message_id": f"<gateway-{n}@mail.example.com>",
            },
            format="json",
            headers={"X-Inbound-Secret": "gateway-secret-0123456789-abcdefghij"},
        )
        assert response.status_code == 201, response.content
    # while any other anonymous caller is still held to the rate
    assert [token_request("agent", PASSWORD).status_code for _ in range(3)] == [200, 200, 429]


# The guesses' threads read the demo users on connections of their own: committed data.
@pytest.mark.django_db(transaction=True)
def test_it_checks_at_most_the_limits_number_of_passwords_for_parallel_token_guesses(
    demo, settings, checked_passwords
):
    # Given a limit of 10 failed sign-ins per address and username
    settings.LOGIN_THROTTLE = "10/min"

    # When 30 wrong guesses arrive at the token endpoint at once
    answers = run_in_threads(30, lambda n: token_request("agent", f"guess-{n}").status_code)

    # Then 10 passwords were checked, and the other 20 guesses were refused unchecked
    assert sorted(answers) == [400] * 10 + [429] * 20
    assert checked_passwords.checked == 10
    assert not ApiToken.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_it_checks_at_most_the_limits_number_of_passwords_for_parallel_login_page_guesses(
    demo, settings, checked_passwords
):
    # Given a limit of 10, and guesses spelling the name plainly, in fullwidth letters (which
    # the login form reads as "agent", NFKC) and with a space around it
    settings.LOGIN_THROTTLE = "10/min"
    names = ["agent", "\uff41\uff47\uff45\uff4e\uff54", " agent "]

    # When 30 wrong guesses arrive at once
    answers = run_in_threads(
        30, lambda n: login_page(Client(), names[n % 3], f"guess-{n}").status_code
    )

    # Then every spelling counted against one limit: 10 passwords were checked
    assert sorted(answers) == [200] * 10 + [429] * 20
    assert checked_passwords.checked == 10


def test_it_counts_a_fullwidth_spelling_of_a_name_with_the_name(demo, settings, client):
    # Given three failures for "agent" under a limit of 3
    settings.LOGIN_THROTTLE = "3/min"
    guesses = [login_page(client, "agent", f"guess-{n}").status_code for n in range(3)]

    # When the right password comes with the name in fullwidth letters, which the login form
    # signs in as "agent"
    fullwidth = login_page(client, "\uff41\uff47\uff45\uff4e\uff54", PASSWORD)
    by_token = token_request("\uff41\uff47\uff45\uff4e\uff54", PASSWORD)

    # Then it is refused like the plain name, and nobody signed in
    assert guesses == [200, 200, 200]
    assert fullwidth.status_code == 429
    assert "_auth_user_id" not in client.session
    assert_throttled(by_token, at_most=60)
    assert not ApiToken.objects.exists()


def test_it_keeps_limiting_sign_ins_in_the_process_while_redis_is_unreachable(
    demo, settings, caplog
):
    # Given a Redis cache nobody answers on (port 1: privileged, nothing listens), a limit of 3
    settings.CACHES = {
        **settings.CACHES,
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:1/0",
        },
    }
    settings.LOGIN_THROTTLE = "3/min"
    # (the process's own counts outlive the test: an address of this test alone)
    address = f"outage-{uuid.uuid4().hex}"

    # When a guesser tries four times, and the right password comes from another address
    guesses = [token_request("agent", f"guess-{n}", address).status_code for n in range(3)]
    fourth = token_request("agent", PASSWORD, address)
    elsewhere = token_request("agent", PASSWORD, f"{address}-2")

    # Then sign-ins still work, the limit still holds, and the outage is in the log
    assert guesses == [400, 400, 400]
    assert_throttled(fourth, at_most=60)
    assert elsewhere.status_code == 200
    assert "Sign-in limits: the cache is unreachable" in caplog.text
