"""Settings: boots with nothing configured; environment variables switch to the scale path.

Defaults: SQLite and a Qdrant Edge shard under var/, in-memory channel layer, offline engine,
local MiniLM embeddings. DATABASE_URL, REDIS_URL, QDRANT_URL and OPENAI_* switch parts.
"""

from __future__ import annotations

import os
import tempfile
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def env(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    return default if value is None else value.strip().lower() in {"1", "true", "yes", "on"}


def env_int(name: str, default: int) -> int:
    return int(os.environ.get(name, default))


def env_float(name: str, default: float) -> float:
    return float(os.environ.get(name, default))


DEV_SECRET_KEY = "dev-insecure-memoryos-key-change-me"
# Off unless asked for (MEMORYOS_DEBUG=1, or DEBUG=1): with DEBUG on every error page and API 500
# carries a traceback with settings and local variables.
DEBUG = env_bool("MEMORYOS_DEBUG", env_bool("DEBUG", False))
VAR_DIR = Path(env("MEMORYOS_VAR_DIR", str(BASE_DIR / "var")))
VAR_DIR.mkdir(parents=True, exist_ok=True)


def local_secret_key(path: Path) -> str:
    """This machine's own key, made once and kept under var/ (mode 0600): `make run` works out of
    the box with DEBUG off, and sessions outlive a restart. A deployment sets SECRET_KEY."""
    from django.core.management.utils import get_random_secret_key

    try:
        with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as file:
            file.write(get_random_secret_key())
    except FileExistsError:
        pass
    return path.read_text().strip()


# An empty key (SECRET_KEY= in a shell or an .env file) is no key: Django would start and then
# fail every request that signs anything (sessions, CSRF) with a 500. Unset, DEBUG uses the
# development key and a server without DEBUG the local key of var/secret_key.
SECRET_KEY = env("SECRET_KEY").strip() or (
    DEV_SECRET_KEY if DEBUG or "SECRET_KEY" in os.environ else local_secret_key(VAR_DIR / "secret_key"))
if not DEBUG and SECRET_KEY == DEV_SECRET_KEY:
    raise ImproperlyConfigured("Set SECRET_KEY to a long random value: it is missing or empty, and the development "
                               "key is refused when DEBUG is off.")
ALLOWED_HOSTS = [h for h in env("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1],testserver").split(",") if h]
CSRF_TRUSTED_ORIGINS = [o for o in env("CSRF_TRUSTED_ORIGINS", "").split(",") if o]

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "axes",
    "django_htmx",
    "template_partials",
    "ninja",  # the API docs' Swagger UI from ninja's own static files, not a CDN
    "memory",
    "persona",
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
    "memoryos_site.middleware.ApiBodyLimitMiddleware",
    "memoryos_site.middleware.TextCheckMiddleware",
    "axes.middleware.AxesMiddleware",  # last, as django-axes asks: it turns a lockout into its page
]

ROOT_URLCONF = "memoryos_site.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        # The project's templates, then each memory model's (memory/policies/<model>/templates/)
        "DIRS": [BASE_DIR / "templates", *sorted((BASE_DIR / "memory" / "policies").glob("*/templates"))],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]
WSGI_APPLICATION = None
ASGI_APPLICATION = "memoryos_site.asgi.application"

DATABASES = {
    "default": dj_database_url.parse(
        env("DATABASE_URL", f"sqlite:///{VAR_DIR / 'memoryos.sqlite3'}"), conn_max_age=0
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Several threads (web, maintenance) write: wait for the lock instead of failing at once.
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 30,
        "transaction_mode": "IMMEDIATE",
        # secure_delete: deleted rows' bytes are zeroed, so an erased person's text is not left in
        # the file's free pages (memory/services/deletion.py checkpoints the log after an erase).
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA secure_delete=ON;",
    }
    # Tests use a file too: threads must see one database with real locking. One per test
    # process, so that two test runs on one machine never share it.
    DATABASES["default"]["TEST"] = {
        "NAME": os.path.join(tempfile.gettempdir(), f"memoryos-test-{os.getpid()}.sqlite3")}
elif env("DATABASE_TEST_NAME"):
    # Two test runs against one PostgreSQL server would both use test_<NAME>; name one apart.
    DATABASES["default"]["TEST"] = {"NAME": env("DATABASE_TEST_NAME")}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = env("REDIS_URL")
# Several deployments (or test runs) can share one Redis server under different key prefixes:
# the channel layer's groups and the chat's rate buckets.
REDIS_PREFIX = env("MEMORYOS_CHANNEL_PREFIX")
if REDIS_URL:
    # A socket's receive blocks in BZPOPMIN for channels-redis's 5 s; redis-py 8 also gives up reading
    # after 5 s by default, so the two race and a quiet socket dies with "Timeout reading from ...".
    # The read timeout must stay above the blocking pop's.
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels_redis.core.RedisChannelLayer",
                                  "CONFIG": {"hosts": [{
                                      "address": REDIS_URL,
                                      "socket_timeout": env_float("MEMORYOS_REDIS_SOCKET_TIMEOUT", 30.0),
                                  }]}}}
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "memoryos_site.password_validation.NotBlankValidator"},
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 8}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# Failed sign-ins (django-axes): after MEMORYOS_LOGIN_FAILURES failures for one account, or from
# one address, signing in there is refused for MEMORYOS_LOGIN_COOLOFF_MINUTES, each further try
# starting the wait again. Attempts are kept in the database, so every server process sees them.
# Per address only when the person's address is known (memoryos_site/client_address.py): a request
# from a trusted proxy (MEMORYOS_TRUSTED_PROXIES, addresses or networks) names it in X-Forwarded-For.
MEMORYOS_TRUSTED_PROXIES = [p.strip() for p in env("MEMORYOS_TRUSTED_PROXIES", "127.0.0.1,::1").split(",")
                            if p.strip()]
AXES_CLIENT_IP_CALLABLE = "memoryos_site.client_address.client_address"
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
AXES_FAILURE_LIMIT = env_int("MEMORYOS_LOGIN_FAILURES", 5)
AXES_COOLOFF_TIME = timedelta(minutes=env_float("MEMORYOS_LOGIN_COOLOFF_MINUTES", 15))
AXES_LOCKOUT_PARAMETERS = "memoryos_site.client_address.lockout_parameters"
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_VERBOSE = False
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/accounts/login/"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATICFILES_FINDERS = [
    "django.contrib.staticfiles.finders.FileSystemFinder",
    "django.contrib.staticfiles.finders.AppDirectoriesFinder",
    "memoryos_site.staticfinders.VendorFinder",  # plotly.js from the plotly package
]
STATIC_ROOT = VAR_DIR / "staticfiles"
# Files browsers ask for at the site's root (/favicon.ico), served by whitenoise from here.
WHITENOISE_ROOT = BASE_DIR / "static" / "root"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
    # Files attached to turns, one object per content id (memory/services/files.py): any Django
    # storage backend will do (MEMORYOS_FILES_STORAGE names its class; files under var/files by default).
    "memory_files": {"BACKEND": env("MEMORYOS_FILES_STORAGE", "django.core.files.storage.FileSystemStorage"),
                     "OPTIONS": ({"location": str(VAR_DIR / "files"), "directory_permissions_mode": 0o700,
                                  "file_permissions_mode": 0o600}
                                 if not env("MEMORYOS_FILES_STORAGE") else {})},
}

# --- MemoryOS -------------------------------------------------------------------------------
# Every tier parameter; defaults are the MemoryOS paper's (see memory/engine/types.py).
MEMORYOS = {
    "STM_CAPACITY": env_int("MEMORYOS_STM_CAPACITY", 7),
    "FSCORE_THRESHOLD": env_float("MEMORYOS_FSCORE_THRESHOLD", 0.6),
    "MTM_CAPACITY": env_int("MEMORYOS_MTM_CAPACITY", 200),
    "KB_CAPACITY": env_int("MEMORYOS_KB_CAPACITY", 100),
    # Facts read from each turn as it is stored (memory/services/facts.py), not only on promotion;
    # whether they get vector points of their own; whether a configured LLM reads them (a second call).
    "FACTS_AT_TURN": env_bool("MEMORYOS_FACTS_AT_TURN", True),
    "TURN_FACTS_INDEXED": env_bool("MEMORYOS_TURN_FACTS_INDEXED", False),
    "TURN_FACTS_MODEL": env_bool("MEMORYOS_TURN_FACTS_MODEL", True),
    "FACTS_JUDGED": env_bool("MEMORYOS_FACTS_JUDGED", True),
    "AGENT_TRAIT_CAPACITY": env_int("MEMORYOS_AGENT_TRAIT_CAPACITY", 100),
    "TRAIT_DIMENSIONS": env_int("MEMORYOS_TRAIT_DIMENSIONS", 90),
    "HEAT_THRESHOLD": env_float("MEMORYOS_HEAT_THRESHOLD", 5.0),
    "RECENCY_MU_SECONDS": env_float("MEMORYOS_RECENCY_MU_SECONDS", 1e7),
    "HEAT_ALPHA": env_float("MEMORYOS_HEAT_ALPHA", 1.0),
    "HEAT_BETA": env_float("MEMORYOS_HEAT_BETA", 1.0),
    "HEAT_GAMMA": env_float("MEMORYOS_HEAT_GAMMA", 1.0),
    "TOP_M_SEGMENTS": env_int("MEMORYOS_TOP_M_SEGMENTS", 5),
    "TOP_K_PAGES": env_int("MEMORYOS_TOP_K_PAGES", 10),
    "TOP_KB_FACTS": env_int("MEMORYOS_TOP_KB_FACTS", 10),
    "TOP_AGENT_TRAITS": env_int("MEMORYOS_TOP_AGENT_TRAITS", 10),
    "CHAIN_THRESHOLD": env_float("MEMORYOS_CHAIN_THRESHOLD", 0.3),
    # "hybrid" (default): utterance-level dense + BM25 fusion over MTM, which recalled far more
    # LoCoMo evidence (BENCHMARKS.md); "memoryos": the paper's two-stage segment → page retrieval.
    "RECALL_POLICY": env("MEMORYOS_RECALL_POLICY", "hybrid"),
    # Modules with recall policies of your own (comma-separated), imported beside memory/recall's.
    "RECALL_POLICY_MODULES": tuple(m.strip() for m in env("MEMORYOS_RECALL_POLICY_MODULES").split(",") if m.strip()),
    "TOP_K_TURNS": env_int("MEMORYOS_TOP_K_TURNS", 20),
    # Memoria's policy (memory/policies/memoria/engine/scoring.py for each number's meaning and default): the weights
    # of its five terms, the recency half-life, the EWMA's alpha, the seeds and their expansion.
    "MEMORIA_W_RECENCY": env_float("MEMORYOS_MEMORIA_W_RECENCY", 1.0),
    "MEMORIA_W_VECTOR": env_float("MEMORYOS_MEMORIA_W_VECTOR", 1.0),
    "MEMORIA_W_FTS": env_float("MEMORYOS_MEMORIA_W_FTS", 0.25),
    "MEMORIA_W_IMPORTANCE": env_float("MEMORYOS_MEMORIA_W_IMPORTANCE", 1.0),
    "MEMORIA_W_SONA": env_float("MEMORYOS_MEMORIA_W_SONA", 1.0),
    "MEMORIA_HALF_LIFE_S": env_float("MEMORYOS_MEMORIA_HALF_LIFE_S", 497_817.26),  # 138.3 h: GA's 0.995 an hour
    "MEMORIA_IMPORTANCE_ALPHA": env_float("MEMORYOS_MEMORIA_IMPORTANCE_ALPHA", 0.3),
    "MEMORIA_TOP_K": env_int("MEMORYOS_MEMORIA_TOP_K", 10),
    "MEMORIA_CANDIDATES": env_int("MEMORYOS_MEMORIA_CANDIDATES", 50),
    "MEMORIA_SEED_BUDGET": env_float("MEMORYOS_MEMORIA_SEED_BUDGET", 1.0),
    "MEMORIA_PASS_ON": env_float("MEMORYOS_MEMORIA_PASS_ON", 0.5),
    "MEMORIA_MIN_BUDGET": env_float("MEMORYOS_MEMORIA_MIN_BUDGET", 0.05),
    "MEMORIA_MAX_PULLED": env_int("MEMORYOS_MEMORIA_MAX_PULLED", 30),
    # A memory of another sona rated at least this for a reply it entered was used: it bubbles up.
    "MEMORIA_USED_RATING": env_int("MEMORYOS_MEMORIA_USED_RATING", 6),
    # The Exocortex and Generative Agents policies: nearest pages weighed (recollections: a quarter
    # as many), and the type weight of each memory kind (memory/policies/exocortex/engine/decay.py says why 1.1).
    "EXOCORTEX_CANDIDATES": env_int("MEMORYOS_EXOCORTEX_CANDIDATES", 100),
    "EXOCORTEX_TYPE_WEIGHTS": {"core": env_float("MEMORYOS_EXOCORTEX_WEIGHT_CORE", 1.0),
                               "recollection": env_float("MEMORYOS_EXOCORTEX_WEIGHT_RECOLLECTION", 1.1),
                               "reaction": env_float("MEMORYOS_EXOCORTEX_WEIGHT_REACTION", 1.0)},
    # Recollections, made by maintenance after the reply: for turns the exocortex or generative_agents
    # policy answered ("policy"), after every turn ("always"), or never ("off").
    "EXOCORTEX_RECOLLECTIONS": env("MEMORYOS_EXOCORTEX_RECOLLECTIONS", "policy"),
    # Turn points whose fixed payload (seq, position, speaker) this process keeps in memory (about
    # 0.2 kB each, 80 MB full), so a hybrid recall reads only ids and scores from the index. A user
    # with 100,000 pages has 200,000 turns or more: with fewer entries than the turns recalls draw
    # on, they push each other out and every recall reads payloads again (15-30 µs a turn).
    "TURN_FACTS_CACHE": env_int("MEMORYOS_TURN_FACTS_CACHE", 400_000),
    "PROMPT_TOKEN_BUDGET": env_int("MEMORYOS_PROMPT_TOKEN_BUDGET", 3000),
    "MAX_MESSAGE_CHARS": env_int("MEMORYOS_MAX_MESSAGE_CHARS", 4000),
    # Files attached to a turn (text, PDF, images): the size of one, how many a turn carries, how
    # much of a file's text is kept, and how much of it is indexed with the page and shown to the
    # model in the turn that carries it.
    "MAX_FILE_BYTES": env_int("MEMORYOS_MAX_FILE_BYTES", 10 * 1024 * 1024),
    "MAX_FILES_PER_TURN": env_int("MEMORYOS_MAX_FILES_PER_TURN", 5),
    "FILE_TEXT_MAX_CHARS": env_int("MEMORYOS_FILE_TEXT_MAX_CHARS", 200_000),
    "ATTACHMENT_INDEX_CHARS": env_int("MEMORYOS_ATTACHMENT_INDEX_CHARS", 2000),
    "ATTACHMENT_PROMPT_CHARS": env_int("MEMORYOS_ATTACHMENT_PROMPT_CHARS", 8000),
    # A PDF is read in a worker process (memory/adapters/file_reader.py) with this wall clock and
    # address space; one still being read at the deadline is kept with the text of the pages read
    # so far ("keep") or refused ("refuse"). An image's header may declare at most MAX_IMAGE_PIXELS
    # (Pillow's default).
    "FILE_READ_SECONDS": env_float("MEMORYOS_FILE_READ_SECONDS", 10.0),
    "FILE_READ_MEMORY_BYTES": env_int("MEMORYOS_FILE_READ_MEMORY_BYTES", 512 * 1024 * 1024),
    "FILE_READ_OVER_TIME": env("MEMORYOS_FILE_READ_OVER_TIME", "keep"),
    # At most this many PDF readers at once in a server process; an upload past them waits this
    # long for a place, then gets 503 with Retry-After.
    "FILE_READERS": env_int("MEMORYOS_FILE_READERS", 2),
    "FILE_READERS_WAIT_S": env_float("MEMORYOS_FILE_READERS_WAIT_S", 2.0),
    "MAX_IMAGE_PIXELS": env_int("MEMORYOS_MAX_IMAGE_PIXELS", 89_478_485),
    # The work after a reply yields to replies (memory/runtime/after_reply.py). "thread": a
    # low-priority lane in this process, run while no reply is under way (the default on one
    # machine); "celery": a task for worker processes apart from the web servers (the default when
    # Redis and a Qdrant server are configured: a worker cannot open the server's embedded shard);
    # "sync": inline (tests, imports); "off": only `manage.py maintenance` runs it.
    "MAINTENANCE_MODE": env("MEMORYOS_MAINTENANCE_MODE", "celery" if REDIS_URL and env("QDRANT_URL") else "thread"),
    # The lane runs a job anyway once it has waited this long for the replies to stop.
    "MAINTENANCE_MAX_DEFER_S": env_float("MEMORYOS_MAINTENANCE_MAX_DEFER_S", 30.0),
    # ...and starts one only after no reply has been under way, nor begun, for this long.
    "MAINTENANCE_QUIET_S": env_float("MEMORYOS_MAINTENANCE_QUIET_S", 0.25),
    # A failed run is tried again after this, then twice as long (3 tries; due work keeps trying).
    "MAINTENANCE_RETRY_S": env_float("MEMORYOS_MAINTENANCE_RETRY_S", 2.0),
    # A page still awaiting its reply this long after it was stored belongs to a turn whose process
    # stopped (a live turn ends within the LLM's timeout and retries); maintenance completes it
    # without a reply so that the user's words still enter memory.
    "PENDING_TIMEOUT_S": env_float("MEMORYOS_PENDING_TIMEOUT_S", 900.0),
    # ...unless the server process that holds it beats (memory/services/turn_holders.py): a page
    # whose process has not been seen alive for this long is completed at once.
    "PROCESS_DEAD_S": env_float("MEMORYOS_PROCESS_DEAD_S", 20.0),
}
# A server (memoryos_site/asgi.py) loads the embedder and the vector index as it starts, not on
# the first turn.
MEMORYOS_WARMUP = env_bool("MEMORYOS_WARMUP", True)
# A server runs the due work (`manage.py maintenance`: turns a crash stopped, maintenance that failed)
# as it starts and then every so often, in the background, unless MAINTENANCE_MODE is "off".
MEMORYOS_DUE_WORK = env_bool("MEMORYOS_DUE_WORK", True)
MEMORYOS_DUE_WORK_INTERVAL_S = env_float("MEMORYOS_DUE_WORK_INTERVAL_S", 60.0)
# ...and beats this often (its process is alive), resuming at each beat the turns of processes that stopped.
MEMORYOS_DUE_WORK_HEARTBEAT_S = env_float("MEMORYOS_DUE_WORK_HEARTBEAT_S", 5.0)
QDRANT_URL = env("QDRANT_URL")
QDRANT_API_KEY = env("QDRANT_API_KEY") or None
QDRANT_COLLECTION = env("QDRANT_COLLECTION", "memoryos")
QDRANT_PATH = Path(env("QDRANT_PATH", str(VAR_DIR / "qdrant")))

EMBEDDING_BACKEND = env("EMBEDDING_BACKEND", "minilm")  # minilm | openai
EMBEDDING_MODEL = env("EMBEDDING_MODEL", "text-embedding-3-small")
OPENAI_API_KEY = env("OPENAI_API_KEY")
OPENAI_BASE_URL = env("OPENAI_BASE_URL") or None
OPENAI_CHAT_MODEL = env("OPENAI_CHAT_MODEL", "gpt-4o-mini")
OPENAI_MEMORY_MODEL = env("OPENAI_MEMORY_MODEL", OPENAI_CHAT_MODEL)
OPENAI_TIMEOUT = env_float("OPENAI_TIMEOUT", 30.0)
OPENAI_MAX_RETRIES = env_int("OPENAI_MAX_RETRIES", 1)
# A reply streams until its first token or falls back to the offline engine after this long; after
# this many failures in a row the model is not called for the cool-off (replies come from the
# offline engine); a reply stops after this many tokens.
OPENAI_FIRST_TOKEN_TIMEOUT = env_float("OPENAI_FIRST_TOKEN_TIMEOUT", 10.0)
LLM_BREAKER_FAILURES = env_int("MEMORYOS_LLM_BREAKER_FAILURES", 3)
LLM_BREAKER_COOL_OFF_S = env_float("MEMORYOS_LLM_BREAKER_COOL_OFF_S", 60.0)
REPLY_MAX_TOKENS = env_int("MEMORYOS_REPLY_MAX_TOKENS", 1024)
# ...and after this many characters, whatever the size of the model's tokens (a websocket frame
# carries at most 1 MiB; 4,000-character tokens made a 4 MB reply); a reply still streaming this
# many seconds after it was asked for is cut: that counts as the model's failure for the breaker,
# and the offline engine replies.
REPLY_MAX_CHARS = env_int("MEMORYOS_REPLY_MAX_CHARS", 16_000)
REPLY_MAX_SECONDS = env_float("MEMORYOS_REPLY_MAX_SECONDS", 60.0)
# The LLM is used only when an endpoint is configured; otherwise the offline engine answers.
LLM_ENABLED = bool(OPENAI_API_KEY or OPENAI_BASE_URL)

# The browser chat's websocket: frame size, a token bucket per user (burst, then a steady rate),
# threads that run turns, and how many past turns the chat page shows.
MEMORYOS_CHAT = {
    "MAX_FRAME_BYTES": env_int("MEMORYOS_CHAT_MAX_FRAME_BYTES", 16_384),
    "RATE_BURST": env_int("MEMORYOS_CHAT_RATE_BURST", 5),
    "RATE_PER_MINUTE": env_float("MEMORYOS_CHAT_RATE_PER_MINUTE", 20.0),
    "TURN_WORKERS": env_int("MEMORYOS_CHAT_TURN_WORKERS", 4),
    # How long a reply's store may wait behind messages that came after it (memory/runtime/chat.py).
    "STORE_DEFER_S": env_float("MEMORYOS_CHAT_STORE_DEFER_S", 2.0),
    # Threads that stream replies: they mostly wait on the model, apart from the turn workers. A
    # turn that finds every one busy (slow models) gets the offline engine's reply at once.
    "REPLY_WORKERS": env_int("MEMORYOS_CHAT_REPLY_WORKERS", 32),
    "HISTORY_LIMIT": env_int("MEMORYOS_CHAT_HISTORY_LIMIT", 200),
    # With Redis every server process draws a user's frames from one bucket kept there (a
    # process falls back to its own bucket while Redis fails); without it, a bucket per process.
    "RATE_REDIS_URL": REDIS_URL,
    "RATE_KEY_PREFIX": REDIS_PREFIX or "memoryos",
}
if REDIS_URL and REDIS_PREFIX:
    CHANNEL_LAYERS["default"]["CONFIG"]["prefix"] = REDIS_PREFIX

# The REST API: request bodies over this size are refused (413); rate limits per token (per user for
# a browser session) and per address for calls without credentials, in ninja's "N/period" form.
MEMORYOS_API = {
    "MAX_BODY_BYTES": env_int("MEMORYOS_API_MAX_BODY_BYTES", 65_536),
    "RATE": env("MEMORYOS_API_RATE", "120/m"),
    "ANON_RATE": env("MEMORYOS_API_ANON_RATE", "30/m"),
}
# The OpenAI-compatible endpoint (/v1, memory/web/openai_api.py): a client sends its whole conversation
# with each request, so bodies may be larger than the REST API's. Its earlier messages go into the
# model's prompt (at most CONTEXT_SHARE of the room memory leaves) and are stored only when
# STORE_CONTEXT is on: as pages, each user message with the assistant's answer, once.
MEMORYOS_OPENAI = {
    "MAX_BODY_BYTES": env_int("MEMORYOS_OPENAI_MAX_BODY_BYTES", 1_048_576),
    "STORE_CONTEXT": env_bool("MEMORYOS_OPENAI_STORE_CONTEXT", False),
    "CONTEXT_SHARE": env_float("MEMORYOS_OPENAI_CONTEXT_SHARE", 0.5),
    "MAX_MESSAGES": env_int("MEMORYOS_OPENAI_MAX_MESSAGES", 500),
}
# A chat history uploaded on /settings/import/ (memory/web/history_import.py) or given to
# `manage.py import_history`: the upload's size (a zip as sent), then, as the file is read as a
# stream, its bytes once unpacked and the messages kept (memory/formats/histories.py Limits).
MEMORYOS_HISTORY_IMPORT_MAX_BYTES = env_int("MEMORYOS_HISTORY_IMPORT_MAX_BYTES", 100 * 1024 * 1024)
MEMORYOS_HISTORY_IMPORT_MAX_UNPACKED_BYTES = env_int("MEMORYOS_HISTORY_IMPORT_MAX_UNPACKED_BYTES", 64 * 1024 * 1024)
MEMORYOS_HISTORY_IMPORT_MAX_MESSAGES = env_int("MEMORYOS_HISTORY_IMPORT_MAX_MESSAGES", 20_000)
MEMORYOS_HISTORY_IMPORT_READERS = env_int("MEMORYOS_HISTORY_IMPORT_READERS", 2)  # uploads read at once, per process
# Django's cache holds the API's rate limits: Redis when configured, shared by every process.
if REDIS_URL:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL,
                          "KEY_PREFIX": REDIS_PREFIX or "memoryos"}}

# Celery (memoryos_site/celery.py): the work after replies when MAINTENANCE_MODE is "celery", on the
# Redis the chat already uses. A task is acknowledged once it ran, so one whose worker died is
# delivered again after the visibility timeout; the user's due flag keeps the work meanwhile.
CELERY_BROKER_URL = env("CELERY_BROKER_URL", REDIS_URL or "redis://127.0.0.1:6379/0")
CELERY_TASK_DEFAULT_QUEUE = env("MEMORYOS_CELERY_QUEUE", "memoryos-after-reply")
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_TASK_IGNORE_RESULT = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1  # a worker holds one job: the others stay free for its peers
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_WORKER_HIJACK_ROOT_LOGGER = False  # a worker logs like the web servers (LOGGING below)
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": env_float("MEMORYOS_CELERY_VISIBILITY_TIMEOUT_S", 3600.0),
    "global_keyprefix": REDIS_PREFIX or "",
}
if MEMORYOS["MAINTENANCE_MODE"] == "celery" and not QDRANT_URL:
    raise ImproperlyConfigured("MEMORYOS_MAINTENANCE_MODE=celery needs QDRANT_URL: a worker process cannot open "
                               "the web server's embedded vector shard.")
if MEMORYOS["MAINTENANCE_MODE"] not in ("thread", "celery", "sync", "off"):
    raise ImproperlyConfigured("MEMORYOS_MAINTENANCE_MODE is one of thread, celery, sync or off.")

LOG_LEVEL = env("LOG_LEVEL", "INFO")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "structured": {
            "format": "ts=%(asctime)s level=%(levelname)s logger=%(name)s %(message)s",
        },
    },
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "structured"}},
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        "django.db.backends": {"level": "WARNING"},
        "httpx": {"level": "WARNING"},
        "axes": {"level": "WARNING"},  # every failed sign-in is in its table already
        "sentence_transformers": {"level": "WARNING"},
    },
}
