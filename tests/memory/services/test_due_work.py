"""Due work resumes by itself: a server completes the turns a crash stopped and retries failed
maintenance as it starts and then every so often; `manage.py maintenance` stays for operators."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memory.models import DialoguePage, PageStatus, UserMemoryState
from memory.services.due_work import due_work_run, due_work_start_in_background, due_work_stop
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
    from memory.services import due_work

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
