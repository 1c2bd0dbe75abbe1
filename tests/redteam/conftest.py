import pytest

from tests.redteam.obedient import load_payloads, obedient_model


@pytest.fixture
def obedient(fake_openai):
    """The fake model endpoint answered by the obedient model."""
    model = obedient_model(load_payloads())
    fake_openai.respond_with(model)
    return fake_openai
