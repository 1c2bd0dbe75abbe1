import pytest

from tests.fakes.openai_server import FakeOpenAI


@pytest.fixture
def fake_openai(settings):
    """The fake model endpoint, used by this process; `fake_openai.worker_env` points a worker
    subprocess at it too."""
    server = FakeOpenAI().start()
    settings.LLM_PROVIDER = "openai"
    settings.OPENAI_BASE_URL = server.base_url
    settings.OPENAI_API_KEY = "test-key"
    yield server
    server.stop()
