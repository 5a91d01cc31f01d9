"""`manage.py bench feel` runs chat scripts through the real write path and scores them per kind;
a malformed script or a failing turn fails the command."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from memory.benchmarks import feel

# One script of each kind the issue sets a target for, from both halves.
SUBSET = ["move-lyon-porto", "job-change", "visit-rome", "sister-moves", "niece", "fresh-move-cardiff",
          "fresh-new-employer", "fresh-parents-move", "fresh-nephew", "fresh-occupation-change"]


def run_json(*args: str) -> dict:
    out = io.StringIO()
    call_command("bench", "feel", *args, "--json", "--no-progress", "--in-place", stdout=out, stderr=io.StringIO())
    return json.loads(out.getvalue())


@pytest.mark.slow
def test_a_subset_of_both_halves_meets_the_targets(memory_env):
    args = [arg for name in SUBSET for arg in ("--script", name)]
    result = run_json("--half", "first", "--half", "fresh", *args)
    scores = {}
    for half in result["halves"].values():
        for kind, score in half["scores"].items():
            asked, passed = scores.get(kind, (0, 0))
            scores[kind] = (asked + score["asked"], passed + score["passed"])
    assert set(scores) == {"told", "current", "past", "nonchange"}
    for kind, (asked, passed) in scores.items():
        assert passed / asked >= feel.TARGETS[kind], (kind, result["halves"])


def test_a_malformed_script_is_an_error(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"scripts": [{"name": "x", "steps": [{"ask": "Where do I live?", "kind": "nope",
                                                                     "expect_any": ["Porto"]}]}]}))
    with pytest.raises(CommandError, match="kind is one of"):
        feel.load_scripts(bad)


def test_a_reply_is_checked_by_wanted_and_unwanted_words():
    step = {"ask": "Where do I live?", "kind": "current", "expect_any": ["Porto"], "expect_none": ["Lyon"]}
    assert feel.check("You live in porto.", step) == (True, "")
    assert feel.check("You live in Porto, not Lyon.", step)[0] is False
    assert feel.check("I don't recall.", step)[0] is False
    every = {"ask": "Why?", "kind": "why", "expect_all": ["Rex", "{today}"]}
    assert feel.check("You said Rex on 1 May 2026.", every, today="1 May 2026") == (True, "")
    assert feel.check("You said Rex.", every, today="1 May 2026")[0] is False


def test_a_failing_turn_fails_the_command(memory_env, monkeypatch, tmp_path):
    script = tmp_path / "one.json"
    script.write_text(json.dumps({"scripts": [{"name": "boom", "steps": [{"say": "I live in Lyon."}]}]}))

    def broken(**_kwargs):
        raise RuntimeError("the store is gone")

    monkeypatch.setattr("memory.services.turns.turn_run", broken)
    with pytest.raises(CommandError, match="boom step 0: the turn failed"):
        run_json("--file", str(script))
