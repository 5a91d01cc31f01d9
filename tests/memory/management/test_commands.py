"""Management commands: import_conversation (LoCoMo replay), memory_stats, reindex, chat."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from memory.adapters import configured
from memory.models import DialoguePage, PageStatus, Tier, UserMemoryState
from persona.models import KnowledgeFact
from tests.conftest import stopped_mid_turn
from tests.data import DEMO

pytestmark = pytest.mark.usefixtures("memory_env")


def run(*args) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


@pytest.mark.slow
def test_replay_of_the_demo_conversation_fills_all_tiers(make_user):
    out = run("import_conversation", str(DEMO), "--user", "maya", "--sample", "0", "--json")
    report = json.loads(out[out.index("{"):])
    stats = report["stats"]
    assert report["import"]["turns"] == 240
    assert stats["stm_pages"] == 7
    assert stats["mtm_pages"] > 0 and stats["mtm_segments"] > 0
    assert stats["kb_facts"] > 0 and stats["user_traits"] > 0
    first = DialoguePage.objects.filter(user__username="maya").order_by("seq").first()
    assert first.source_ids[:2] == ["D1:1", "D1:2"] and first.tier != Tier.STM
    assert first.timestamp.strftime("%Y-%m-%d %H:%M") == "2025-03-03 19:40"
    fact = KnowledgeFact.objects.filter(user__username="maya").first()
    assert fact.source_ids and all(s.startswith("D") for s in fact.source_ids)
    stats_out = json.loads(run("memory_stats", "--user", "maya", "--json"))
    assert stats_out == stats


def test_malformed_import_names_the_place(tmp_path, make_user):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"conversation": {"speaker_a": "A", "speaker_b": "B",
                                                  "session_1_date_time": "1:56 pm on 8 May, 2023",
                                                  "session_1": [{"speaker": "A", "dia_id": "D1:1"}]}}]))
    with pytest.raises(CommandError, match=r"sample 0: conversation.session_1\[0\]: field 'text'"):
        run("import_conversation", str(bad), "--user", "x")
    broken = tmp_path / "broken.json"
    broken.write_text('[{"conversation": ')
    with pytest.raises(CommandError, match="not JSON \\(line 1"):
        run("import_conversation", str(broken), "--user", "x")
    with pytest.raises(CommandError, match="out of range"):
        run("import_conversation", str(DEMO), "--user", "x", "--sample", "7")
    assert DialoguePage.objects.count() == 0


def test_memory_stats_unknown_user():
    with pytest.raises(CommandError, match="Unknown user 'ghost'"):
        run("memory_stats", "--user", "ghost")


def test_reindex_rebuilds_vectors_from_the_database(make_user, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO("I keep bees on my roof.\nThe bees made honey.\n/quit\n"))
    out = run("chat", "--user", "beekeeper")
    assert "offline" in out
    index = configured.vector_index()
    user_id = str(DialoguePage.objects.first().user_id)
    assert index.count(user_id=user_id, kind="page") == 2
    turns = index.count(user_id=user_id, kind="turn")
    assert turns == 2  # the user's words; offline replies are not indexed as said
    index.clear()
    assert index.count(user_id=user_id) == 0
    out = run("reindex")
    assert "page=2" in out and "turn_pages=2" in out
    assert index.count(user_id=user_id, kind="page") == 2
    assert index.count(user_id=user_id, kind="turn") == turns


def test_after_a_crash_the_maintenance_command_completes_the_stopped_turns_and_the_chat_says_so(make_user):
    user, bystander = make_user("crashed"), make_user("bystander")
    page = stopped_mid_turn(user, "Remind me that the boiler service is on Tuesday.", minutes_ago=60)
    stopped_mid_turn(bystander, "A turn still running.", minutes_ago=1)
    assert not UserMemoryState.objects.filter(user=user, maintenance_due=True).exists()  # nothing marked it

    out = run("maintenance")

    assert f"user={user.pk} interrupted=1 " in out and f"user={bystander.pk} " not in out
    page.refresh_from_db()
    assert page.status == PageStatus.COMPLETE and page.interrupted
    client = Client()
    client.force_login(user)
    html = client.get("/").content.decode()
    assert "Remind me that the boiler service is on Tuesday." in html
    assert "The server stopped before answering; this reply was written from memory" in html


def test_a_command_on_a_database_not_yet_migrated_says_what_to_do(tmp_path):
    """Issue 50, finding 8: `manage.py chat` on a fresh database printed a traceback."""
    root = Path(__file__).resolve().parents[3]
    env = {**{k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "QDRANT_URL")},
           "MEMORYOS_VAR_DIR": str(tmp_path), "DJANGO_SETTINGS_MODULE": "memoryos_site.settings"}
    ran = subprocess.run([sys.executable, "manage.py", "chat", "--user", "ana"], cwd=root, env=env, input="hello\n",
                         capture_output=True, text=True, timeout=120)
    assert ran.returncode == 1 and "Traceback" not in ran.stderr
    assert "The database is not set up yet" in ran.stderr and "manage.py migrate" in ran.stderr
