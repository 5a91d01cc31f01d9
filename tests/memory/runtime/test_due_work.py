"""Due work resumes by itself: a server completes the turns a crash stopped and retries failed
maintenance as it starts and then every so often; `manage.py maintenance` stays for operators."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from memory.models import DialoguePage, PageStatus, UserMemoryState
from memory.runtime.due_work import due_work_run, due_work_start_in_background, due_work_stop
from tests.conftest import stopped_mid_turn
from tests.waiting import eventually

ROOT = Path(__file__).resolve().parents[3]

CRASH = """
import django; django.setup()
from datetime import timedelta
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.utils import timezone
from memory.models import DialoguePage
from memory.services.pages import page_start
call_command("migrate", verbosity=0)
user = get_user_model().objects.create_user("crashed", password="pw-123456789")
page = page_start(user=user, query="Remind me that the boiler service is on Tuesday.")
DialoguePage.objects.filter(id=page.id).update(created_at=timezone.now() - timedelta(minutes=30))
import os; os._exit(9)  # the process dies mid-turn: nothing completes the page
"""

RESTART = """
import threading, time
import memoryos_site.asgi  # what starting a server does
from memory.models import DialoguePage
deadline = time.monotonic() + 60
while DialoguePage.objects.filter(status="pending").exists() and time.monotonic() < deadline:
    time.sleep(0.1)
page = DialoguePage.objects.get()
print(page.status, page.interrupted, any(t.name == "memory-due-work" for t in threading.enumerate()))
"""


def _python(code: str, tmp_path, server, *, check: bool = True, **env: str) -> str:
    environ = {k: v for k, v in os.environ.items()
               if k not in ("QDRANT_URL", "QDRANT_PATH", "MEMORYOS_VAR_DIR", "DATABASE_URL")}
    # Embeddings from the test's OpenAI-compatible server: quicker to start than MiniLM.
    environ.update(DJANGO_SETTINGS_MODULE="memoryos_site.settings", MEMORYOS_VAR_DIR=str(tmp_path),
                   HF_HUB_OFFLINE="1", MEMORYOS_WARMUP="0", EMBEDDING_BACKEND="openai",
                   EMBEDDING_MODEL="test-embed", OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=server.api_key,
                   **env)
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=environ, capture_output=True, text=True,
                          timeout=300, check=False)
    if check:
        assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""


@pytest.mark.real_adapters  # a child process builds the real adapters: --fakes cannot reach it
def test_a_restarted_server_completes_the_turns_a_crash_stopped(tmp_path, openai_server):
    _python(CRASH, tmp_path, openai_server, check=False)

    assert _python(RESTART, tmp_path, openai_server) == "complete True True"


@pytest.mark.real_adapters  # a child process builds the real adapters: --fakes cannot reach it
def test_a_server_told_not_to_leaves_due_work_to_the_command(tmp_path, openai_server):
    _python(CRASH, tmp_path, openai_server, check=False)

    assert _python(RESTART.replace("+ 60", "+ 1"), tmp_path, openai_server,
                   MEMORYOS_DUE_WORK="0") == "pending False False"


@pytest.fixture
def due_work_thread():
    yield due_work_start_in_background
    due_work_stop(timeout=30)


def test_the_background_run_keeps_resuming_turns_that_stop_later(memory_env, make_user, due_work_thread):
    user = make_user("later")
    page = stopped_mid_turn(user, "I moved to Porto last spring.", minutes_ago=5)  # not stopped for long yet
    thread = due_work_thread(interval_s=0.1)
    assert due_work_thread(interval_s=0.1) is thread  # started once per process

    time.sleep(0.3)
    assert DialoguePage.objects.get(id=page.id).status == PageStatus.PENDING  # it may still be running
    memory_env.MEMORYOS = {**memory_env.MEMORYOS, "PENDING_TIMEOUT_S": 60.0}

    assert eventually(lambda: DialoguePage.objects.get(id=page.id).status == PageStatus.COMPLETE)
    assert DialoguePage.objects.get(id=page.id).interrupted


def test_due_work_retries_failed_maintenance_and_one_failure_does_not_stop_the_rest(memory_env, make_user,
                                                                                   monkeypatch):
    from memory.runtime import due_work

    broken, due = make_user("broken"), make_user("due")
    for user in (broken, due):
        UserMemoryState.objects.update_or_create(user=user, defaults={"maintenance_due": True})
    real_run = due_work.maintenance_run

    def run(*, user_id):
        if user_id == broken.pk:
            raise RuntimeError("the vector store is down")
        return real_run(user_id=user_id)

    monkeypatch.setattr(due_work, "maintenance_run", run)

    assert due_work_run() == 1
    assert not UserMemoryState.objects.get(user=due).maintenance_due
    assert UserMemoryState.objects.get(user=broken).maintenance_due


# -- turns held by a process that stopped (issue 35, finding 6) -------------------------------------

CRASH_HELD = """
import time
import django; django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
import memoryos_site.asgi  # a server: its due-work thread beats, and the turns it stores are its own
from django.contrib.auth import get_user_model
from memory.services.pages import page_start
from memory.services.turn_holders import turn_holder
while turn_holder() is None:
    time.sleep(0.05)
user = get_user_model().objects.create_user("crashed", password="pw-123456789")
page = page_start(user=user, query="Remind me that the boiler service is on Tuesday.")
assert page.held_by is not None
print(time.time(), flush=True)
import os; os._exit(9)  # killed mid-reply: nothing completes the page
"""

RESTART_TIMED = """
import time
import memoryos_site.asgi
from memory.models import DialoguePage
deadline = time.monotonic() + 120
while DialoguePage.objects.filter(status="pending").exists() and time.monotonic() < deadline:
    time.sleep(0.1)
page = DialoguePage.objects.get()
print(page.status, page.interrupted, time.time())
"""


@pytest.mark.real_adapters  # a child process builds the real adapters: --fakes cannot reach it
def test_a_turn_whose_server_was_killed_resumes_within_a_minute_not_the_pending_timeout(tmp_path, openai_server):
    """It took 15 min 10 s to 15 min 45 s (the pending timeout): now the process that held it is seen
    to have stopped, with the default settings, well within a minute."""
    crashed_at = float(_python(CRASH_HELD, tmp_path, openai_server, check=False))

    status, interrupted, done_at = _python(RESTART_TIMED, tmp_path, openai_server).split()

    assert (status, interrupted) == ("complete", "True")
    assert float(done_at) - crashed_at < 60


def test_a_page_held_by_a_beating_process_is_left_to_it_and_one_that_stopped_is_resumed(memory_env, make_user):
    from datetime import timedelta

    from django.utils import timezone

    from memory.models import ServerProcess
    from memory.selectors.maintenance import stopped_turn_pages
    from memory.services.pages import page_start

    user = make_user("held")
    alive = ServerProcess.objects.create(id=uuid.uuid4(), seen_at=timezone.now())
    gone = ServerProcess.objects.create(id=uuid.uuid4(), seen_at=timezone.now() - timedelta(seconds=25))
    pages = {name: page_start(user=user, query=f"A message of the {name} process.")
             for name in ("alive", "gone", "forgotten", "unheld")}
    for name, holder in (("alive", alive.id), ("gone", gone.id), ("forgotten", uuid.uuid4()), ("unheld", None)):
        DialoguePage.objects.filter(id=pages[name].id).update(held_by=holder)

    stopped = set(stopped_turn_pages().values_list("id", flat=True))

    assert stopped == {pages["gone"].id, pages["forgotten"].id}  # the unheld one waits for the pending timeout
    assert due_work_run() == 1
    assert DialoguePage.objects.get(id=pages["gone"].id).interrupted
    assert DialoguePage.objects.get(id=pages["alive"].id).status == PageStatus.PENDING


def test_a_stopped_turn_is_completed_once_even_when_two_processes_found_it(memory_env, make_user, monkeypatch):
    """Two servers' due work may list the same page; the second finds it complete and leaves it."""
    from memory.services import maintenance
    from memory.services.maintenance import pages_interrupted_complete

    user = make_user("twice")
    page = stopped_mid_turn(user, "I moved to Porto last spring.", minutes_ago=30)
    listed = list(maintenance.stopped_turn_pages_of(user.pk))
    assert pages_interrupted_complete(user_id=user.pk) == 1
    stored = DialoguePage.objects.get(id=page.id)
    monkeypatch.setattr(maintenance, "stopped_turn_pages_of", lambda user_id: FakeListing(listed))

    assert pages_interrupted_complete(user_id=user.pk) == 0

    again = DialoguePage.objects.get(id=page.id)
    assert (again.status, again.cid, again.reply_model) == (stored.status, stored.cid, stored.reply_model)


class FakeListing:
    """What another process's stale query returned: the page as it was before it was completed."""

    def __init__(self, pages) -> None:
        self.pages = pages

    def select_related(self, *args):
        return self

    def filter(self, **kwargs):
        return self

    def order_by(self, *args):
        return self.pages
