"""Settings for Open Hypothesis. Every deployment knob is an environment variable (see .env.example)."""

from pathlib import Path

import dj_database_url

from reviewapp.core.env import env_bool, env_int, env_list, env_str

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("OH_VAR_DIR", str(BASE_DIR / "var")))
VAR_DIR.mkdir(parents=True, exist_ok=True)

DEBUG = env_bool("DEBUG", False)
# The fallback key only serves local runs; production must set SECRET_KEY.
SECRET_KEY = env_str("SECRET_KEY", "insecure-local-only-key-set-SECRET_KEY-in-production")
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "django_htmx",
    "template_partials",
    "reviewapp",
    "screening",
    "literature",
    "reviewapp.benchmarks",
    "reviewapp.panel",
    "reviewapp.inspiration",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
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
            ],
        },
    },
]

# The embedded default is a SQLite file; production sets DATABASE_URL (PostgreSQL).
DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'openhypothesis.sqlite3'}"),
        conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 0),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The web server and the worker share the file: WAL and immediate transactions avoid lock errors.
    DATABASES["default"]["OPTIONS"] = {
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
    }

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
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
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
MEDIA_ROOT = VAR_DIR / "media"
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("DATA_UPLOAD_MAX_MEMORY_SIZE", 20 * 1024 * 1024)
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "EXCEPTION_HANDLER": "reviewapp.core.errors.exception_handler",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}

# Celery. The embedded default broker is a folder on disk, so `make run` needs no server;
# production points CELERY_BROKER_URL at Redis or RabbitMQ.
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", "filesystem://")
_BROKER_DIR = VAR_DIR / "broker"
CELERY_BROKER_TRANSPORT_OPTIONS = (
    {
        "data_folder_in": str(_BROKER_DIR / "queue"),
        "data_folder_out": str(_BROKER_DIR / "queue"),
        "control_folder": str(_BROKER_DIR / "control"),
        "store_processed": False,
    }
    if CELERY_BROKER_URL.startswith("filesystem")
    else {}
)
if CELERY_BROKER_URL.startswith("filesystem"):
    for _folder in ("queue", "control"):
        (_BROKER_DIR / _folder).mkdir(parents=True, exist_ok=True)
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
# A job nobody has picked up after this many seconds is reported as waiting for a worker.
JOB_UNCLAIMED_WARNING_SECONDS = env_int("JOB_UNCLAIMED_WARNING_SECONDS", 20)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "INFO"}},
}

# Model providers: one transport retry loop per model call (timeouts, connection errors, 408, 429, 5xx, 529).
PROVIDER_MAX_ATTEMPTS = env_int("PROVIDER_MAX_ATTEMPTS", 6)
PROVIDER_MAX_SECONDS = float(env_str("PROVIDER_MAX_SECONDS", "1800"))
PROVIDER_BACKOFF_BASE_SECONDS = float(env_str("PROVIDER_BACKOFF_BASE_SECONDS", "2"))
PROVIDER_BACKOFF_MAX_SECONDS = float(env_str("PROVIDER_BACKOFF_MAX_SECONDS", "120"))
# The simulated model server (`manage.py run_simulator`); `setup_roster` points keyless endpoints at it.
SIMULATOR_PORT = env_int("SIMULATOR_PORT", 8765)
# Real provider addresses and model ids of the default roster (docs/protocol.md#default-roster).
OPENAI_BASE_URL = env_str("OPENAI_BASE_URL", "https://api.openai.com/v1")
XAI_BASE_URL = env_str("XAI_BASE_URL", "https://api.x.ai/v1")
ANTHROPIC_BASE_URL = env_str("ANTHROPIC_BASE_URL", "https://api.anthropic.com")
GEMINI_BASE_URL = env_str("GEMINI_BASE_URL", "https://generativelanguage.googleapis.com")
GPT6_ASTRA_MODEL = env_str("GPT6_ASTRA_MODEL", "gpt-6-astra")
GROK_45_MODEL = env_str("GROK_45_MODEL", "grok-4.5")
CLAUDE_OPUS_55_MODEL = env_str("CLAUDE_OPUS_55_MODEL", "claude-opus-5-5")
CLAUDE_SONNET_55_MODEL = env_str("CLAUDE_SONNET_55_MODEL", "claude-sonnet-5-5")
GEMINI_4_ARGON_MODEL = env_str("GEMINI_4_ARGON_MODEL", "gemini-4-argon")

# Open Hypothesis public runs (docs/protocol.md#limits): limits per client address and per day (24 h), and runs waiting
# at once.
OPEN_HYPOTHESIS_CLIENT_LIMIT = env_int("OPEN_HYPOTHESIS_CLIENT_LIMIT", 3)
OPEN_HYPOTHESIS_DAILY_CAP = env_int("OPEN_HYPOTHESIS_DAILY_CAP", 60)
OPEN_HYPOTHESIS_QUEUE_LIMIT = env_int("OPEN_HYPOTHESIS_QUEUE_LIMIT", 20)
# The header the trusted proxy sets to the client's address (e.g. X-Forwarded-For); empty: REMOTE_ADDR.
OPEN_HYPOTHESIS_TRUSTED_PROXY_HEADER = env_str("OPEN_HYPOTHESIS_TRUSTED_PROXY_HEADER", "")
OPEN_HYPOTHESIS_POLL_SECONDS = 15
# A run with no progress for this long is restarted by the sweeper, and stopped after OPEN_HYPOTHESIS_MAX_RESUMES.
# The default outlasts the longest model call (PROVIDER_MAX_SECONDS), after which a run always records progress.
OPEN_HYPOTHESIS_STALE_SECONDS = env_int("OPEN_HYPOTHESIS_STALE_SECONDS", int(PROVIDER_MAX_SECONDS) + 600)
OPEN_HYPOTHESIS_MAX_RESUMES = env_int("OPEN_HYPOTHESIS_MAX_RESUMES", 3)
OPEN_HYPOTHESIS_SWEEP_SECONDS = env_int("OPEN_HYPOTHESIS_SWEEP_SECONDS", 60)
# Optional forecast modes (docs/protocol.md#forecast-modes), stored beside the protocol's boolean: the detailed
# instruction and the single-hypothesis question.
OPEN_HYPOTHESIS_DETAILED_FORECASTS = env_bool("OPEN_HYPOTHESIS_DETAILED_FORECASTS", False)
OPEN_HYPOTHESIS_SINGLE_FORECASTS = env_bool("OPEN_HYPOTHESIS_SINGLE_FORECASTS", False)
CELERY_BEAT_SCHEDULE = {
    "screening-sweep-stalled-runs": {
        "task": "screening.sweep_stalled_runs",
        "schedule": OPEN_HYPOTHESIS_SWEEP_SECONDS,
    },
}

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
