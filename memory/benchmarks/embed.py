"""`manage.py bench embed`: one query's embedding latency by ONNX Runtime thread setting.

Each setting (threads, and whether idle threads spin) embeds the same queries twice: on the
machine as it is, and beside a process that keeps one core busy, as the web server's other turns
and maintenance do. The query encoder is the product's (MiniLM exported to ONNX at load,
`memory.adapters.embeddings.OnnxEncoder`), called through the product's single-text path; only its thread
options differ. The default setting is marked.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.core.management.base import CommandError

from memory.adapters import embeddings
from memory.benchmarks import common

# (threads, idle threads spin): one thread, and two with and without spinning.
SETTINGS = ((1, False), (2, True), (2, False))
# A few tries, so that the encoder's first runs (allocations) are not timed.
WARM_UP = 5


def add_arguments(parser) -> None:
    parser.add_argument("--queries", type=int, default=200, help="queries per setting and load (default 200)")
    parser.add_argument("--seed", type=int, default=7, help="seed of the generated queries (default 7)")


@contextmanager
def busy_core() -> Iterator[subprocess.Popen]:
    """A child process spinning on one core for as long as the block runs."""
    child = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.2)  # let it get going
        yield child
    finally:
        child.kill()
        child.wait()


def _timings(loaded: embeddings.LoadedModel, queries: list[str], label: str, show: bool) -> dict[str, float]:
    for query in queries[:WARM_UP]:
        embeddings.embed_one(loaded, query)
    return common.summarize_ms([common.timed_ms(lambda q=query: embeddings.embed_one(loaded, q))[0]
                                for query in common.progress_iter(queries, label, show)])


def run(options: dict, stdout) -> dict:
    from memory.benchmarks.scale import TextGenerator

    show = not options.get("no_progress")
    if options["queries"] < 1:
        raise CommandError("--queries must be at least 1")
    generator = TextGenerator(options["seed"])
    queries = [generator.query() for _ in range(options["queries"])]
    model = embeddings.minilm_loaded("cpu").model
    sample = model.preprocess([embeddings.SAMPLE_TEXT])
    bert = model[0].auto_model
    default = (embeddings.query_threads(), False)
    try:
        graph = embeddings.export_onnx(bert, sample)  # once: the settings differ in the session only
        encoders = [embeddings.OnnxEncoder(graph, threads=threads, spinning=spinning)
                    for threads, spinning in SETTINGS]
    except Exception as exc:  # onnxruntime missing: the product falls back to TorchScript
        raise CommandError(f"the ONNX Runtime query encoder is unavailable: {exc}") from exc
    rows: list[dict[str, Any]] = []
    for (threads, spinning), encoder in zip(SETTINGS, encoders, strict=True):
        loaded = embeddings.LoadedModel(model=model, lock=threading.Lock(), single=encoder)
        label = f"{threads} thread{'s' if threads > 1 else ''}{', spinning' if spinning else ''}"
        quiet = _timings(loaded, queries, f"{label}, quiet", show)
        with busy_core():
            busy = _timings(loaded, queries, f"{label}, busy core", show)
        rows.append({"threads": threads, "spinning": spinning, "default": (threads, spinning) == default,
                     "quiet": quiet, "busy_core": busy})
    return {"benchmark": "embed", "date": common.today(), "machine": common.machine(),
            "queries": len(queries), "settings": rows}


def render(result: dict) -> str:
    table = common.render_table(
        ["threads", "idle threads", "default", "quiet p50", "quiet p95", "busy core p50", "busy core p95"],
        [[row["threads"], "spin" if row["spinning"] else "block", "yes" if row["default"] else "",
          row["quiet"]["p50"], row["quiet"]["p95"], row["busy_core"]["p50"], row["busy_core"]["p95"]]
         for row in result["settings"]],
        title="Query embedding, ms (MiniLM through ONNX Runtime, one query at a time)")
    notes = (f"{result['date']}, {result['machine']}; {result['queries']} generated queries per setting and load. "
             "busy core = beside a child process spinning on one core.")
    return f"{table}\n\n{notes}"
