"""Settings for Open Hypothesis. Every deployment knob is an environment variable (see .env.example); a `.env` file
beside manage.py (or the file OH_ENV_FILE names) is read first, and the environment wins over it."""

import os
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from dotenv import load_dotenv

from reviewapp.core.env import env_bool, env_int, env_list, env_str
from reviewapp.core.secret_key import PUBLISHED_KEY_MESSAGE, PUBLISHED_SECRET_KEYS, install_secret_key

BASE_DIR = Path(__file__).resolve().parent.parent
load_dotenv(os.environ.get("OH_ENV_FILE") or BASE_DIR / ".env", override=False)
VAR_DIR = Path(env_str("OH_VAR_DIR", str(BASE_DIR / "var")))
VAR_DIR.mkdir(parents=True, exist_ok=True)

DEBUG = env_bool("DEBUG", False)
# Production sets SECRET_KEY (the same on every web server); unset, each install makes its own in OH_VAR_DIR/secret-key.
# A published key (earlier releases' fallback) is refused unless DEBUG, and fails `check --deploy` (core.secret_key).
SECRET_KEY = env_str("SECRET_KEY", "") or install_secret_key(VAR_DIR / "secret-key")
if SECRET_KEY in PUBLISHED_SECRET_KEYS and not DEBUG:
    raise ImproperlyConfigured(PUBLISHED_KEY_MESSAGE)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

# The one switch of an HTTPS deployment (README "Production"): secure cookies, HSTS, redirect to HTTPS, and the
# header by which the proxy in front says a request came over HTTPS (it must set it and drop any the client sent).
OH_HTTPS = env_bool("OH_HTTPS", False)
if OH_HTTPS:
    # Every web server behind the proxy must share the key: HTTPS deployments name it rather than use the install's.
    if not env_str("SECRET_KEY", "") or SECRET_KEY in PUBLISHED_SECRET_KEYS or len(SECRET_KEY) < 50:
        raise ImproperlyConfigured(
            "OH_HTTPS=true needs a SECRET_KEY of your own of at least 50 random characters, e.g. from "
            "`python -c 'import secrets; print(secrets.token_urlsafe(50))'`, the same on every web server."
        )
    SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = True
    SECURE_SSL_REDIRECT = True
    SECURE_HSTS_SECONDS = env_int("OH_HSTS_SECONDS", 31_536_000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("OH_HSTS_INCLUDE_SUBDOMAINS", True)
    SECURE_HSTS_PRELOAD = env_bool("OH_HSTS_PRELOAD", True)
    _proxy_header = env_str("OH_PROXY_SSL_HEADER", "X-Forwarded-Proto")
    if _proxy_header:
        SECURE_PROXY_SSL_HEADER = ("HTTP_" + _proxy_header.upper().replace("-", "_"), "https")
SESSION_COOKIE_HTTPONLY = True
X_FRAME_OPTIONS = "DENY"
# Browser features no page uses are switched off (Permissions-Policy, reviewapp.core.requests).
PERMISSIONS_POLICY = (
    "accelerometer=(), camera=(), geolocation=(), gyroscope=(), magnetometer=(), microphone=(), payment=(), usb=()"
)
# Content-Security-Policy (django-csp): scripts only from our own static files, no inline script and no eval. Style
# attributes (progress-bar widths) are allowed; style elements and sheets come only from our static files.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'", "'unsafe-inline'"],
        "style-src-elem": ["'self'"],
        "style-src-attr": ["'unsafe-inline'"],
        "img-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'none'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "csp",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "axes",
    "django_htmx",
    "template_partials",
    "reviewapp",
    "screening",
    "literature",
    "reviewapp.benchmarks",
    "reviewapp.panel",
    "reviewapp.inspiration",
    "reviewapp.demo",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Before anything reads a body (CSRF does): oversized bodies are refused unread; API errors answer JSON.
    "reviewapp.core.requests.RequestLimitsMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    "reviewapp.core.requests.PermissionsPolicyMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "reviewapp.views.accounts.PasswordChangeFirstMiddleware",
    # Last, as django-axes asks: it turns a lockout found during the request into the lockout answer.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "reviewapp.urls"
WSGI_APPLICATION = "reviewapp.wsgi.application"

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
                "reviewapp.context_processors.roles",
                "reviewapp.context_processors.navigation",
            ],
        },
    },
    {
        # Two fragments of the reviewer's pages, rendered through {% jinja_fragment %}
        # (reviewapp/templatetags/jinja_fragments.py): the review form's question fieldsets and the queue table, loops
        # that Jinja2 renders several times faster. Its backend escapes every value (autoescape).
        "BACKEND": "django.template.backends.jinja2.Jinja2",
        "DIRS": [BASE_DIR / "templates" / "jinja2"],
        "APP_DIRS": False,
    },
]

# The embedded default is a SQLite file; production sets DATABASE_URL (PostgreSQL).
DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'openhypothesis.sqlite3'}"), conn_health_checks=True
    )
}
_ON_SQLITE = DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3"
# Seconds a connection is kept for the thread's next request. Opening a PostgreSQL connection costs more than most
# requests (README "Production"), so each thread keeps its own for ten minutes, checked before it is reused after an
# error or a server restart; opening a SQLite file costs next to nothing.
DATABASES["default"]["CONN_MAX_AGE"] = env_int("DATABASE_CONN_MAX_AGE", 0 if _ON_SQLITE else 600)
if _ON_SQLITE:
    # The web server and the worker share the file: WAL and immediate transactions avoid lock errors.
    DATABASES["default"]["OPTIONS"] = {
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
    }
    # Tests use a file as well: threads standing in for the web server and the worker then wait on each other's
    # locks as those processes do, where an in-memory database (one shared cache) refuses a locked table at once.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / "test-openhypothesis.sqlite3")}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Caches. "throttle" holds the anonymous poll counts, which every web process must share: a folder under OH_VAR_DIR
# (one machine), or Redis at OH_CACHE_URL (redis://host:6379/2) when web servers run on several machines.
OH_CACHE_URL = env_str("OH_CACHE_URL", "")
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "throttle": (
        {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": OH_CACHE_URL}
        if OH_CACHE_URL
        else {"BACKEND": "django.core.cache.backends.filebased.FileBasedCache", "LOCATION": str(VAR_DIR / "throttle")}
    ),
}

# New passwords are hashed with Argon2id (reviewapp.core.passwords); the others verify existing hashes, which are
# rewritten with Argon2id at their owner's next login.
PASSWORD_HASHERS = [
    "reviewapp.core.passwords.Argon2idPasswordHasher",
    "django.contrib.auth.hashers.PBKDF2PasswordHasher",
    "django.contrib.auth.hashers.PBKDF2SHA1PasswordHasher",
    "django.contrib.auth.hashers.BCryptSHA256PasswordHasher",
    "django.contrib.auth.hashers.ScryptPasswordHasher",
]
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# Login throttling (django-axes) on the web login, the admin and POST /api/v1/auth/token: a username is locked after
# OH_LOGIN_FAILURE_LIMIT failures, an address after OH_LOGIN_ADDRESS_FAILURE_LIMIT failures over any usernames, for
# OH_LOGIN_LOCKOUT_MINUTES; coordinators unlock on the People page. Locked: 429 with Retry-After.
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
AXES_FAILURE_LIMIT = env_int("OH_LOGIN_FAILURE_LIMIT", 5)
OH_LOGIN_ADDRESS_FAILURE_LIMIT = env_int("OH_LOGIN_ADDRESS_FAILURE_LIMIT", 30)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("OH_LOGIN_LOCKOUT_MINUTES", 15))
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]
AXES_HANDLER = "reviewapp.services.accounts.LoginThrottle"
AXES_LOCKOUT_CALLABLE = "reviewapp.views.accounts.locked_out"
AXES_CLIENT_IP_CALLABLE = "reviewapp.core.requests.client_network_of"
# Not axes' reset on success (it clears every failure of the address): LoginThrottle clears only the failures of the
# account that logged in.
AXES_RESET_ON_SUCCESS = False
AXES_VERBOSE = False
# API tokens (README "API"): days until a new token expires.
OH_API_TOKEN_DAYS = env_int("OH_API_TOKEN_DAYS", 30)
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/accounts/login/"

LANGUAGE_CODE = "en"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"
STATIC_ROOT.mkdir(exist_ok=True)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "reviewapp.core.staticfiles.StaticFilesStorage"},
}
MEDIA_ROOT = VAR_DIR / "media"
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("DATA_UPLOAD_MAX_MEMORY_SIZE", 20 * 1024 * 1024)
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
# Request bodies are refused unread above these sizes (413): every address, then the imports of cohorts and
# benchmark sets, then the literature corpus import (files of 100,000 PubMed records). JSON deeper than
# OH_MAX_JSON_DEPTH levels is refused (400).
OH_MAX_BODY_BYTES = env_int("OH_MAX_BODY_BYTES", 1024 * 1024)
OH_MAX_IMPORT_BYTES = env_int("OH_MAX_IMPORT_BYTES", 20 * 1024 * 1024)
OH_MAX_REFERENCE_IMPORT_BYTES = env_int("OH_MAX_REFERENCE_IMPORT_BYTES", 512 * 1024 * 1024)
OH_MAX_JSON_DEPTH = env_int("OH_MAX_JSON_DEPTH", 64)
# Imported tables (JSON, CSV, XLSX): rows and columns of one table, and what an XLSX workbook may expand to, in all and
# per part relative to its compressed size; a workbook beyond them is refused before it is parsed.
OH_IMPORT_MAX_ROWS = env_int("OH_IMPORT_MAX_ROWS", 100_000)
OH_IMPORT_MAX_COLUMNS = env_int("OH_IMPORT_MAX_COLUMNS", 200)
OH_XLSX_MAX_UNCOMPRESSED_BYTES = env_int("OH_XLSX_MAX_UNCOMPRESSED_BYTES", 200 * 1024 * 1024)
OH_XLSX_MAX_COMPRESSION_RATIO = env_int("OH_XLSX_MAX_COMPRESSION_RATIO", 100)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "reviewapp.api.authentication.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    # JSON bodies only: a body of nested objects and nulls has no form encoding. The views that take a file name
    # multipart instead (`parser_classes = [MultiPartParser]`).
    "DEFAULT_PARSER_CLASSES": ["reviewapp.core.requests.BoundedJSONParser"],
    # Tests send what clients send: JSON, unless a test says multipart (a file upload).
    "TEST_REQUEST_DEFAULT_FORMAT": "json",
    "EXCEPTION_HANDLER": "reviewapp.core.api_errors.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "reviewapp.core.schema.AutoSchema",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
    # Times to the second in UTC, as the exports write them: microseconds are noise to a reader.
    "DATETIME_FORMAT": "%Y-%m-%dT%H:%M:%SZ",
}

# The API's OpenAPI schema (/api/v1/schema) and its reference page (/api/v1/docs), whose Swagger UI is served from
# our own static files (drf-spectacular-sidecar) with its start script as a file of its own (no inline script).
SPECTACULAR_SETTINGS = {
    "TITLE": "Open Hypothesis API",
    "DESCRIPTION": (
        "The public Open Hypothesis API and the coordinators' and analysts' API. Sign in with "
        "`POST /api/v1/auth/token`, then send `Authorization: Token <token>`. Every error is "
        '`{"error": "<code>", "detail": "<sentence>", "problems": [...]}`; each operation lists its statuses and '
        "codes."
    ),
    "VERSION": "v1",
    "DEFAULT_GENERATOR_CLASS": "reviewapp.core.schema.SchemaGenerator",
    "SCHEMA_PATH_PREFIX": "/api/v1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "COMPONENT_SPLIT_REQUEST": True,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # No request to the public validator service: the page reaches only this site.
    "SWAGGER_UI_SETTINGS": {"validatorUrl": None, "deepLinking": True},
    # Choice sets shared by several fields, named once.
    "ENUM_NAME_OVERRIDES": {
        "ReviewStatusEnum": "reviewapp.panel.models.ReviewStatus",
        "FamilyStatusEnum": "reviewapp.panel.models.FAMILY_STATUSES",
        "StepStateEnum": "screening.api.runs.STEP_STATES",
    },
}

# Celery. The embedded default broker is a folder on disk, so `make run` needs no server;
# production points CELERY_BROKER_URL at Redis or RabbitMQ.
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", "filesystem://")
_BROKER_DIR = VAR_DIR / "broker"
# The folder broker has no way to wake a worker: the worker looks for new messages every OH_BROKER_POLL_MS (kombu's
# default, a second, would add up to a second to every step of a run).
OH_BROKER_POLL_MS = env_int("OH_BROKER_POLL_MS", 20)
CELERY_BROKER_TRANSPORT_OPTIONS = (
    {
        "data_folder_in": str(_BROKER_DIR / "queue"),
        "data_folder_out": str(_BROKER_DIR / "queue"),
        "control_folder": str(_BROKER_DIR / "control"),
        "store_processed": False,
        "polling_interval": OH_BROKER_POLL_MS / 1000,
    }
    if CELERY_BROKER_URL.startswith("filesystem")
    else {}
)
if CELERY_BROKER_URL.startswith("filesystem"):
    for _folder in ("queue", "control"):
        (_BROKER_DIR / _folder).mkdir(parents=True, exist_ok=True)
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
# Tasks one worker process runs at once (threads: model calls mostly wait on the network); `make run` and
# `make worker` start their workers with it.
CELERY_WORKER_CONCURRENCY = env_int("CELERY_CONCURRENCY", 8)
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
# A job nobody has picked up after this many seconds is reported as waiting for a worker.
JOB_UNCLAIMED_WARNING_SECONDS = env_int("JOB_UNCLAIMED_WARNING_SECONDS", 20)

# A server's log file (`make run` names one per server under var/logs/): every record goes there, with its time and
# level, and the terminal (stderr) shows only warnings and errors. Unset: every record goes to stderr.
OH_LOG_FILE = env_str("OH_LOG_FILE", "")
LOG_FILE_FORMAT = "[%(asctime)s] %(levelname)s %(name)s: %(message)s"
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    # A refusal (403) is one line in the log, not a traceback.
    "filters": {"refusals_in_one_line": {"()": "reviewapp.core.requests.RefusalsInOneLine"}},
    "formatters": {"timed": {"format": LOG_FILE_FORMAT}},
    "handlers": {"console": {"class": "logging.StreamHandler", "filters": ["refusals_in_one_line"]}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    # django-axes logs every login at INFO; its warnings (failed logins, lockouts) are what an operator needs.
    "loggers": {"django.db.backends": {"level": "INFO"}, "axes": {"level": "WARNING"}},
}
if CELERY_BROKER_URL.startswith("filesystem"):
    # kombu warns at every connection that the folder broker's URL names no host; it needs none.
    LOGGING["loggers"]["kombu.connection"] = {"level": "ERROR"}
if OH_LOG_FILE:
    LOGGING["handlers"] = {
        "console": {"class": "logging.StreamHandler", "filters": ["refusals_in_one_line"], "level": "WARNING"},
        "file": {
            "class": "logging.FileHandler",
            "filename": OH_LOG_FILE,
            "filters": ["refusals_in_one_line"],
            "formatter": "timed",
        },
    }
    LOGGING["root"]["handlers"] = ["console", "file"]

# Model providers: one transport retry loop per model call (timeouts, connection errors, 408, 429, 5xx, 529).
PROVIDER_MAX_ATTEMPTS = env_int("PROVIDER_MAX_ATTEMPTS", 6)
PROVIDER_MAX_SECONDS = float(env_str("PROVIDER_MAX_SECONDS", "1800"))
PROVIDER_BACKOFF_BASE_SECONDS = float(env_str("PROVIDER_BACKOFF_BASE_SECONDS", "2"))
PROVIDER_BACKOFF_MAX_SECONDS = float(env_str("PROVIDER_BACKOFF_MAX_SECONDS", "120"))
# Model endpoints' base URLs are https unless their host is loopback; true allows plain http anywhere (a model server
# on the local network).
OH_MODEL_ALLOW_HTTP = env_bool("OH_MODEL_ALLOW_HTTP", False)
# The simulated model server (`manage.py run_simulator`); `setup_roster` points keyless endpoints at it.
SIMULATOR_PORT = env_int("SIMULATOR_PORT", 8765)
# Address and port of the web server that `make run` starts (bin/run-local reads them here, with SIMULATOR_PORT).
HOST = env_str("HOST", "127.0.0.1")
PORT = env_int("PORT", 8000)
# The web server's processes and the threads of each (gunicorn, reviewapp.core.gunicorn_config).
WEB_WORKERS = env_int("WEB_WORKERS", 2)
WEB_THREADS = env_int("WEB_THREADS", 8)
# Real provider addresses and model ids of the default roster (docs/protocol.md#default-roster).
OPENAI_BASE_URL = env_str("OPENAI_BASE_URL", "https://api.openai.com/v1")
XAI_BASE_URL = env_str("XAI_BASE_URL", "https://api.x.ai/v1")
ANTHROPIC_BASE_URL = env_str("ANTHROPIC_BASE_URL", "https://api.anthropic.com")
GEMINI_BASE_URL = env_str("GEMINI_BASE_URL", "https://generativelanguage.googleapis.com")
# The anthropic-version header of Anthropic requests (the API reference's version).
ANTHROPIC_VERSION = env_str("ANTHROPIC_VERSION", "2023-06-01")
GPT6_ASTRA_MODEL = env_str("GPT6_ASTRA_MODEL", "gpt-6-astra")
GROK_45_MODEL = env_str("GROK_45_MODEL", "grok-4.5")
CLAUDE_OPUS_55_MODEL = env_str("CLAUDE_OPUS_55_MODEL", "claude-opus-5-5")
CLAUDE_SONNET_55_MODEL = env_str("CLAUDE_SONNET_55_MODEL", "claude-sonnet-5-5")
GEMINI_4_ARGON_MODEL = env_str("GEMINI_4_ARGON_MODEL", "gemini-4-argon")
GPT6_LUNA_MODEL = env_str("GPT6_LUNA_MODEL", "gpt-6-luna")
GPT56_SOL_MODEL = env_str("GPT56_SOL_MODEL", "gpt-5.6-sol")

# Open Hypothesis public runs (docs/protocol.md#limits): limits per client address and per day (24 h), and runs waiting
# at once.
OPEN_HYPOTHESIS_CLIENT_LIMIT = env_int("OPEN_HYPOTHESIS_CLIENT_LIMIT", 3)
OPEN_HYPOTHESIS_DAILY_CAP = env_int("OPEN_HYPOTHESIS_DAILY_CAP", 60)
OPEN_HYPOTHESIS_QUEUE_LIMIT = env_int("OPEN_HYPOTHESIS_QUEUE_LIMIT", 20)
# The header the trusted proxy sets to the client's address (e.g. X-Forwarded-For); empty: REMOTE_ADDR.
OPEN_HYPOTHESIS_TRUSTED_PROXY_HEADER = env_str("OPEN_HYPOTHESIS_TRUSTED_PROXY_HEADER", "")
# IPv6 clients count by their network of this many leading bits (one host usually holds a whole /64).
OPEN_HYPOTHESIS_IPV6_PREFIX = env_int("OPEN_HYPOTHESIS_IPV6_PREFIX", 64)
OPEN_HYPOTHESIS_POLL_SECONDS = 15
# Anonymous polls of a run (its API answer and its page) per client address and minute (reviewapp.core.throttling);
# above it, 429 with Retry-After. The page polls every OPEN_HYPOTHESIS_POLL_SECONDS: 120 leave room for 30 runs
# followed at once from one address.
OH_ANONYMOUS_POLLS_PER_MINUTE = env_int("OH_ANONYMOUS_POLLS_PER_MINUTE", 120)
# A run with no progress and no work alive (heart-beating) for this long is restarted by the sweeper, and stopped after
# OPEN_HYPOTHESIS_MAX_RESUMES; run work items, novelty checks and citation waves waiting this long unsent are sent
# again. (Running work whose worker died is taken back after OH_SILENT_SECONDS.)
OPEN_HYPOTHESIS_STALE_SECONDS = env_int("OPEN_HYPOTHESIS_STALE_SECONDS", int(PROVIDER_MAX_SECONDS) + 600)
OPEN_HYPOTHESIS_MAX_RESUMES = env_int("OPEN_HYPOTHESIS_MAX_RESUMES", 3)
# The one sweeper of every kind of background work (reviewapp.core.claims.sweep_all) and the heartbeat of claimed
# work: how often the sweeper runs, how often a worker touches the work it holds (however long its model call), how
# long running work may stay silent before its worker counts as gone (a few missed beats: recovery within about two
# minutes), how long a queued job may wait unsent before it is sent again, how many times work whose worker died is
# started again before it fails, and how long export files are kept.
OH_SWEEP_SECONDS = env_int("OH_SWEEP_SECONDS", 30)
OH_HEARTBEAT_SECONDS = env_int("OH_HEARTBEAT_SECONDS", 15)
OH_SILENT_SECONDS = env_int("OH_SILENT_SECONDS", 90)
OH_JOB_STALE_SECONDS = env_int("OH_JOB_STALE_SECONDS", int(PROVIDER_MAX_SECONDS) + 600)
OH_WORK_MAX_ATTEMPTS = env_int("OH_WORK_MAX_ATTEMPTS", 3)
OH_EXPORT_KEEP_HOURS = env_int("OH_EXPORT_KEEP_HOURS", 7 * 24)
# Optional forecast modes (docs/protocol.md#forecast-modes), stored beside the protocol's boolean: the detailed
# instruction and the single-hypothesis question.
OPEN_HYPOTHESIS_DETAILED_FORECASTS = env_bool("OPEN_HYPOTHESIS_DETAILED_FORECASTS", False)
OPEN_HYPOTHESIS_SINGLE_FORECASTS = env_bool("OPEN_HYPOTHESIS_SINGLE_FORECASTS", False)
# Inspiration audits (docs/protocol.md#inspiration-audit): a batch or audit waiting this long unsent is sent again; one
# whose worker died (silent for OH_SILENT_SECONDS) is given to another worker, at most this many times. A judging
# batch asks the judge ten times, twice at most each.
INSPIRATION_STALE_SECONDS = env_int("INSPIRATION_STALE_SECONDS", 3600)
INSPIRATION_MAX_ATTEMPTS = env_int("INSPIRATION_MAX_ATTEMPTS", 3)
CELERY_BEAT_SCHEDULE = {"sweep": {"task": "reviewapp.sweep", "schedule": OH_SWEEP_SECONDS}}

# Literature sources (docs/protocol.md#literature-sources). Base addresses are settings so tests and mirrors can point
# elsewhere.
LITERATURE_EUROPEPMC_BASE_URL = env_str(
    "LITERATURE_EUROPEPMC_BASE_URL", "https://www.ebi.ac.uk/europepmc/webservices/rest"
)
LITERATURE_EUTILS_BASE_URL = env_str("LITERATURE_EUTILS_BASE_URL", "https://eutils.ncbi.nlm.nih.gov/entrez/eutils")
# NCBI asks every client to name itself (tool) and give a contact address (email); NCBI_API_KEY is read from the
# environment at request time and never stored.
LITERATURE_NCBI_TOOL = env_str("LITERATURE_NCBI_TOOL", "open-hypothesis")
LITERATURE_NCBI_EMAIL = env_str("LITERATURE_NCBI_EMAIL", "")
# Requests per second across all workers: NCBI publishes 3 without a key and 10 with one; Europe PMC asks politeness.
LITERATURE_NCBI_RATE = float(env_str("LITERATURE_NCBI_RATE", "3"))
LITERATURE_NCBI_RATE_WITH_KEY = float(env_str("LITERATURE_NCBI_RATE_WITH_KEY", "10"))
LITERATURE_EUROPEPMC_RATE = float(env_str("LITERATURE_EUROPEPMC_RATE", "5"))
# Cached search answers expire after this many seconds; by-id fetches never expire.
LITERATURE_SEARCH_CACHE_SECONDS = env_int("LITERATURE_SEARCH_CACHE_SECONDS", 7 * 24 * 3600)
# Serve online sources only from the cache and fail on a miss (reproducible checks, no network).
LITERATURE_REPLAY_ONLY = env_bool("LITERATURE_REPLAY_ONLY", False)
LITERATURE_HTTP_TIMEOUT_SECONDS = float(env_str("LITERATURE_HTTP_TIMEOUT_SECONDS", "60"))
LITERATURE_MAX_ATTEMPTS = env_int("LITERATURE_MAX_ATTEMPTS", 6)
LITERATURE_BACKOFF_BASE_SECONDS = float(env_str("LITERATURE_BACKOFF_BASE_SECONDS", "1"))
LITERATURE_BACKOFF_MAX_SECONDS = float(env_str("LITERATURE_BACKOFF_MAX_SECONDS", "120"))

# The AI review panel (docs/protocol.md#ai-review-panel): model requests one background job makes at once (each
# endpoint's own concurrency limit still holds across all workers).
AI_PANEL_CONCURRENCY = env_int("AI_PANEL_CONCURRENCY", 8)
