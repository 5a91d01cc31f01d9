"""What the fact readers cost a text: `supersession.claims_of` (the clause readers that
`facts_from_turns` and the supersession detector run on every new page), its cache cleared, on

- the bench's page texts (`bench scale`'s generator, 600 texts), and LoCoMo's turns when a file is
  given;
- one clause without punctuation of 500, 2,000 and 4,000 characters (a dictated message, a paste),
  where a reader that searched from every start position took time quadratic in the clause.

Run from a checkout's root, it times that checkout's readers; BENCHMARKS.md ("Issue 37: the fact
readers, and why the two ratio targets stop here") ran it in a worktree of the commit before, then
in this one:

    .venv/bin/python scripts/claims_cost.py ../shared/data/locomo_dev2.json
"""

from __future__ import annotations

import os
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, os.getcwd())
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryos_site.settings")

import django  # noqa: E402

django.setup()

from memory.benchmarks import scale  # noqa: E402
from memory.engine import supersession  # noqa: E402
from memory.formats.locomo import load_conversations  # noqa: E402

RUNS = 3
RAMBLE = ("so we talked about the garden and the trip and my sister and the new place near the river and the "
          "dog and work and everything that happened this week with the kids and the school").split()


def per_text_us(texts: list[str]) -> float:
    """The best of RUNS passes over texts, µs a text, the readers' cache cleared before each."""
    passes = []
    for _ in range(RUNS):
        supersession._claims.cache_clear()
        started = time.perf_counter()
        for text in texts:
            supersession.claims_of(text)
        passes.append((time.perf_counter() - started) * 1e6 / len(texts))
    return min(passes)


def locomo_turns(path: str) -> list[str]:
    """Every turn's text as an import reads it (memory/formats/locomo.py: an image's caption joined)."""
    return [turn.text for conversation in load_conversations(Path(path))
            for _, _, turns in conversation.sessions for turn in turns]


def ramble(chars: int, rng: random.Random) -> str:
    words: list[str] = []
    while len(" ".join(words)) < chars:
        words.append(rng.choice(RAMBLE))
    return " ".join(words)[:chars]


def main(locomo: str | None) -> None:
    generator = scale.TextGenerator(3)
    bench = [text for n in range(300) for text in generator.page(scale.TOPIC_NAMES[n % len(scale.TOPIC_NAMES)])]
    sets = {"bench page texts": bench}
    if locomo:
        sets["LoCoMo turns"] = locomo_turns(locomo)
    for name, texts in sets.items():
        mean_chars = statistics.fmean(len(text) for text in texts)
        print(f"{name}: {len(texts)} texts, {mean_chars:.0f} characters on average: "
              f"{per_text_us(texts):,.0f} µs a text")
    rng = random.Random(2)
    for chars in (500, 2000, 4000):
        clause = ramble(chars, rng)
        print(f"one clause without punctuation, {chars:,} characters: {per_text_us([clause]) / 1000:,.1f} ms")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
