"""The conversations the tests read, all inside the repository: a clone anywhere passes `make test`.

They are in the public LoCoMo format (memory/formats/locomo.py) and written for this project, never
taken from a benchmark: the development conversations, kept outside the repository, belong to the
memory-quality gate in .ci/run alone, and tests/test_test_data.py
fails a test module that reaches for a file outside the repository.

- DEMO: the conversation a fresh MemoryOS shows (memory/formats/demo/README.md): Maya and Sol, 15
  sessions from 3 March to 1 June 2025, 240 turns, three threads that come back (a half marathon,
  restoring the boat Kittiwake, Portuguese for a trip to Porto) and small talk between them.
"""

from __future__ import annotations

from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[2]
DEMO = REPOSITORY / "memory" / "formats" / "demo" / "demo_conversation.json"
