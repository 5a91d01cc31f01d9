"""`manage.py bench {retrieval,imported,scale,qa,answer,ws,v1,embed,inspector,memoria,files,supersession,feel,
understanding} [...]`:
the benchmarks (tables or --json).

Each subcommand lives in memory/benchmarks/<name>.py (a memory model's in its package, registered
with memory/policies/registry.py on_bench) with `add_arguments(parser)`,
`run(options, stdout) -> dict` and `render(result) -> str`. Modules are imported when their
subcommand runs (and, for its options, when the parser is built; a missing one is listed as
unavailable), so one benchmark's heavy imports never slow another.
"""

from __future__ import annotations

import importlib
import json
import math
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.test.utils import override_settings

from memory.policies import registry as models

BENCHMARKS = {
    "retrieval": "LoCoMo evidence recall of the recall policies against BM25 and dense baselines",
    "scale": "retrieval latency, ingest throughput and sizes as one user's store grows",
    "ingest": "importing a LoCoMo conversation through the product: whole-file batches against turn by turn",
    "imported": "LoCoMo evidence recall of one conversation imported from its file and from a ChatGPT export of it",
    "qa": "LoCoMo answer F1 / BLEU-1 with the configured LLM endpoint",
    "answer": "LoCoMo: how often the offline engine's reply holds the gold answer, against quoting BM25's top turn",
    "ws": "websocket chat load on loopback: concurrent sessions, time to first token, errors",
    "v1": "the OpenAI-compatible endpoint (/v1) under a burst of official-client streams, beside the websocket",
    "embed": "query embedding latency by encoder thread setting, quiet and beside a busy core",
    "inspector": "the memory inspector's pages and figures at 10,000 pages, and replay steps",
    "files": "files attached to turns: reading text, PDF and images, and a turn carrying one against a turn without",
    "supersession": "offline contradiction detection on hand-written scenarios: confusion table, precision, recall",
    "feel": "memory a person can feel: chat scripts (facts told, changed, kept, asked) through the offline engine",
    "understanding": "facts captured from everyday statements, none from what states nothing, no false promise, "
                     "changes and corrections answered",
}


class BenchmarkUnavailable(CommandError):
    pass


def benchmarks() -> dict[str, str]:
    """The core's benchmarks, then the memory models' (memory/policies/<model>/bench.py): name -> summary."""
    return {**BENCHMARKS, **{name: summary for name, (_, summary) in models.benches().items()}}


def _module(name: str) -> str:
    return models.benches().get(name, (f"memory.benchmarks.{name}", ""))[0]


def load(name: str):
    module = _module(name)
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name == module:
            raise BenchmarkUnavailable(
                f"The {name!r} benchmark is not installed ({module.replace('.', '/')}.py).") from None
        raise


def _jsonable(value: Any) -> Any:
    """NaN/inf become null: JSON has no NaN, and a missing measurement is what they mean."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


class Command(BaseCommand):
    help = "Run a benchmark and print its table (or --json)."

    def add_arguments(self, parser):
        # Django's CommandParser hands its error handling down to the subparsers.
        named = benchmarks()
        subparsers = parser.add_subparsers(dest="benchmark", metavar="{" + ",".join(named) + "}",
                                           required=True)
        for name, summary in named.items():
            sub = subparsers.add_parser(name, help=summary, description=summary)
            sub.add_argument("--json", action="store_true", help="print the result as JSON instead of tables")
            sub.add_argument("--no-progress", action="store_true", help="no progress bars on stderr")
            try:
                load(name).add_arguments(sub)
            except BenchmarkUnavailable:
                sub.description = f"{summary} (unavailable: {_module(name).replace('.', '/')}.py is missing)"

    def handle(self, *args, **options):
        name = options["benchmark"]
        module = load(name)
        # Measured as deployed: with DEBUG on, Django wraps every cursor to time each statement
        # and keep it in connection.queries.
        with override_settings(DEBUG=False):
            result = module.run(options, self.stdout)
        if options["json"]:
            self.stdout.write(json.dumps(_jsonable(result), indent=2, default=str))
        else:
            self.stdout.write(module.render(result))
