"""Which model answers a run: LLM_PROVIDER picks the offline planner or an OpenAI-compatible
endpoint (DESIGN §3). Small-model mode also asks the offline planner, as a provider like any
other, what the desk itself would do with the same messages (`get_offline_provider`)."""

import threading

from django.conf import settings

from agent.providers.llm import Provider
from agent.providers.offline.planner import OfflinePlanner
from agent.providers.openai_client import OpenAIProvider

# One client per endpoint and process: building one loads the TLS certificate bundle and a
# connection pool, far more than a step's own work. Keyed by the settings it is built from.
_clients: dict[tuple, OpenAIProvider] = {}
_clients_lock = threading.Lock()


def get_offline_provider() -> Provider:
    """The offline planner, whatever LLM_PROVIDER says: the desk's own reading of a run, which
    small-model mode asks for the call it would make and the answer it would give
    (agent/runtime/small_model.py)."""
    return OfflinePlanner()


def get_provider() -> Provider:
    if settings.LLM_PROVIDER == "offline":
        return get_offline_provider()
    key = (
        settings.OPENAI_BASE_URL,
        settings.OPENAI_API_KEY,
        settings.LLM_TIMEOUT_S,
        settings.AGENT_MODEL,
    )
    with _clients_lock:
        provider = _clients.get(key)
        if provider is None:
            provider = _clients[key] = OpenAIProvider()
    return provider
