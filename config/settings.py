# Over 400 lines: one settings file is the contract (DESIGN §2); every knob is read from the
# environment beside what it sets, grouped in sections (database, cache and Celery, operations,
# API, the desk, email).
"""Refund Desk settings: one file, every knob from the environment (see .env.example)."""

import sys
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = BASE_DIR / "var"

env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

# Public, in this repository: `manage.py check --deploy` refuses it (ops/checks.py).
DEV_SECRET_KEY = "dev-insecure-refund-desk-key-change-me"
SECRET_KEY = env("DJANGO_SECRET_KEY", default=DEV_SECRET_KEY)
# Off unless asked for: a production start never shows a debug page. `make run` turns it on.
DEBUG = env.bool("DJANGO_DEBUG", default=False)
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost"])
# Served over HTTPS, the default with DEBUG off: plain http is redirected (not /healthz and
# /metrics, which probes and scrapers ask inside the network, and whose token a redirect
# would not unsend), cookies go over HTTPS only, and browsers are told to use nothing else
# for SECURE_HSTS_SECONDS. Off with DEBUG on (`make run`) and under pytest (test clients and
# live servers speak http); DJANGO_HTTPS=false serves a desk over plain http. Behind a proxy
# that ends TLS the server must see the scheme: uvicorn believes X-Forwarded-Proto from
# --forwarded-allow-ips.
_HTTPS = env.bool("DJANGO_HTTPS", default=not DEBUG and not env("PYTEST_VERSION", default=""))
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=_HTTPS)
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^metrics$"]
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = _HTTPS
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=365 * 24 * 3600 if _HTTPS else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = True
# Preloading (hstspreload.org) binds a whole domain for months: its owner's decision.
SILENCED_SYSTEM_CHECKS = ["security.W021"]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "orders",
    "tickets",
    "policies",
    "agent",
    "refunds",
    "ops",
    "desk",
    "evals",
]

MIDDLEWARE = [
    # First: every log line of the request, and every answer, carries its X-Request-ID.
    "ops.middleware.RequestId",
    "django.middleware.security.SecurityMiddleware",
    # Outside the others, so it also sees the debug pages for their crashes.
    "ops.middleware.NoDebugErrorPages",
    "ops.middleware.DatabaseUnavailable",
    "ops.middleware.RejectNulBytes",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "ops.context_processors.desk",
            ],
            # The desk's one time format, `when` and `day`, in every template (config/times.py).
            "builtins": ["ops.templatetags.desk_time"],
        },
    },
]

# --- Database -------------------------------------------------------------
DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'db.sqlite3'}")}
# A worker's steps and their call threads (agent/executor/pool.py) keep their connections:
# opening one costs more than a whole step. Checked before reuse, so a dropped one is replaced.
DATABASES["default"]["CONN_MAX_AGE"] = env.int("DATABASE_CONN_MAX_AGE", default=300)
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql" and env.bool(
    "DATABASE_PREPARED_STATEMENTS", default=True
):
    # A statement a connection sends again and again (a step's reads, a page's queries) is
    # parsed and planned once: psycopg prepares it on the server after its 5th run. That
    # needs the parameters bound on the server. Django leaves both off for poolers that
    # share a server connection between clients (PgBouncer in transaction mode): set
    # DATABASE_PREPARED_STATEMENTS=false behind one.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {"server_side_binding": True, "prepare_threshold": 5}
    )
# A web server serves each request on a thread of its own (uvicorn and runserver alike), and
# each thread kept its connection for CONN_MAX_AGE: a burst left as many connections as it had
# requests, up to PostgreSQL's limit. A process serving requests (config.asgi or config.wsgi
# loads these settings: uvicorn, gunicorn; or runserver) takes them from a pool instead, at
# most DATABASE_POOL_MAX_SIZE, each back when its request ends; a request waits up to
# DATABASE_POOL_TIMEOUT_S for one, then answers 503. Workers keep theirs: few threads, each
# reusing its connection step after step. DATABASE_POOL_MAX_SIZE=0: no pool.
_WEB_PROCESS = bool({"config.asgi", "config.wsgi"} & sys.modules.keys()) or sys.argv[1:2] == [
    "runserver"
]
DATABASE_POOL_MAX_SIZE = env.int("DATABASE_POOL_MAX_SIZE", default=10)
if (
    _WEB_PROCESS
    and DATABASE_POOL_MAX_SIZE
    and DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql"
):
    DATABASES["default"]["CONN_MAX_AGE"] = 0  # Django's pool: a connection per request
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": 1,
        "max_size": DATABASE_POOL_MAX_SIZE,
        "timeout": env.float("DATABASE_POOL_TIMEOUT_S", default=10.0),
    }
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Django's, making the file's folder (var/) on first connection (config/sqlite/base.py).
    DATABASES["default"]["ENGINE"] = "config.sqlite"
    # WAL lets the web server and the worker read while the other writes.
    DATABASES["default"]["OPTIONS"] = {
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
    }
    # A file, not memory, so a worker process started by the tests sees the test database.
    # TEST_DB_SUFFIX lets several test sessions run side by side on one checkout.
    DATABASES["default"]["TEST"] = {
        "NAME": str(VAR_DIR / f"test_db{env('TEST_DB_SUFFIX', default='')}.sqlite3")
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
# Django's own rendering of dates (the admin's) in the desk's one format, config/times.py.
FORMAT_MODULE_PATH = "config.formats"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "staticfiles"

# Attachments (DESIGN §15) are kept through Django's storage API: files under MEDIA_ROOT by
# default; ATTACHMENT_STORAGE_BACKEND names any other storage class (a django-storages backend,
# e.g. storages.backends.s3.S3Storage, configured by its own settings). MEDIA_ROOT is never
# served as a URL: staff download through the desk's view only.
MEDIA_ROOT = env.path("MEDIA_ROOT", default=BASE_DIR / "var" / "media")
STORAGES = {
    "default": {
        "BACKEND": env(
            "ATTACHMENT_STORAGE_BACKEND",
            default="django.core.files.storage.FileSystemStorage",
        )
    },
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
# One file at most, and all of one message's files together; more is refused with 413.
ATTACHMENT_MAX_BYTES = env.int("ATTACHMENT_MAX_BYTES", default=10 * 1024 * 1024)
ATTACHMENT_MESSAGE_MAX_BYTES = env.int("ATTACHMENT_MESSAGE_MAX_BYTES", default=25 * 1024 * 1024)
ATTACHMENT_MAX_FILES = env.int("ATTACHMENT_MAX_FILES", default=20)

LOGIN_URL = "login"
# "/" sends each role to its work: reviewers to the review queue, support to the tickets.
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

# --- Cache and Celery -----------------------------------------------------
REDIS_URL = env("REDIS_URL", default="")
# Without socket timeouts a publish to a Redis that hangs, or vanished without closing the TCP
# connection, waits forever, inside the web request that approved a refund. Reads block for
# at most brpop_timeout (1s), so 3s never cuts a healthy consumer short.
REDIS_BROKER_TRANSPORT_OPTIONS = {
    "socket_connect_timeout": env.float("CELERY_BROKER_CONNECT_TIMEOUT_S", default=2.0),
    "socket_timeout": env.float("CELERY_BROKER_SOCKET_TIMEOUT_S", default=3.0),
}
# Kombu's, but a worker that loses Redis with tasks running lives on (ops/broker.py).
REDIS_BROKER_TRANSPORT = "ops.broker:KeptParamsRedisTransport"
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            # A Redis that hangs holds each throttled request this long, not forever: then
            # throttling steps aside (ops/throttling.py).
            "OPTIONS": REDIS_BROKER_TRANSPORT_OPTIONS,
        }
    }
    CELERY_BROKER_URL = REDIS_URL
    CELERY_BROKER_TRANSPORT_OPTIONS: dict = REDIS_BROKER_TRANSPORT_OPTIONS
    # Named, the transport no longer comes from the URL's scheme, and kombu gives rediss://
    # its TLS defaults only by that scheme: a rediss:// broker keeps kombu's transport.
    if REDIS_URL.startswith("redis://"):
        CELERY_BROKER_TRANSPORT = REDIS_BROKER_TRANSPORT
else:
    # Files, not each process's memory: every web process of this machine counts the same
    # throttle hits (ops/throttling.py). Several machines need REDIS_URL.
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": env("CACHE_DIR", default=str(VAR_DIR / "cache")),
            "OPTIONS": {"MAX_ENTRIES": 10_000},
        }
    }
    CELERY_BROKER_URL = "filesystem://"
    # Kombu's filesystem transport, but a consumer never reads a half-written message and
    # quarantines a file it cannot decode instead of dying on it (ops/broker.py).
    CELERY_BROKER_TRANSPORT = "ops.broker:AtomicFilesystemTransport"
    _broker_dir = Path(env("CELERY_FILESYSTEM_DIR", default=str(VAR_DIR / "broker")))
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir / "out"),
        "data_folder_out": str(_broker_dir / "out"),
        "processed_folder": str(_broker_dir / "processed"),
        "control_folder": str(_broker_dir / "control"),
        "quarantine_folder": str(_broker_dir / "quarantine"),
        # The transport polls its folder; the default second would add up to a second to
        # every agent step.
        "polling_interval": 0.1,
        "store_processed": False,
    }

CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_IGNORE_RESULT = True
# A task is acknowledged only after it ran, and a worker that dies mid-task hands it back:
# every task is written to be safe to run twice.
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SOFT_TIME_LIMIT = env.int("CELERY_TASK_SOFT_TIME_LIMIT", default=240)
CELERY_TASK_TIME_LIMIT = env.int("CELERY_TASK_TIME_LIMIT", default=300)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A publish happens inside web requests (approve, start a run): with the broker down it must
# give up within seconds, not minutes. The work is saved first and the periodic sweeps pick up
# whatever could not be enqueued, so a short bounded retry loses nothing.
CELERY_BROKER_CONNECTION_TIMEOUT = env.float("CELERY_BROKER_CONNECTION_TIMEOUT", default=2.0)
CELERY_TASK_PUBLISH_RETRY = True
CELERY_TASK_PUBLISH_RETRY_POLICY = {
    "max_retries": 1,
    "interval_start": 0,
    "interval_step": 0.2,
    "interval_max": 0.5,
}
CELERY_TIMEZONE = TIME_ZONE
# Celery's own formats, ending like the web's with the log context (config/log_context.py).
CELERY_WORKER_LOG_FORMAT = "[%(asctime)s: %(levelname)s/%(processName)s] %(message)s%(log_context)s"
CELERY_WORKER_TASK_LOG_FORMAT = (
    "[%(asctime)s: %(levelname)s/%(processName)s] %(task_name)s[%(task_id)s]: "
    "%(message)s%(log_context)s"
)
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
# Periodic sweeps run by `celery worker -B` (also available as management commands).
# How often beat looks for runs whose worker died (AGENT_LEASE_SECONDS, below).
AGENT_SWEEP_SECONDS = env.float("AGENT_SWEEP_SECONDS", default=5.0)
CELERY_BEAT_SCHEDULE = {
    "reconcile-refunds": {"task": "refunds.tasks.reconcile_refunds", "schedule": 60.0},
    "expire-confirmations": {"task": "refunds.tasks.expire_confirmations", "schedule": 60.0},
    "resume-stalled-runs": {
        "task": "agent.tasks.resume_stalled_runs",
        "schedule": AGENT_SWEEP_SECONDS,
    },
    "resend-stalled-replies": {"task": "tickets.tasks.resend_stalled_replies", "schedule": 60.0},
    "record-sla-breaches": {"task": "tickets.tasks.record_sla_breaches", "schedule": 60.0},
    # What is older than DATA_RETENTION_DAYS goes, once a day (ops/retention.py).
    "purge-data": {"task": "ops.tasks.purge_data", "schedule": 24 * 3600.0},
}
# DESIGN §15: a ticket whose next SLA target is due within this many minutes is "due soon".
SLA_DUE_SOON_MINUTES = env.int("SLA_DUE_SOON_MINUTES", default=60)

# --- Operations: /healthz, /metrics (README "Operations") ------------------
# A probe's checks give up after this long: an unreachable database or broker is reported
# down within seconds, not after a TCP timeout.
HEALTHZ_TIMEOUT_S = env.float("HEALTHZ_TIMEOUT_S", default=2.0)
# How often a worker connected to the broker records that it is alive; /healthz calls the
# workers stale after three intervals without a heartbeat.
WORKER_HEARTBEAT_S = env.float("WORKER_HEARTBEAT_S", default=10.0)
# The bearer token a Prometheus server sends for GET /metrics. Unset: staff sessions only.
METRICS_TOKEN = env("METRICS_TOKEN", default="")
# Worker heartbeats and the sweeps' last runs are written by workers and read by the web
# process, so they live where every process looks (the default cache may be per process):
# Redis when there is one, otherwise files beside the embedded broker's, a folder web and
# worker share already. Short timeouts: a hung Redis must not hold up /healthz.
if REDIS_URL:
    CACHES["ops"] = {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": "ops",
        "OPTIONS": {
            "socket_connect_timeout": HEALTHZ_TIMEOUT_S,
            "socket_timeout": HEALTHZ_TIMEOUT_S,
        },
    }
else:
    CACHES["ops"] = {
        "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
        "LOCATION": str(_broker_dir / "state"),
    }
# prometheus-client's multiprocess mode: each process (web, worker and its pool children)
# keeps its counters in files here and /metrics adds them up. One folder per host, shared by
# its web and worker processes; empty it when deploying, before they start.
PROMETHEUS_MULTIPROC_DIR = env("PROMETHEUS_MULTIPROC_DIR", default=str(VAR_DIR / "metrics"))

# --- API ------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        # Token first: an anonymous API call then answers 401 with WWW-Authenticate.
        "ops.authentication.ExpiringTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["config.permissions.IsStaffMember"],
    # JSON only: a browser asking for HTML still gets the {"message", "code", "extra"} error
    # shape, never the browsable API's page.
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    # DRF's three, with a JSON parser that answers 400 to JSON nested too deep to parse.
    "DEFAULT_PARSER_CLASSES": [
        "ops.parsers.JSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "ops.pagination.StrictPageNumberPagination",
    "PAGE_SIZE": 50,
    "EXCEPTION_HANDLER": "config.api_errors.api_exception_handler",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
    # Rates from API_THROTTLE_USER / API_THROTTLE_ANON below, read on each request.
    "DEFAULT_THROTTLE_CLASSES": [
        "ops.throttling.UserThrottle",
        "ops.throttling.AnonThrottle",
    ],
    # How many reverse proxies of ours append to X-Forwarded-For: the throttles' client
    # address is the one they saw. 0 uses REMOTE_ADDR (DRF's own default, None, would trust
    # a header any client can write and so dodge every per-address limit).
    "NUM_PROXIES": env.int("NUM_PROXIES", default=0),
}
# Throttling, "<count>/<sec|min|hour|day>"; empty or 0 turns one off: API requests per user
# (per address when anonymous), and failed sign-ins (login page, admin, token endpoint) per
# address and username, and per address whatever the username (ops/throttling.py).
# The test suite sends hundreds of requests a minute from one address as a few users: under
# pytest (which sets PYTEST_VERSION) they are off unless set; throttling tests set rates.
_THROTTLE_OFF_IN_TESTS = bool(env("PYTEST_VERSION", default=""))
API_THROTTLE_USER = env("API_THROTTLE_USER", default="" if _THROTTLE_OFF_IN_TESTS else "600/min")
API_THROTTLE_ANON = env("API_THROTTLE_ANON", default="" if _THROTTLE_OFF_IN_TESTS else "60/min")
LOGIN_THROTTLE = env("LOGIN_THROTTLE", default="" if _THROTTLE_OFF_IN_TESTS else "10/min")
# Failed sign-ins per address whatever the username: counted by the one failure counter
# (ops/throttling.py) that also counts wrong inbound secrets. LOGIN_THROTTLE_ADDRESS is its
# former name, still read when SIGN_IN_THROTTLE is unset.
SIGN_IN_THROTTLE = env(
    "SIGN_IN_THROTTLE",
    default=env("LOGIN_THROTTLE_ADDRESS", default="" if _THROTTLE_OFF_IN_TESTS else "10/min"),
)
# How long an API token from POST /api/auth/token/ is good for, in days from when it was
# issued; 0 = until it is deleted. A password change or a deactivation deletes a user's tokens.
API_TOKEN_TTL_DAYS = env.int("API_TOKEN_TTL_DAYS", default=30)
# Tool calls one desk user may make in a minute over all their MCP sessions and tokens; past
# it a call is answered RATE_LIMITED and runs nothing (0 = no limit). MCP hosts use tokens of
# their own (manage.py mcp_token).
MCP_CALLS_PER_MINUTE = env.int("MCP_CALLS_PER_MINUTE", default=30)
SPECTACULAR_SETTINGS = {
    "TITLE": "Refund Desk API",
    "DESCRIPTION": "Tickets, customers, assistant runs, refund review and inbound email. "
    "Authenticate with POST /api/auth/token/ and send `Authorization: Token <token>`.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # The schema maps every endpoint and its parameters: not for strangers.
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    "COMPONENT_SPLIT_REQUEST": True,
    # Swagger UI served from our own static files: the docs page works offline.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Two models have a `status`: name each enum after its model.
    "ENUM_NAME_OVERRIDES": {
        "TicketStatusEnum": "tickets.models.Ticket.Status",
        "RefundStatusEnum": "refunds.models.RefundRequest.Status",
    },
}

# --- The desk -------------------------------------------------------------
LLM_PROVIDER = env(
    "LLM_PROVIDER",
    default="openai"
    if env("OPENAI_API_KEY", default="") or env("OPENAI_BASE_URL", default="")
    else "offline",
)
OPENAI_API_KEY = env("OPENAI_API_KEY", default="")
OPENAI_BASE_URL = env("OPENAI_BASE_URL", default="")
AGENT_MODEL = env("AGENT_MODEL", default="gpt-4o-mini")
AGENT_MAX_STEPS = env.int("AGENT_MAX_STEPS", default=6)
AGENT_MAX_TOOL_CALLS_PER_STEP = env.int("AGENT_MAX_TOOL_CALLS_PER_STEP", default=16)
AGENT_TOKEN_BUDGET = env.int("AGENT_TOKEN_BUDGET", default=60_000)
# A run is stopped (forced final answer, stop reason "budget") this long after it started, and
# ("loop_detected") after this many steps with tool calls that brought no new result; 0 = off.
AGENT_RUN_TIMEOUT_S = env.float("AGENT_RUN_TIMEOUT_S", default=300.0)
AGENT_LOOP_STALL_STEPS = env.int("AGENT_LOOP_STALL_STEPS", default=3)
# True: a run that completes with a model also asks it, in one more call without tools, for the
# reply the customer could be sent (DESIGN §13), and the draft endpoint asks it when it writes a
# draft again; a draft that fails its checks falls back to templates. False (the default): the
# templates write every draft, and a run makes no model call beyond its steps.
AGENT_DRAFT_WITH_MODEL = env.bool("AGENT_DRAFT_WITH_MODEL", default=False)
# Fair use, per user over the last hour: runs started, and model tokens their runs used.
# 0 turns a limit off. Counted from the database (agent.services.run_check_fair_use).
AGENT_RUNS_PER_HOUR = env.int("AGENT_RUNS_PER_HOUR", default=60)
AGENT_TOKENS_PER_HOUR = env.int("AGENT_TOKENS_PER_HOUR", default=400_000)
# A step holds its run for this long, renewed every third of it while a model or tool call
# is in flight: a killed worker's run is free again within this, and resume_stalled_runs
# (every AGENT_SWEEP_SECONDS, above) hands it to another worker.
AGENT_LEASE_SECONDS = env.int("AGENT_LEASE_SECONDS", default=15)
TOOL_TIMEOUT_S = env.float("TOOL_TIMEOUT_S", default=8.0)
# A tool result longer than the 8,000 characters the model is sent is kept in its log row up to
# this many characters, for read_tool_result to page through; the rest is dropped, and said so.
TOOL_RESULT_STORE_MAX_CHARS = env.int("TOOL_RESULT_STORE_MAX_CHARS", default=200_000)
# How long the desk keeps what people and models wrote: ticket message bodies, run transcripts
# and tool results older than this many days are purged daily (manage.py purge_data); refund
# requests, confirmations, events and the tool-call log's metadata stay for audit.
DATA_RETENTION_DAYS = env.int("DATA_RETENTION_DAYS", default=365)
LLM_TIMEOUT_S = env.float("LLM_TIMEOUT_S", default=60.0)
# With a model, the claim check (DESIGN §13) has it read each reply, draft and answer in one
# call given this long in all; past it the check reads the text without a model.
CLAIM_CHECK_TIMEOUT_S = env.float("CLAIM_CHECK_TIMEOUT_S", default=5.0)
# Every model call says how long its answer may be and how much it may vary (DESIGN §16): an
# unbounded reply from a small model ran for minutes, and an unset temperature is the
# endpoint's own default (often 1.0, a different answer on every try).
LLM_MAX_TOKENS = env.int("LLM_MAX_TOKENS", default=1024)
LLM_TEMPERATURE = env.float("LLM_TEMPERATURE", default=0.0)
# Small-model mode (DESIGN §16), made of pieces that can be left out one by one, since each
# helps one model and may not help another (agent/runtime/small_model.py): "tools" (only those
# that can apply now), "examples" (worked examples as messages), "must_call" (a step whose work
# is a tool call must make one), "context" (a fifth of the transcript), "records" (the facts of
# the run's tool results the answer leaves out, under it), "search" (a policy search also reads
# the agent's own words), "fallback" (the desk's own answer when the model gives none it can
# post), "guards" (a proposal the agent's words leave unclear is refused: the only readers of
# words that refuse, and only here), "did" (the model answers with JSON {answer, did}, and
# what it says it did is checked against the tool log).
AGENT_SMALL_MODEL = env.bool("AGENT_SMALL_MODEL", default=False)
AGENT_SMALL_MODEL_PIECES = env.list(
    "AGENT_SMALL_MODEL_PIECES",
    default=[
        "tools",
        "examples",
        "must_call",
        "context",
        "records",
        "search",
        "fallback",
        "guards",
        "did",
    ],
)
# How a call that must be a tool call is asked for: "tool_choice" ("required", which OpenAI and
# llama-server enforce) or "json_schema" (a response_format naming the tools, for servers that
# constrain output to a schema but not to a tool call: agent/providers/required_call.py).
LLM_REQUIRED_CALL = env.str("LLM_REQUIRED_CALL", default="tool_choice")
if LLM_REQUIRED_CALL not in ("tool_choice", "json_schema"):
    raise ImproperlyConfigured("LLM_REQUIRED_CALL must be tool_choice or json_schema")
# Model answers are streamed: their text reaches the run's events as it arrives, in
# message.delta events at least LLM_STREAM_FLUSH_S apart. An endpoint that refuses stream
# requests is asked without from then on; false never asks it to stream.
LLM_STREAM = env.bool("LLM_STREAM", default=True)
LLM_STREAM_FLUSH_S = env.float("LLM_STREAM_FLUSH_S", default=0.25)
# A failed model call (timeout, 429, 5xx) is retried after uniform(0, min(CAP, BASE * 2^n))
# seconds, or when the endpoint's Retry-After says; a step that would wait more than
# LLM_RETRY_MAX_WAIT_S in all fails its run instead (agent/runtime/step_model.py).
LLM_RETRY_BASE_S = env.float("LLM_RETRY_BASE_S", default=2.0)
LLM_RETRY_CAP_S = env.float("LLM_RETRY_CAP_S", default=30.0)
LLM_RETRY_MAX_WAIT_S = env.float("LLM_RETRY_MAX_WAIT_S", default=120.0)
# After this many failed calls in a row to one endpoint, across runs and processes, new steps
# wait out the cool-down instead of calling it (agent/providers/breaker.py).
LLM_BREAKER_THRESHOLD = env.int("LLM_BREAKER_THRESHOLD", default=5)
LLM_BREAKER_COOLDOWN_S = env.float("LLM_BREAKER_COOLDOWN_S", default=30.0)
CONFIRMATION_TTL_MINUTES = env.int("CONFIRMATION_TTL_MINUTES", default=1440)
REFUND_ADAPTER = env("REFUND_ADAPTER", default="simulated")
STRIPE_API_KEY = env("STRIPE_API_KEY", default="")
STRIPE_API_BASE = env("STRIPE_API_BASE", default="")
REFUND_PROVIDER_TIMEOUT_S = env.float("REFUND_PROVIDER_TIMEOUT_S", default=10.0)
# An approved request still `approved` after this long lost its execute task (the broker was
# down at approval, or dropped the message): reconcile_refunds executes it.
REFUND_APPROVED_GRACE_S = env.float("REFUND_APPROVED_GRACE_S", default=60.0)
# The simulated provider's behaviour, for demos and fault tests: normal | timeout | fail | down.
SIMULATED_PROVIDER_MODE = env("SIMULATED_PROVIDER_MODE", default="normal")
SIMULATED_PROVIDER_LATENCY_S = env.float("SIMULATED_PROVIDER_LATENCY_S", default=0.0)
DEMO_PASSWORD = env("DEMO_PASSWORD", default="demo-pass-123")

# --- Email ----------------------------------------------------------------
# Public replies go to customers through Django's mail framework: smtp://user:pass@host:587
# (smtp+tls:// for STARTTLS, smtp+ssl:// for TLS), filemail://path, consolemail://.
EMAIL_URL = env("EMAIL_URL", default="consolemail://")
vars().update(env.email_url_config(EMAIL_URL))
if EMAIL_URL.startswith("filemail://"):
    # filemail://var/mail is var/mail in this checkout; filemail:////srv/mail is absolute.
    # (django-environ would read the first as the folder "mail" in the current directory.)
    EMAIL_FILE_PATH = str(BASE_DIR / EMAIL_URL.removeprefix("filemail://"))
DEFAULT_FROM_EMAIL = env("DEFAULT_FROM_EMAIL", default="support@refund-desk.local")
# Under every public reply after the agent's name, unless they set a signature of their own.
TEAM_SIGNATURE = env("TEAM_SIGNATURE", default="Refund Desk support")
SERVER_EMAIL = DEFAULT_FROM_EMAIL
EMAIL_TIMEOUT = env.float("EMAIL_TIMEOUT_S", default=10.0)
# A reply the mail server does not take is retried with exponential backoff (full jitter,
# base EMAIL_RETRY_BASE_S, at most an hour apart); after EMAIL_SEND_RETRIES attempts (the first
# included) it is marked failed.
EMAIL_SEND_RETRIES = env.int("EMAIL_SEND_RETRIES", default=8)
EMAIL_RETRY_BASE_S = env.float("EMAIL_RETRY_BASE_S", default=30.0)
# DESIGN §19: solving a ticket emails the customer a good / bad link pair, good for this many
# days (0: no survey is sent). The links start with DESK_URL, the desk as customers reach it.
SATISFACTION_LINK_DAYS = env.int("SATISFACTION_LINK_DAYS", default=14)
DESK_URL = env("DESK_URL", default="http://127.0.0.1:8000")
# Inbound customer email (POST /api/inbound/email/, header X-Inbound-Secret). Unset: 503.
INBOUND_SECRET = env("INBOUND_SECRET", default="")
if 0 < len(INBOUND_SECRET) < 32:
    # Whoever knows it opens tickets as any sender: a short one is refused at every start
    # (web, worker, management commands), not only where system checks run.
    raise ImproperlyConfigured(
        "INBOUND_SECRET is shorter than 32 characters: set a long random one (python -c "
        '"import secrets; print(secrets.token_urlsafe(32))"), or unset it to turn inbound '
        "email off."
    )
# Wrong secrets per client address before it is answered 429 and its secret is no longer
# compared (desk/api/inbound.py), "<count>/<sec|min|hour|day>"; empty or 0 turns it off.
INBOUND_SECRET_THROTTLE = env(
    "INBOUND_SECRET_THROTTLE", default="" if _THROTTLE_OFF_IN_TESTS else "10/min"
)

LOG_LEVEL = env("LOG_LEVEL", default="INFO")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {
        "no_client_tracebacks": {"()": "ops.logs.NoTracebackForClientErrors"},
        "log_context": {"()": "ops.logs.LogContextFilter"},
    },
    # The message, then the request, run, refund and tool call it belongs to
    # (config/log_context.py).
    "formatters": {"desk": {"format": "%(message)s%(log_context)s"}},
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "filters": ["no_client_tracebacks", "log_context"],
            "formatter": "desk",
        }
    },
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    # Without handlers of its own: Django's default console handler would print every
    # django.* record a second time (with DEBUG on) after the root's console has.
    "loggers": {"django": {"handlers": [], "level": LOG_LEVEL}},
}
