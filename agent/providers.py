"""Which model answers a run: LLM_PROVIDER picks the offline planner or an OpenAI-compatible
endpoint (DESIGN §3)."""

from django.conf import settings

from agent.llm import Provider
from agent.llm_openai import OpenAIProvider
from agent.offline import OfflinePlanner


def get_provider() -> Provider:
    if settings.LLM_PROVIDER == "offline":
        return OfflinePlanner()
    return OpenAIProvider()
