"""The engine stays free of Django, Qdrant and LLM libraries."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_engine_imports_no_framework():
    modules = [p.stem for p in (ROOT / "memory" / "engine").glob("*.py") if p.stem != "__init__"]
    code = (
        "import sys\n"
        + "".join(f"import memory.engine.{m}\n" for m in modules)
        + "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
          "{'django', 'qdrant_client', 'qdrant_edge', 'openai', 'torch', 'sentence_transformers'})\n"
        + "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert len(modules) >= 8
    assert out.stdout.strip() == ""
