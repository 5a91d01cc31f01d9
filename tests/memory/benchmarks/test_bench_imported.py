"""`manage.py bench imported`: a LoCoMo conversation written as ChatGPT's export, read back turn for
turn, imported beside the file and recalled on both sides; a lost turn stops the run."""

from __future__ import annotations

import io
import json
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command

from memory.benchmarks.imported import RENAMED, dia_id_of, in_export_names, locomo_chatgpt_export
from memory.formats.histories import export_conversation, read_export
from memory.formats.locomo import parse_sample
from tests.memory.benchmarks.test_bench import TINY_LOCOMO


def run_json(*args) -> dict:
    out = io.StringIO()
    call_command("bench", "imported", *args, "--json", "--no-progress", stdout=out, stderr=io.StringIO())
    return json.loads(out.getvalue())


def test_the_export_holds_every_turn_as_a_message_of_its_speaker_at_its_time():
    conversation = parse_sample(TINY_LOCOMO[0], 0)
    kind, histories = read_export(locomo_chatgpt_export(conversation))
    assert kind == "chatgpt" and [h.title for h in histories] == ["tiny-1 session 1", "tiny-1 session 2"]
    for (_, date, turns), history in zip(conversation.sessions, histories, strict=True):
        assert [(m.id, m.role, m.text, m.time) for m in history.messages] == [
            (turn.dia_id, "user" if turn.speaker == "Ana" else "assistant", turn.text, date + timedelta(seconds=n))
            for n, turn in enumerate(turns)]
    read = export_conversation(kind, histories, person="Ana", max_chars=4000, name="conversations.json")
    valid = {turn.dia_id for _, _, turns in conversation.sessions for turn in turns}
    assert [dia_id_of(turn.dia_id, valid) for _, _, turns in read.sessions for turn in turns] == [
        "D1:1", "D1:2", "D1:3", "D1:4", "D2:1", "D2:2"]
    assert dia_id_of("chatgpt:tiny-1-s1:D1:2#2", valid) == "D1:2"
    with pytest.raises(CommandError, match="names no turn"):
        dia_id_of("chatgpt:tiny-1-s1:D9:9", valid)


def test_speaker_b_is_asked_about_by_the_name_the_export_gives_the_assistant():
    conversation = parse_sample(TINY_LOCOMO[0], 0)
    assert in_export_names("What is Ben's dog called, Ben?", conversation) == "What is ChatGPT's dog called, ChatGPT?"
    assert in_export_names("Did Benjamin meet Ana?", conversation) == "Did Benjamin meet Ana?"


@pytest.mark.slow
def test_both_imports_are_recalled_question_by_question(memory_env, tmp_path):
    data = tmp_path / "tiny.json"
    data.write_text(json.dumps(TINY_LOCOMO))
    export = tmp_path / "conversations.json"
    result = run_json("--data", str(data), "--sample", "0", "--policy", "hybrid", "--write-export", str(export))
    assert result["questions"] == 4 and result["pages"] == {"locomo": 3, "chatgpt": 3}
    assert set(result["recall"]) == {"hybrid locomo", "hybrid chatgpt", f"hybrid {RENAMED}"}
    # six turns: every ranked context holds the whole evidence within 20 turns
    assert all(figures["all/R@20"] == 1.0 for figures in result["recall"].values())
    assert all({"hybrid locomo", "hybrid chatgpt", f"hybrid {RENAMED}"} <= set(row) for row in result["per_question"])
    # no question of the tiny file names Ben: every one is counted among the others
    assert all("names speaker_b/R@10" not in figures and figures["others/R@10"] == figures["all/R@10"]
               for figures in result["recall"].values())
    assert read_export(export.read_bytes())[0] == "chatgpt"


@pytest.mark.slow
def test_a_turn_the_import_lost_stops_the_run(memory_env, tmp_path, monkeypatch):
    from memory.benchmarks import imported

    data = tmp_path / "tiny.json"
    data.write_text(json.dumps(TINY_LOCOMO))
    export, said = imported.locomo_chatgpt_export, b"On weekends I love hiking and painting."
    monkeypatch.setattr(imported, "locomo_chatgpt_export", lambda conversation: export(conversation).replace(said, b""))
    monkeypatch.setattr(imported, "SIDES", ("chatgpt",))
    with pytest.raises(CommandError, match="the ChatGPT import lost 1 turn"):
        run_json("--data", str(data), "--sample", "0", "--policy", "hybrid")
