import pytest

from tests.mcp.hosts import HttpServer


@pytest.fixture(scope="session")
def mcp_server(django_db_setup):
    """`manage.py mcp_server` on a free port, reading the test database. Tests that use it
    commit what it must see (transactional tests)."""
    server = HttpServer().start()
    yield server
    server.stop()


@pytest.fixture
def mcp_url(mcp_server, transactional_db) -> str:
    return mcp_server.url
