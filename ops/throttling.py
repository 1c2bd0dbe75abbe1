"""Throttling: API requests per user or address; failed sign-ins and wrong inbound secrets
against guessing.

API request counts live in the default cache (Redis with REDIS_URL, else files in var/cache/),
so every web process sees the same ones. Rates ("10/min"; empty or "0" turns a throttle off)
are read from settings on each request, not fixed when DRF loads the classes, so a test can
set them.

The API throttles step aside while their cache cannot be reached (logged when that starts
and ends, not per request): throttling only slows a client down, and refusing every request
for want of it would take the API down with Redis, approvals included.

Sign-in guesses are limited on every door: the login page, the admin's login and POST
/api/auth/token/. A sign-in is counted as failed before its password is checked, atomically
(Redis INCR; the file cache's counts under a lock every process of the machine takes), and
given back only when the password was right: guesses sent in parallel cannot all get past a
check made before any of them was counted. Over a limit a sign-in is refused before the
password is checked, so guessing stops even at the right password. The name is counted as
Django's sign-in looks it up (stripped, NFKC): a fullwidth spelling counts with the plain one.

Wrong X-Inbound-Secret are counted by the same counter (failures per client address and
window, INBOUND_SECRET_THROTTLE), but only once compared and wrong: the mail gateway posts
many emails at once, and counting each before its secret is compared could refuse a burst of
right ones.

With Redis unreachable, both are counted in the process's memory instead (and logged): nobody
is locked out by an outage, and a guesser who can take Redis down still gets no more than the
limit per web process.
"""

import hashlib
import logging
import math
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from django.conf import settings
from django.contrib import messages
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import get_user_model
from django.contrib.auth.views import LoginView
from django.core.cache import BaseCache, caches
from django.core.cache.backends.filebased import FileBasedCache
from django.core.cache.backends.locmem import LocMemCache
from django.core.exceptions import ValidationError
from django.core.files import locks
from redis import ConnectionError as RedisConnectionError
from redis import RedisError
from redis import TimeoutError as RedisTimeoutError
from rest_framework.authtoken.serializers import AuthTokenSerializer
from rest_framework.exceptions import Throttled
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
CACHE_UNREACHABLE = (RedisConnectionError, RedisTimeoutError, OSError)

T = TypeVar("T")


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
    """At most `count` failures at `key` in a window of `seconds` from the first one."""

    key: str
    count: int
    seconds: int

    @classmethod
    def of(cls, key: str, rate: str) -> "_Window":
        count, period = rate.split("/")
        return cls(key=key, count=int(count), seconds=PERIODS[period.strip()[0]])


class _Counts:
    """Failure counts in `cache`, whose add and incr must be atomic (Redis, memory) or run
    under a lock (files). A window's end is kept beside its count, for Retry-After."""

    def __init__(self, cache: BaseCache):
        self.cache = cache

    def add_one(self, window: _Window) -> tuple[int, float]:
        """Count one more failure; the count in its window and the seconds the window has left."""
        now, ends_key = time.time(), f"{window.key}:ends"
        self.cache.add(ends_key, now + window.seconds, window.seconds)
        ends = self.cache.get(ends_key, now + window.seconds)
        self.cache.add(window.key, 0, window.seconds)
        try:
            count = self.cache.incr(window.key)
        except ValueError:  # the window ended between the add and the incr
            self.cache.set(window.key, 1, window.seconds)
            count = 1
        # The file cache's incr forgets the expiry, and Redis's INCR of a key that expired
        # since its existence check makes one without any.
        self.cache.touch(window.key, max(math.ceil(ends - now), 1))
        return count, ends - now

    def take_back(self, window: _Window) -> None:
        try:
            self.cache.decr(window.key)
        except ValueError:  # the window is over
            return
        ends = self.cache.get(f"{window.key}:ends")
        self.cache.touch(window.key, max(math.ceil((ends or 0) - time.time()), 1))

    def forget(self, window: _Window) -> None:
        self.cache.delete_many([window.key, f"{window.key}:ends"])

    def wait(self, window: _Window) -> float | None:
        """The seconds the window has left when it holds its `count` failures; else None."""
        if self.cache.get(window.key, 0) < window.count:
            return None
        left = (self.cache.get(f"{window.key}:ends") or 0) - time.time()
        return left if left > 0 else None


# Where failures are counted while the shared cache is unreachable. As many entries as the file
# cache keeps: a full cache drops a third of its counts to make room.
_process_counts = _Counts(LocMemCache("sign-in-failures", {"OPTIONS": {"MAX_ENTRIES": 10_000}}))


@contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        locks.lock(handle, locks.LOCK_EX)
        try:
            yield
        finally:
            locks.unlock(handle)


def _counting(work: Callable[[_Counts], T], *, limits: str) -> T:
    """`work` on the shared counts, made atomic; on the process's own while the cache is
    unreachable (logged, naming the `limits`)."""
    shared = caches["default"]
    lock: AbstractContextManager[None] = nullcontext()
    if isinstance(shared, FileBasedCache):
        # Its add and incr read and then write a file: one lock for every process sharing it.
        lock = _file_lock(Path(settings.CACHES["default"]["LOCATION"]) / "sign-in.lock")
    try:
        with lock:
            return work(_Counts(shared))
    except (RedisError, OSError):
        logger.warning(
            "%s: the cache is unreachable; counting in this process until it is back", limits
        )
        return work(_process_counts)


def address_window(prefix: str, request, setting: str) -> list[_Window]:
    """The window of failures of `request`'s client address under the rate in `setting`;
    none when that limit is off."""
    rate = rate_from_settings(setting)
    return [_Window.of(f"{prefix}:{client_address(request)}", rate)] if rate else []


def failures_wait(windows: list[_Window], *, limits: str) -> float | None:
    """The seconds before an address whose `windows` are full may try again; None: now."""
    waits = _counting(lambda counts: [counts.wait(window) for window in windows], limits=limits)
    return max((wait for wait in waits if wait is not None), default=None)


def failure_record(windows: list[_Window], *, limits: str) -> None:
    """Count one failure in each of `windows`."""
    _counting(lambda counts: [counts.add_one(window) for window in windows], limits=limits)


def sign_in_name(username: str) -> str:
    """`username` as Django's sign-in looks it up: the login form strips it and normalises it
    to NFKC (so "\uff41gent" signs in as "agent"); DRF's token serializer only strips it, so
    its names are counted with the ones they resemble. No case folding: Django's usernames are
    case-sensitive, and "Agent" is not "agent"."""
    return get_user_model().normalize_username(username.strip())


def _username_key(address: str, username: str) -> str:
    # Hashed: a username is whatever was typed, any length, any characters.
    typed = f"{address}\n{sign_in_name(username)}".encode()
    return f"signin-failures:{hashlib.sha256(typed).hexdigest()}"


SIGN_IN_LIMITS = "Sign-in limits"
INBOUND_SECRET_LIMITS = "Wrong inbound secrets"


class SignInGuard:
    """Failed sign-ins per address whatever the username (SIGN_IN_THROTTLE) and per address and
    username (LOGIN_THROTTLE)."""

    def _windows(self, request, username: str) -> list[_Window]:
        windows = address_window("signin-failures-address", request, "SIGN_IN_THROTTLE")
        if by_name := rate_from_settings("LOGIN_THROTTLE"):
            windows.append(_Window.of(_username_key(client_address(request), username), by_name))
        return windows

    def start(self, request, username: str) -> float | None:
        """A sign-in is about to check a password: count it as failed now. None: check the
        password, and call `succeeded` if it was right. Otherwise the seconds before this
        address may try `username` again; the password must not be checked, and nothing is
        counted."""
        windows = self._windows(request, username)

        def count(counts: _Counts) -> float | None:
            taken = [(window, *counts.add_one(window)) for window in windows]
            waits = [left for window, count, left in taken if count > window.count]
            if not waits:
                return None
            for window in windows:
                counts.take_back(window)
            return max(waits)

        return _counting(count, limits=SIGN_IN_LIMITS)

    def succeeded(self, request, username: str) -> None:
        """The right password: the address gets its count back, and this username's failures
        from this address are forgotten (the address's are not, or one known account would
        wipe out a spray of guesses)."""
        windows = self._windows(request, username)
        username_key = _username_key(client_address(request), username)

        def give_back(counts: _Counts) -> None:
            for window in windows:
                if window.key == username_key:
                    counts.forget(window)
                else:
                    counts.take_back(window)

        _counting(give_back, limits=SIGN_IN_LIMITS)


sign_in_guard = SignInGuard()


def sign_in_refusal(wait: float) -> str:
    return f"Too many failed sign-ins from your address; try again in {wait_in_words(wait)}."


class SignInTokenSerializer(AuthTokenSerializer):
    """DRF's credentials check under the failed sign-in limits: refused (429) over them."""

    def validate(self, attrs):
        request, username = self.context["request"], attrs.get("username", "")
        wait = sign_in_guard.start(request, username)
        if wait is not None:
            raise Throttled(wait=wait)
        # A wrong password raises here, and stays counted.
        validated = super().validate(attrs)
        sign_in_guard.succeeded(request, username)
        return validated


class ThrottledLoginView(LoginView):
    """Django's login page, refusing (429, with the reason on the page) an address over the
    failed sign-in limits before it looks at the password."""

    def post(self, request, *args, **kwargs):
        username = request.POST.get("username", "")
        wait = sign_in_guard.start(request, username)
        if wait is None:
            return super().post(request, *args, **kwargs)
        messages.error(request, sign_in_refusal(wait))
        # An unbound form keeps the typed username without checking the password.
        form = self.get_form_class()(request, initial={"username": username})
        response = self.render_to_response(self.get_context_data(form=form), status=429)
        response["Retry-After"] = str(max(math.ceil(wait), 1))
        return response

    def form_valid(self, form):
        # The name as typed, as `post` counted it.
        sign_in_guard.succeeded(self.request, form.data.get("username", ""))
        return super().form_valid(form)


class GuardedAdminAuthenticationForm(AdminAuthenticationForm):
    """The admin's login form under the same failed sign-in limits (the admin's page shows a
    form error; it has no place for a 429)."""

    def clean(self):
        username = self.data.get("username", "")
        wait = sign_in_guard.start(self.request, username)
        if wait is not None:
            raise ValidationError(sign_in_refusal(wait), code="throttled")
        # A wrong password raises here, and stays counted.
        cleaned = super().clean()
        sign_in_guard.succeeded(self.request, username)
        return cleaned
