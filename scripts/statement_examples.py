"""Write memory/engine/data/statement_examples.json: the statements the fact reader's judgement
(memory/engine/judging.py) compares a message with, each labelled fact or no fact.

They are the tuning halves of the understanding test sets (memory/benchmarks/data/
understanding_tune.json, _dev2.json, _dev3.json, _dev4.json: written by helpers who had not read
the code). The fresh half (understanding_fresh.json) is held out and never used here, so that bench
understanding still measures wording the judgement has not seen.

    .venv/bin/python scripts/statement_examples.py
"""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("understanding_tune.json", "understanding_dev2.json", "understanding_dev3.json",
           "understanding_dev4.json")
OUT = ROOT / "memory" / "engine" / "data" / "statement_examples.json"


def main() -> None:
    examples = []
    for name in SOURCES:
        data = json.loads((ROOT / "memory" / "benchmarks" / "data" / name).read_text(encoding="utf-8"))
        examples += [{"text": s["text"], "fact": s["fact"]} for s in data["statements"]]
    OUT.write_text(json.dumps({"about": "Statements labelled fact or no fact, from " + ", ".join(SOURCES)
                               + " (scripts/statement_examples.py).", "examples": examples},
                              ensure_ascii=False, indent=0) + "\n", encoding="utf-8")
    print(f"{len(examples)} examples -> {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
