"""Throttling: API requests per user or address, and failed sign-ins against password guessing.

Counts live in the default cache (Redis with REDIS_URL, else files in var/cache/), so every
web process sees the same ones. Rates ("10/min"; empty or "0" turns a throttle off) are read
from settings on each request, not fixed when DRF loads the classes, so a test can set them.

The API throttles step aside while their cache cannot be reached (logged when that starts
and ends, not per request): throttling only slows a client down, and refusing every request
for want of it would take the API down with Redis, approvals included.

Sign-in guesses are counted as failures, not attempts, on every door: the login page, the
admin's login and POST /api/auth/token/. Over a limit a sign-in is refused before the
password is checked, so guessing stops even at the right password.
"""

import hashlib
import logging
import math
import threading
import time
from dataclasses import dataclass

import redis
from django.conf import settings
from django.contrib import messages
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.views import LoginView
from django.core.cache import cache
from django.core.exceptions import ValidationError
from rest_framework import serializers
from rest_framework.authtoken.serializers import AuthTokenSerializer
from rest_framework.throttling import (
    AnonRateThrottle,
    BaseThrottle,
    SimpleRateThrottle,
    UserRateThrottle,
)

from config.errors import wait_in_words

logger = logging.getLogger(__name__)

# What the cache raises when it cannot be reached: Redis refused, dropped or timed out; the
# cache's folder unreadable.
CACHE_UNREACHABLE = (redis.ConnectionError, redis.TimeoutError, OSError)


def rate_from_settings(name: str) -> str | None:
    """The rate in setting `name`, or None when it is off."""
    rate = (getattr(settings, name, "") or "").strip()
    return None if rate in ("", "0") else rate


class _CacheOutage:
    """Whether this process found the throttles' cache unreachable; each change is logged
    once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._down = False

    def _became(self, down: bool) -> bool:
        with self._lock:
            changed, self._down = self._down != down, down
        return changed

    def failed(self, exc: Exception) -> None:
        if self._became(True):
            logger.error(
                "The throttle cache cannot be reached (%s): API requests are not throttled "
                "until it answers again.",
                type(exc).__name__,
            )

    def answered(self) -> None:
        if self._down and self._became(False):
            logger.warning("The throttle cache answers again: API requests are throttled.")


cache_outage = _CacheOutage()


class _RateFromSettings(SimpleRateThrottle):
    rate_setting: str

    def get_rate(self) -> str | None:
        return rate_from_settings(self.rate_setting)

    def allow_request(self, request, view) -> bool:
        """DRF's count, but a request is let through when the cache cannot be reached."""
        try:
            allowed = super().allow_request(request, view)
        except CACHE_UNREACHABLE as exc:
            cache_outage.failed(exc)
            return True
        if hasattr(self, "history"):  # the count was read: the cache answered
            cache_outage.answered()
        return allowed


class UserThrottle(_RateFromSettings, UserRateThrottle):
    """API requests per user (per address for anonymous ones): API_THROTTLE_USER."""

    rate_setting = "API_THROTTLE_USER"


class AnonThrottle(_RateFromSettings, AnonRateThrottle):
    """API requests per address from anonymous callers: API_THROTTLE_ANON."""

    rate_setting = "API_THROTTLE_ANON"


def client_address(request) -> str:
    """The caller's address as the API throttles see it (REST_FRAMEWORK["NUM_PROXIES"])."""
    return BaseThrottle().get_ident(request) or "unknown"


# --- Failed sign-ins ---------------------------------------------------------------------

PERIODS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


@dataclass(frozen=True)
class _Window:
    """A sliding window: at most `count` failures in `seconds`, kept in the cache at `key`."""

    key: str
    count: int
    seconds: int

    @classmethod
    def of(cls, key: str, rate: str) -> "_Window":
        count, period = rate.split("/")
        return cls(key=key, count=int(count), seconds=PERIODS[period.strip()[0]])

    def history(self, now: float) -> list[float]:
        return [moment for moment in cache.get(self.key, []) if moment > now - self.seconds]

    def wait(self, now: float) -> float | None:
        """Seconds until one more failure fits, or None if it fits now."""
        history = self.history(now)
        if len(history) < self.count:
            return None
        # Oldest first: the failure whose leaving makes room.
        return history[len(history) - self.count] + self.seconds - now


def _username_key(address: str, username: str) -> str:
    # Hashed: a username is whatever was typed, any length, any characters.
    typed = f"{address}\n{username.strip().casefold()}".encode()
    return f"signin-failures:{hashlib.sha256(typed).hexdigest()}"


class SignInGuard:
    """Failed sign-ins per address and username (LOGIN_THROTTLE) and per address whatever the
    username (LOGIN_THROTTLE_ADDRESS)."""

    def _windows(self, request, username: str) -> list[_Window]:
        address = client_address(request)
        keys = {
            "LOGIN_THROTTLE": _username_key(address, username),
            "LOGIN_THROTTLE_ADDRESS": f"signin-failures-address:{address}",
        }
        return [
            _Window.of(key, rate)
            for setting, key in keys.items()
            if (rate := rate_from_settings(setting))
        ]

    def wait(self, request, username: str) -> float | None:
        """Seconds before this address may try `username` again, or None if it may now."""
        now = time.time()
        waits = [wait for window in self._windows(request, username) if (wait := window.wait(now))]
        return max(waits) if waits else None

    def record_failure(self, request, username: str) -> None:
        now = time.time()
        for window in self._windows(request, username):
            cache.set(window.key, [*window.history(now), now], window.seconds)

    def record_success(self, request, username: str) -> None:
        """The right password: this username's failures from this address are forgotten (the
        address's are not, or one known account would wipe out a spray of guesses)."""
        cache.delete(_username_key(client_address(request), username))


sign_in_guard = SignInGuard()


def sign_in_refusal(wait: float) -> str:
    return f"Too many failed sign-ins from your address; try again in {wait_in_words(wait)}."


class SignInThrottle(BaseThrottle):
    """POST /api/auth/token/ refused while its address and username are over the failure
    limits. It counts nothing itself: SignInTokenSerializer records the failures."""

    def allow_request(self, request, view) -> bool:
        data = request.data
        username = data.get("username", "") if hasattr(data, "get") else ""
        self._wait = sign_in_guard.wait(request, str(username))
        return self._wait is None

    def wait(self) -> float | None:
        return self._wait


class SignInTokenSerializer(AuthTokenSerializer):
    """DRF's credentials check, counting each failure against the caller's address."""

    def validate(self, attrs):
        request, username = self.context["request"], attrs.get("username", "")
        try:
            validated = super().validate(attrs)
        except serializers.ValidationError:
            sign_in_guard.record_failure(request, username)
            raise
        sign_in_guard.record_success(request, username)
        return validated


class ThrottledLoginView(LoginView):
    """Django's login page, refusing (429, with the reason on the page) an address over the
    failed sign-in limits before it looks at the password."""

    def post(self, request, *args, **kwargs):
        username = request.POST.get("username", "")
        wait = sign_in_guard.wait(request, username)
        if wait is None:
            return super().post(request, *args, **kwargs)
        messages.error(request, sign_in_refusal(wait))
        # An unbound form keeps the typed username without checking the password.
        form = self.get_form_class()(request, initial={"username": username})
        response = self.render_to_response(self.get_context_data(form=form), status=429)
        response["Retry-After"] = str(max(math.ceil(wait), 1))
        return response

    def form_valid(self, form):
        sign_in_guard.record_success(self.request, form.cleaned_data.get("username", ""))
        return super().form_valid(form)

    def form_invalid(self, form):
        sign_in_guard.record_failure(self.request, form.data.get("username", ""))
        return super().form_invalid(form)


class GuardedAdminAuthenticationForm(AdminAuthenticationForm):
    """The admin's login form under the same failed sign-in limits (the admin's page shows a
    form error; it has no place for a 429)."""

    def clean(self):
        username = self.data.get("username", "")
        wait = sign_in_guard.wait(self.request, username)
        if wait is not None:
            raise ValidationError(sign_in_refusal(wait), code="throttled")
        try:
            cleaned = super().clean()
        except ValidationError:
            sign_in_guard.record_failure(self.request, username)
            raise
        sign_in_guard.record_success(self.request, username)
        return cleaned
