"""A circuit breaker per model endpoint, shared by every run, web process and worker.

After LLM_BREAKER_THRESHOLD failed calls in a row to one endpoint (timeouts, refused
connections, 429, 5xx: the failures a retry may cure) the breaker opens: for
LLM_BREAKER_COOLDOWN_S new steps wait instead of calling, so a provider that is down is not
hammered by every run's retries at once. When the cool-down is over, one step is let through
to try (the probe); its success closes the breaker, its failure opens it again for another
cool-down. Any successful call closes it.

The state lives in the "ops" cache (config/settings.py): Redis when REDIS_URL is set, else
files beside the embedded broker's. Both are seen by every process, which is the point; a
count lost to a race between two processes only delays the opening by a failure. A cache that
cannot be reached lets calls through: the breaker protects the provider, it must never be why
the desk stops answering. A step asks its breaker first (`wait_s`) and tells it how its call
went: when that first look found no failures, a success has nothing to clear and reads
nothing more (a failure another process records in between then counts, as a lost race
would, one failure early).
"""

import hashlib
import logging
import math
import time
from collections.abc import Iterator

from django.conf import settings
from django.core.cache import caches
from prometheus_client.core import GaugeMetricFamily, Metric

from agent.providers import get_provider

logger = logging.getLogger(__name__)

# Failures further apart than this are not "in a row": a quiet endpoint forgets old ones.
FAILURE_MEMORY_S = 600
# While one step probes a recovered endpoint, the others look again after this long.
PROBE_WAIT_S = 5.0


def _cache():
    return caches["ops"]


def _expiry(seconds: float) -> int:
    """A cache timeout covering `seconds`: Redis expiries are whole seconds, and one rounded
    down to 0 would not store the key at all."""
    return math.ceil(seconds) + 1


class ModelBreaker:
    def __init__(self, endpoint: str):
        self.endpoint = endpoint
        digest = hashlib.sha256(endpoint.encode()).hexdigest()[:16]
        self.failures_key = f"llm-breaker:{digest}:failures"
        self.open_key = f"llm-breaker:{digest}:open-until"
        self.probe_key = f"llm-breaker:{digest}:probe"
        # The failures `wait_s` found (None: it has not looked, or the cache did not answer).
        self.failures_seen: int | None = None

    @classmethod
    def for_provider(cls, provider) -> "ModelBreaker":
        return cls(f"{provider.name}:{getattr(provider, 'endpoint', '')}")

    # --- reading ---------------------------------------------------------------------------
    def failures(self) -> int:
        try:
            return int(_cache().get(self.failures_key) or 0)
        except Exception:
            logger.warning("Model breaker: the ops cache is unreachable", exc_info=True)
            return 0

    def is_open(self) -> bool:
        return self.failures() >= settings.LLM_BREAKER_THRESHOLD

    def wait_s(self) -> float:
        """How long a step must wait before calling this endpoint: 0 when it may call now."""
        try:
            return self._wait_s(_cache())
        except Exception:
            logger.warning("Model breaker: the ops cache is unreachable", exc_info=True)
            return 0.0

    def _wait_s(self, cache) -> float:
        self.failures_seen = int(cache.get(self.failures_key) or 0)
        if self.failures_seen < settings.LLM_BREAKER_THRESHOLD:
            return 0.0
        open_until = cache.get(self.open_key)
        if open_until is not None and open_until > time.time():
            return float(open_until) - time.time()
        # The cool-down is over: one step tries the endpoint, the others wait for its result.
        if cache.add(self.probe_key, True, timeout=_expiry(settings.LLM_TIMEOUT_S)):
            logger.info("Model breaker for %s: cool-down over, trying one call", self.endpoint)
            return 0.0
        return PROBE_WAIT_S

    # --- recording -------------------------------------------------------------------------
    def record_success(self) -> None:
        if self.failures_seen == 0:
            return
        try:
            cache = _cache()
            failures = int(cache.get(self.failures_key) or 0)
            if not failures:
                return
            cache.delete_many([self.failures_key, self.open_key, self.probe_key])
        except Exception:
            logger.warning("Model breaker: the ops cache is unreachable", exc_info=True)
            return
        if failures >= settings.LLM_BREAKER_THRESHOLD:
            logger.info("Model breaker for %s closed: the model answered again", self.endpoint)

    def record_failure(self, reason: str) -> None:
        try:
            self._record_failure(_cache(), reason)
        except Exception:
            logger.warning("Model breaker: the ops cache is unreachable", exc_info=True)

    def _record_failure(self, cache, reason: str) -> None:
        cache.add(self.failures_key, 0, timeout=FAILURE_MEMORY_S)
        failures = cache.incr(self.failures_key)
        # incr keeps the key's expiry on Redis but not with the file cache: set it again.
        cache.touch(self.failures_key, timeout=FAILURE_MEMORY_S)
        if failures < settings.LLM_BREAKER_THRESHOLD:
            return
        cooldown = settings.LLM_BREAKER_COOLDOWN_S
        # The deadline is in the value; the expiry only clears the key away afterwards.
        cache.set(self.open_key, time.time() + cooldown, timeout=_expiry(cooldown))
        cache.delete(self.probe_key)
        logger.warning(
            "Model breaker for %s open: %d failed calls in a row (last: %s); new steps wait "
            "%gs before calling it again",
            self.endpoint,
            failures,
            reason,
            cooldown,
        )


def breaker_metrics() -> Iterator[Metric]:
    """The breaker of the endpoint runs call now, for /metrics (ops/metrics.py): failed calls
    in a row, and whether new steps are waiting out a cool-down. Nothing when the ops cache
    cannot be read (an absent series, not a made-up number)."""
    breaker = ModelBreaker.for_provider(get_provider())
    try:
        failures = int(_cache().get(breaker.failures_key) or 0)
        open_until = _cache().get(breaker.open_key) or 0
    except Exception:
        return
    labels = [breaker.endpoint]
    counted = GaugeMetricFamily(
        "desk_model_breaker_failures",
        "Failed calls in a row to the model endpoint (the breaker opens at LLM_BREAKER_THRESHOLD).",
        labels=["endpoint"],
    )
    counted.add_metric(labels, failures)
    yield counted
    waiting = GaugeMetricFamily(
        "desk_model_breaker_open",
        "1 while new steps wait out the breaker's cool-down instead of calling the endpoint.",
        labels=["endpoint"],
    )
    is_open = failures >= settings.LLM_BREAKER_THRESHOLD and float(open_until) > time.time()
    waiting.add_metric(labels, 1 if is_open else 0)
    yield waiting
