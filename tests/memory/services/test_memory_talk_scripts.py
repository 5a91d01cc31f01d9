"""The chat scripts of memory/benchmarks/data/feel_talk.json (forget, correct, why, what do you
know) run through turn_run with the offline engine, real MiniLM and Qdrant Edge: every checked
turn's reply holds what it must and nothing it must not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.utils import timezone

from memory.engine.memory_talk import day
from memory.services.turns import turn_run

SCRIPTS = json.loads((Path(__file__).resolve().parents[3] / "memory/benchmarks/data/feel_talk.json").read_text())

pytestmark = [pytest.mark.usefixtures("memory_env"), pytest.mark.slow]


def _expected(value: str) -> str:
    return value.replace("{today}", day(timezone.now())).lower()


def failures(user, script: dict) -> list[str]:
    """What went wrong in one script (nothing when every checked turn passed)."""
    wrong = []
    for step in script["steps"]:
        reply = turn_run(user=user, message=step.get("say") or step["ask"]).reply
        if "ask" not in step:
            continue
        text = reply.lower()
        any_of = [_expected(s) for s in step.get("expect_any", [])]
        if any_of and not any(s in text for s in any_of):
            wrong.append(f"{step['ask']!r}: none of {any_of} in {reply!r}")
        wrong += [f"{step['ask']!r}: {s!r} missing from {reply!r}" for s in map(_expected, step.get("expect_all", []))
                  if s not in text]
        wrong += [f"{step['ask']!r}: {s!r} in {reply!r}" for s in map(_expected, step.get("expect_none", []))
                  if s in text]
    return wrong


def test_there_are_enough_scripts_of_each_kind_and_half():
    scripts = SCRIPTS["scripts"]
    kinds = {step["kind"] for s in scripts for step in s["steps"] if "ask" in step}
    assert len(scripts) >= 12 and {"forget", "correct", "why", "told"} <= kinds
    assert sum(s["half"] == "fresh" for s in scripts) >= len(scripts) // 2


@pytest.mark.parametrize("script", SCRIPTS["scripts"], ids=lambda s: s["name"])
def test_script(make_user, script):
    assert failures(make_user(), script) == []
