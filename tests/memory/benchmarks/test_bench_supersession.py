"""`manage.py bench supersession` scores the detector on the shipped scenarios, and counts by hand."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from memory.benchmarks.supersession import score


def test_bench_supersession_meets_the_issues_targets_on_every_set():
    out = io.StringIO()
    call_command("bench", "supersession", "--json", stdout=out, stderr=io.StringIO())
    sets = json.loads(out.getvalue())["sets"]
    assert set(sets) == {"tune", "held_out", "fresh", "all"}
    assert sets["all"]["scenarios"] >= 60 and sets["all"]["scenarios"] - sets["all"]["contradictions"] >= 20
    for result in sets.values():
        assert result["precision"] >= 0.9 and result["recall"] >= 0.75


def test_score_counts_a_wrong_target_as_both_errors():
    scenarios = [
        {"id": "a", "current": ["User lives in Leeds"], "statement": "We moved to York.", "expect": 0},
        {"id": "b", "current": ["User loves tea", "User lives in Leeds"], "statement": "We moved to York.",
         "expect": 0},  # the detector names memory 1: a false positive and a false negative
        {"id": "c", "current": ["User lives in Leeds"], "statement": "I visited York.", "expect": None},
    ]
    result = score(scenarios)
    assert (result["tp"], result["fp"], result["fn"], result["tn"]) == (1, 1, 1, 1)
    assert (result["precision"], result["recall"]) == (0.5, 0.5)
    assert [e["id"] for e in result["errors"]] == ["b"]


def test_a_scenario_file_without_its_fields_is_refused(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps([{"id": "x", "statement": "hi"}]))
    with pytest.raises(CommandError, match="lacks"):
        call_command("bench", "supersession", "--data", str(path), stdout=io.StringIO())


def test_bench_supersession_reads_a_conversation_file():
    from pathlib import Path

    demo = Path(__file__).resolve().parents[3] / "memory" / "formats" / "demo" / "demo_conversation.json"
    out = io.StringIO()
    call_command("bench", "supersession", "--conversations", str(demo), "--json", stdout=out, stderr=io.StringIO())
    result = json.loads(out.getvalue())
    assert set(result) == {"conversations", "sample", "date"}
    decided = sum(c["supersede"] + c["review"] for c in result["conversations"].values())
    assert len(result["sample"]) == min(20, decided)
