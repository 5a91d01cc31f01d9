"""The engine stays free of Django, Qdrant and LLM libraries: the core's and each memory model's
(memory/policies/<model>/engine/)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_engines_import_no_framework():
    files = [*(ROOT / "memory" / "engine").glob("*.py"), *(ROOT / "memory" / "policies").glob("*/engine/*.py")]
    modules = sorted(".".join(p.relative_to(ROOT).with_suffix("").parts) for p in files if p.stem != "__init__")
    code = (
        "import sys\n"
        + "".join(f"import {m}\n" for m in modules)
        + "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
          "{'django', 'qdrant_client', 'qdrant_edge', 'openai', 'torch', 'sentence_transformers'})\n"
        + "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert len([m for m in modules if m.startswith("memory.engine.")]) >= 8
    assert {"memory.policies.memoria.engine.scoring", "memory.policies.exocortex.engine.decay"} <= set(modules)
    assert out.stdout.strip() == ""
