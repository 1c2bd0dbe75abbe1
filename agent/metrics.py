"""What the step counts as it happens, for /metrics (ops/metrics.py serves them): each step's
outcome, how long the model took, why a model call failed.

Counted in the worker with prometheus-client's multiprocess mode: every process writes its
values to a file of its own in PROMETHEUS_MULTIPROC_DIR (a memory-mapped write, no query, no
network) and the scrape adds the files up. Recording costs the step no query.
"""

import os
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path

import openai
from django.conf import settings
from prometheus_client import Counter, Histogram, values

from agent.models import AgentRun


def _write_to_the_shared_folder() -> None:
    """Multiprocess mode for every metric made from here on: prometheus-client reads
    PROMETHEUS_MULTIPROC_DIR when a process first counts something."""
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = settings.PROMETHEUS_MULTIPROC_DIR
    if not getattr(values.ValueClass, "_multiprocess", False):
        values.ValueClass = values.MultiProcessValue()


_write_to_the_shared_folder()


@cache
def _folder_made() -> None:
    """The folder, made by the first process that counts or serves a scrape: importing
    this module creates nothing (a fresh clone's var/ stays empty until work is done)."""
    Path(os.environ["PROMETHEUS_MULTIPROC_DIR"]).mkdir(parents=True, exist_ok=True)


STEP_OUTCOMES = ("continue", "finished", "retry", "skipped", "error")
MODEL_ERROR_KINDS = (
    "timeout",
    "connection",
    "rate_limited",
    "server_error",
    "refused",
    "malformed",
    "other",
)

# registry=None: these are read from the files, never from a process's default registry.
# All labelled, so a process makes its file only when it first counts something (or serves
# a scrape, see _known_series): not every manage.py command leaves one behind.
AGENT_STEPS = Counter(
    "desk_agent_steps",
    "Assistant steps run by workers, by what came of them (continue: the next step was "
    "enqueued; retry: the step will be tried again; skipped: another delivery held the run).",
    ["outcome"],
    registry=None,
)
MODEL_LATENCY = Histogram(
    "desk_model_call_seconds",
    "How long a model call took to answer, for the calls that answered, by provider.",
    ["provider"],
    buckets=(0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120),
    registry=None,
)
MODEL_ERRORS = Counter(
    "desk_model_errors", "Model calls that failed, by kind.", ["kind"], registry=None
)
TOOL_LATENCY = Histogram(
    "desk_tool_call_seconds",
    "How long a tool call's handler ran before it answered or the executor stopped waiting "
    "(TOOL_TIMEOUT_S), by tool; calls refused before their handler ran are not timed.",
    ["tool"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30),
    registry=None,
)
TOKEN_KINDS = ("prompt", "completion")
RUN_TOKENS = Histogram(
    "desk_agent_run_tokens",
    "Model tokens a run used, as the model's usage reported them, by kind (prompt, "
    "completion); observed when the run ends.",
    ["kind"],
    buckets=(250, 500, 1000, 2000, 4000, 8000, 16000, 32000, 64000, 128000),
    registry=None,
)
RUN_STEPS = Histogram(
    "desk_agent_run_steps",
    "Steps a run took, observed when it ends, by how it ended (stop reason).",
    ["stop_reason"],
    buckets=(1, 2, 3, 4, 5, 6, 8, 10, 15, 20),
    registry=None,
)


def known_series(*, tools: Iterable[str] = ()) -> None:
    """The known label values, at zero until counted: every family is on the page from the
    first scrape, and a rate over a series that appeared with its first error would miss
    that error. `tools`: the registered tools' names (this module sits below the registry)."""
    _folder_made()
    for tool in tools:
        TOOL_LATENCY.labels(tool)
    for stop_reason in AgentRun.StopReason.values:
        RUN_STEPS.labels(stop_reason)
    for outcome in STEP_OUTCOMES:
        AGENT_STEPS.labels(outcome)
    for kind in MODEL_ERROR_KINDS:
        MODEL_ERRORS.labels(kind)
    MODEL_LATENCY.labels(settings.LLM_PROVIDER)
    for kind in TOKEN_KINDS:
        RUN_TOKENS.labels(kind)


def count_step(outcome: str) -> None:
    _folder_made()
    AGENT_STEPS.labels(outcome).inc()


def model_error_kind(exc: BaseException) -> str:
    """What kind of failure a model call raised: the error's own `kind` when it names one,
    else read from the client exception it was raised from."""
    kind = getattr(exc, "kind", None)
    if kind in MODEL_ERROR_KINDS:
        return kind
    cause = exc.__cause__
    if isinstance(cause, openai.APITimeoutError):
        return "timeout"
    if isinstance(cause, openai.APIConnectionError):
        return "connection"
    if isinstance(cause, openai.RateLimitError):
        return "rate_limited"
    if isinstance(cause, openai.InternalServerError):
        return "server_error"
    if isinstance(cause, openai.APIStatusError):
        return "refused"
    if isinstance(cause, openai.APIResponseValidationError | ValueError) or "malformed" in str(exc):
        return "malformed"
    return "other"


@contextmanager
def model_call_observed() -> Iterator[None]:
    """Around one model call: its latency when it answers, its kind of error when it fails."""
    _folder_made()
    started = time.perf_counter()
    try:
        yield
    except Exception as exc:
        MODEL_ERRORS.labels(model_error_kind(exc)).inc()
        raise
    MODEL_LATENCY.labels(settings.LLM_PROVIDER).observe(time.perf_counter() - started)


def observe_tool_call(tool: str, seconds: float) -> None:
    """One tool call's handler time. `tool` is a registered tool's name: the label's values
    are the registry's, never what a model made up."""
    _folder_made()
    TOOL_LATENCY.labels(tool).observe(seconds)


def observe_run_end(*, stop_reason: str, steps: int, tokens_in: int, tokens_out: int) -> None:
    """What a run used, once, when it ends."""
    _folder_made()
    RUN_STEPS.labels(stop_reason).observe(steps)
    RUN_TOKENS.labels("prompt").observe(tokens_in)
    RUN_TOKENS.labels("completion").observe(tokens_out)
