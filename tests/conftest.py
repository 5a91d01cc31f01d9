"""Shared fixtures: a fresh Qdrant Edge shard per test, maintenance inline, real MiniLM.

`pytest --fakes` (`make test-fast`) runs on tests/fakes.py's embedder and vector index instead (and a
fast password hasher) and leaves out the tests marked `real_adapters`, whose assertions need MiniLM's
or Qdrant's own behaviour."""

from __future__ import annotations

import socket
from datetime import timedelta

import pytest

from tests.openai_server import openai_server  # noqa: F401  (re-exported fixture)

# The Redis server the suite uses when it answers (tests that need one skip otherwise).
REDIS_HOST, REDIS_PORT = "127.0.0.1", 6379
REDIS_URL = f"redis://{REDIS_HOST}:{REDIS_PORT}/0"


def redis_available() -> bool:
    try:
        with socket.create_connection((REDIS_HOST, REDIS_PORT), timeout=0.5):
            return True
    except OSError:
        return False


def stopped_mid_turn(user, query: str, *, minutes_ago: float):
    """A page stored as a turn began whose process then stopped: it awaits a reply for good."""
    from django.utils import timezone

    from memory.models import DialoguePage
    from memory.services.pages import page_start

    page = page_start(user=user, query=query)
    DialoguePage.objects.filter(id=page.id).update(created_at=timezone.now() - timedelta(minutes=minutes_ago))
    return page


FAKE_ADAPTERS = {"embedder": "tests.fakes.FakeEmbedder", "vector_index": "tests.fakes.FakeVectorIndex"}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--fakes", action="store_true",
                     help="run on the fake embedder and vector index (tests/fakes.py); skip real_adapters tests")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.getoption("fakes"):
        return
    real = [item for item in items if item.get_closest_marker("real_adapters")]
    if real:
        config.hook.pytest_deselected(items=real)
        items[:] = [item for item in items if not item.get_closest_marker("real_adapters")]


@pytest.fixture(autouse=True, scope="session")
def _adapters_for_the_tier(request: pytest.FixtureRequest):
    """Under --fakes: the fake adapters, and test users' passwords hashed by MD5 (Django's advice for
    tests: PBKDF2 took 0.7 s a user on this machine). Otherwise nothing changes: the CI gate runs
    the real adapters and the production hasher."""
    if not request.config.getoption("fakes"):
        yield
        return
    from django.test import override_settings

    from memory.adapters import configured

    fast = override_settings(ADAPTER_FACTORIES=FAKE_ADAPTERS,
                             PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"])
    fast.enable()
    configured.reset_adapters()
    yield
    fast.disable()


@pytest.fixture(autouse=True, scope="session")
def _no_server_warm_up():
    """Tests import the ASGI app with settings of their own; a server's warm-up would build the
    adapters first, with others (tests/memory/adapters/test_warm_up.py runs it in a subprocess)."""
    from django.conf import settings

    settings.MEMORYOS_WARMUP = False
    settings.MEMORYOS_DUE_WORK = False  # nor resume due work behind the tests' backs (test_due_work.py)


@pytest.fixture(autouse=True, scope="session")
def _files_in_a_temporary_folder(tmp_path_factory):
    """Files attached to turns are stored under a folder of the test session, not var/files."""
    from django.conf import settings
    from django.core.files.storage import storages

    location = str(tmp_path_factory.mktemp("memory_files"))
    settings.STORAGES = {**settings.STORAGES,
                         "memory_files": {"BACKEND": "django.core.files.storage.FileSystemStorage",
                                          "OPTIONS": {"location": location}}}
    storages._backends = None
    storages._storages = {}
    storages.__dict__.pop("backends", None)  # a cached_property, as Django's setting_changed handler resets it


@pytest.fixture
def memory_env(settings, tmp_path, transactional_db):
    """Real database transactions (on_commit runs), a private vector shard, maintenance inline."""

    settings.QDRANT_URL = ""
    settings.QDRANT_PATH = tmp_path / "qdrant"
    settings.VAR_DIR = tmp_path / "var"  # what the services keep there at run time (history uploads)
    # A configured model reads each turn's facts by default (a second call a turn); the tests' scripted
    # models answer the reply and maintenance alone, and the tests of the model's facts turn it on.
    settings.MEMORYOS = {**settings.MEMORYOS, "MAINTENANCE_MODE": "sync", "TURN_FACTS_MODEL": False}
    settings.LLM_ENABLED = False
    _reset_index_and_model()
    yield settings
    _reset_index_and_model()


@pytest.fixture
def chat_model(memory_env):
    """LLM_ENABLED on, answered by tests/fakes.py's FakeChatModel: queue its replies with
    `chat_model.reply(...)`, read what the services asked in `chat_model.calls`. Tests of the OpenAI
    client itself (timeouts, broken streams, the wire format) use `openai_server` instead."""
    from memory.adapters import configured
    from tests.fakes import FakeChatModel

    model = FakeChatModel()
    memory_env.LLM_ENABLED = True
    memory_env.ADAPTER_FACTORIES = {**(getattr(memory_env, "ADAPTER_FACTORIES", None) or {}),
                                    "chat_model": lambda: model}
    configured.chat_model.cache_clear()
    yield model
    configured.chat_model.cache_clear()


def _reset_index_and_model() -> None:
    """Forget the vector index and chat model; the embedder (slow to load) stays."""
    from memory.adapters import configured

    if configured.vector_index.cache_info().currsize:
        close = getattr(configured.vector_index(), "close", None)
        if close:
            close()
    configured.vector_index.cache_clear()
    configured.chat_model.cache_clear()


@pytest.fixture
def make_user(db):
    from django.contrib.auth import get_user_model

    counter = iter(range(1, 10_000))

    def _make(username: str | None = None, **extra):
        User = get_user_model()
        return User.objects.create_user(username=username or f"user{next(counter)}", password="pw-123456789",
                                        **extra)

    return _make
