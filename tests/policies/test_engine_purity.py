"""A memory model's engine is as pure as the core's: importing it loads no Django, Qdrant nor LLM library."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_models_engines_import_no_framework():
    modules = sorted(".".join(p.relative_to(ROOT).with_suffix("").parts)
                     for p in (ROOT / "memory" / "policies").glob("*/engine/*.py") if p.stem != "__init__")
    code = (
        "import sys\n"
        + "".join(f"import {m}\n" for m in modules)
        + "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
          "{'django', 'qdrant_client', 'qdrant_edge', 'openai', 'torch', 'sentence_transformers'})\n"
        + "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert {"memory.policies.memoria.engine.scoring", "memory.policies.exocortex.engine.decay"} <= set(modules)
    assert out.stdout.strip() == ""
