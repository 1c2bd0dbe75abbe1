import pytest

from refunds import tasks
from tests.redteam.obedient import load_payloads, obedient_model


@pytest.fixture
def enqueued(monkeypatch):
    """Every execute_refund the code tries to enqueue (nothing reaches a broker)."""
    calls: list = []
    monkeypatch.setattr(tasks.execute_refund, "delay", lambda *args, **kw: calls.append(args))
    monkeypatch.setattr(tasks.execute_refund, "apply_async",
                        lambda *args, **kw: calls.append(args))
    return calls


@pytest.fixture
def obedient(fake_openai):
    """The fake model endpoint answered by the obedient model."""
    model = obedient_model(load_payloads())
    fake_openai.respond_with(model)
    return fake_openai
