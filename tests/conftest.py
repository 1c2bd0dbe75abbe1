import importlib
import io
import logging
import os
import time
import uuid

import pytest
from django.apps import apps as django_apps
from django.conf import settings
from django.db import connections

from agent import api as agent_api
from agent.executor.pool import close_idle_threads
from config.celery import app as celery_app
from config.roles import Role
from desk.demo import seed_demo
from ops.health import close_probe_connection
from refunds.adapters import simulated_calls
from tests import services
from tests.factories import UserFactory
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.stripe_server import FakeStripe

# Playwright's sync API keeps an event loop on the test thread; Django must still let the
# test code touch the database from it.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

# Every test session publishes to a queue of its own, so a `make run` worker (or another
# session) never picks up tasks that point at this session's test database.
TEST_QUEUE = f"test-{uuid.uuid4().hex[:10]}"
celery_app.conf.task_default_queue = TEST_QUEUE


@pytest.fixture(scope="session", autouse=True)
def empty_test_queue_at_the_end():
    """Tests that start runs without a worker leave tasks behind; don't leave them in the
    broker (on the filesystem transport they would pile up in var/broker/)."""
    yield
    services.purge_queue(TEST_QUEUE)


@pytest.fixture(scope="session", autouse=True)
def call_threads_closed_before_the_test_database_goes(django_db_setup):
    """The call threads (agent/executor/pool.py) keep their connections between steps: close them
    before the test database is dropped (PostgreSQL refuses while they are connected)."""
    yield
    close_idle_threads()


@pytest.fixture(scope="session", autouse=True)
def health_probe_closed_before_the_test_database_goes(django_db_setup):
    """/healthz keeps its database connection between probes: close it before the test
    database is dropped."""
    yield
    close_probe_connection()


# Data that migrations put in every database (roles, their permissions, the published refund
# policy). Transactional tests end with a flush that deletes it, so it is put back before each.
REFERENCE_DATA_MIGRATIONS = [
    ("tickets.migrations.0002_roles", "create_groups"),
    ("tickets.migrations.0003_reviewer_permissions", "grant"),
    ("tickets.migrations.0008_sla_policy_defaults", "seed"),
    ("tickets.migrations.0021_saved_view", "add_team_views"),
    ("policies.migrations.0002_refunds_policy_v1", "publish"),
    ("policies.migrations.0003_refunds_limits_per_currency", "publish"),
    ("agent.migrations.0004_mcp_session", "let_reviewers_view_sessions"),
]


@pytest.fixture(autouse=True)
def reference_data(request):
    if not _is_transactional(request):
        return
    request.getfixturevalue("transactional_db")
    for module, function in REFERENCE_DATA_MIGRATIONS:
        getattr(importlib.import_module(module), function)(django_apps, None)


def _is_transactional(request) -> bool:
    marker = request.node.get_closest_marker("django_db")
    if marker is not None and marker.kwargs.get("transaction"):
        return True
    return bool({"transactional_db", "live_server"} & set(request.fixturenames))


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def media(settings, tmp_path):
    """Every attachment file in a folder of this test's own."""
    settings.MEDIA_ROOT = tmp_path
    return tmp_path


@pytest.fixture
def demo(db):
    """The demo data of DESIGN §10."""
    seed_demo()


@pytest.fixture
def intern(db):
    return UserFactory(username="t_intern", role=Role.INTERN)


@pytest.fixture
def agent_user(db):
    return UserFactory(username="t_agent", role=Role.AGENT)


@pytest.fixture
def agent2_user(db):
    return UserFactory(username="t_agent2", role=Role.AGENT)


@pytest.fixture
def supervisor(db):
    return UserFactory(username="t_supervisor", role=Role.SUPERVISOR)


@pytest.fixture
def reviewer(db):
    return UserFactory(username="t_reviewer", role=Role.REVIEWER, is_staff=True)


@pytest.fixture
def reviewer2(db):
    return UserFactory(username="t_reviewer2", role=Role.REVIEWER, is_staff=True)


@pytest.fixture
def outsider(db):
    """Logged in, but in no desk group."""
    return UserFactory(username="t_outsider")


@pytest.fixture
def postgres():
    services.require_postgres()


@pytest.fixture
def redis_broker():
    services.require_redis()


@pytest.fixture
def enqueued(monkeypatch) -> list[int]:
    """The refund pk of every execute_refund enqueued, recorded instead of sent to the broker.
    Other tasks (a run's first step) are not sent either."""
    executions: list[int] = []

    def send_task(name, args=(), kwargs=None, **options):
        if name == "refunds.tasks.execute_refund":
            executions.extend(args)

    monkeypatch.setattr(celery_app, "send_task", send_task)
    return executions


@pytest.fixture
def celery_worker(transactional_db):
    """A real worker process on the real broker, reading the test database."""
    worker = services.WorkerProcess(TEST_QUEUE).start()
    yield worker
    worker.stop()


@pytest.fixture(scope="session")
def browser():
    services.require_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=services.CHROMIUM,
            headless=True,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        yield browser
        browser.close()
        # While Playwright runs, its event loop on this thread makes Django keep the thread's
        # connections apart from those it made before (asgiref's Local goes by context once
        # a loop runs): close the ones made meanwhile, or one stays connected to the test
        # database, which then cannot be dropped.
        connections.close_all()


# How long after its browser left a page's stream on the live server ends.
STREAMS_END_S = 1.5


@pytest.fixture
def page(browser, live_server, monkeypatch):
    # The live server is a WSGI server: a stream hears that its browser left only when it next
    # writes. The pages' streams that never end by themselves (a ticket's, the header's count,
    # a list's) write a keep-alive every half second here, so they end, and give their
    # database connections back, before the test's database is emptied or dropped.
    monkeypatch.setattr(agent_api, "STREAM_HEARTBEAT_S", 0.5)
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1366, "height": 900})
    page = context.new_page()
    page.set_default_timeout(15_000)
    yield page
    context.close()
    time.sleep(STREAMS_END_S)


@pytest.fixture
def login(page):
    def log_in(username: str, password: str | None = None):
        page.goto("/login/")
        page.fill("#id_username", username)
        page.fill("#id_password", password or settings.DEMO_PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_load_state()
        return page

    return log_in


# --- Fakes at the edges, over their real protocols ------------------------------------


@pytest.fixture
def fake_openai(settings):
    """The fake model endpoint, used by this process; `fake_openai.worker_env` points a worker
    subprocess at it too."""
    server = FakeOpenAI().start()
    # Tests script a run's model calls one by one; the draft's extra call is asked for by the
    # tests of model drafts (tests/agent/test_drafts.py), which turn this back on.
    settings.AGENT_DRAFT_WITH_MODEL = False
    settings.LLM_PROVIDER = "openai"
    settings.OPENAI_BASE_URL = server.base_url
    settings.OPENAI_API_KEY = "test-key"
    yield server
    server.stop()


@pytest.fixture
def simulated_provider(settings):
    """The simulated payment provider in normal mode, with an empty call log."""
    settings.REFUND_ADAPTER = "simulated"
    settings.SIMULATED_PROVIDER_MODE = "normal"
    settings.SIMULATED_PROVIDER_LATENCY_S = 0
    simulated_calls.reset()
    yield simulated_calls
    simulated_calls.reset()


@pytest.fixture
def stripe_server(settings):
    """The fake Stripe API on a random local port, with the adapter pointed at it."""
    fake = FakeStripe().start()
    settings.REFUND_ADAPTER = "stripe"
    settings.STRIPE_API_KEY = fake.api_key
    settings.STRIPE_API_BASE = fake.url
    yield fake
    fake.stop()


@pytest.fixture
def printed():
    """Everything the configured log handlers print during the test, formatted as in
    production, in one stream."""
    loggers = [
        logging.getLogger(),
        *(
            logger
            for logger in logging.Logger.manager.loggerDict.values()
            if isinstance(logger, logging.Logger)
        ),
    ]
    # Exactly StreamHandler: pytest's capturing handlers are subclasses.
    handlers = {
        handler
        for logger in loggers
        for handler in logger.handlers
        if type(handler) is logging.StreamHandler
    }
    assert handlers, "no configured log handler to read"
    stream = io.StringIO()
    previous = {handler: handler.setStream(stream) for handler in handlers}
    yield stream
    for handler, old in previous.items():
        handler.setStream(old)
