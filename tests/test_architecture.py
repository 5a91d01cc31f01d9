"""The layers of docs/ARCHITECTURE.md, checked from the code's own imports.

A memory model's package (memory/policies/<model>/) keeps the layers inside it: its `engine` is
pure, its `ranking` reads as recall does, its `services` and `selectors` are held to theirs. A
contract's `who` and `what` may hold `*` for one model's name; a module may always import within
the part of its own package that its pattern matched.

Every import statement counts, those inside functions too (a lazy import hides a cycle from the
interpreter, not from the reader); only `if TYPE_CHECKING:` blocks are left out. Checked: no
import cycle between modules, no import of another module's private name (nor `module._name`
through an imported module), and the contracts below. The checker runs on a small tree written
by the last tests too, so a checker that finds nothing cannot pass them.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("memory", "persona", "memoryos_site")

FRAMEWORKS = ("django", "qdrant_client", "qdrant_edge", "openai", "torch", "sentence_transformers", "onnxruntime",
              "channels", "ninja")
EDGES = ("memory.web", "memory.management", "memory.templatetags", "memoryos_site", "memory.policies.*.web")
MODELS = ("memory.models", "persona.models")
SERVICES = ("memory.services", "memory.policies.*.services", "memory.policies.*.hooks")
# How work runs (executors, the lane, Celery tasks, due work): between the edges and the services.
RUNTIME = ("memory.runtime",)
# The reads (one module per thing read), and the inspector's figures, which the reads build and cache.
SELECTORS = ("memory.selectors", "memory.inspector", "memory.policies.*.selectors")
RECALL = ("memory.recall", "memory.policies.*.ranking")
ENGINE = ("memory.engine", "memory.policies.*.engine")

# (who, what it must not import, why)
CONTRACTS: tuple[tuple[tuple[str, ...], tuple[str, ...], str], ...] = (
    (ENGINE, ("memory.", "persona.", "memoryos_site.", *FRAMEWORKS),
     "the engine is pure: it imports only the engine and plain libraries"),
    (("memory.adapters",), ("memory.models", "memory.services", "memory.recall", "memory.selectors", "memory.web",
                            "memory.config", "persona.", "memoryos_site."),
     "adapters implement engine ports and know nothing of models"),
    (RECALL, (*SERVICES, *SELECTORS, "memory.web", "memory.management"),
     "recall reads; what it writes (visits, the trace) is memory.services.recall's"),
    (("persona",), ("memory.", "memoryos_site.", "channels", "ninja"),
     "long-term memory's models depend on nothing of the project: memory depends on them, never the reverse"),
    (SELECTORS, (*SERVICES, *EDGES), "selectors read and never write"),
    (SERVICES, EDGES, "services are called by the edges, never the other way"),
    (SERVICES, RUNTIME, "services are plain functions the runtime calls, never the other way"),
    (RUNTIME, EDGES, "the runtime is called by the edges, never the other way"),
    (EDGES, MODELS, "edges read through selectors and write through services"),
)
# Ways of running work, which belong to memory.runtime: a service is a plain synchronous function.
RUNNERS = ("threading", "concurrent.futures", "celery", "asyncio", "multiprocessing")
# (module, library): why that service needs it anyway. `if TYPE_CHECKING:` imports are not counted.
RUNNER_EXCEPTIONS = {
    ("memory.services.maintenance", "threading"): "one lock per user serialises this process's maintenance "
                                                   "runs for that user, beside the database's row lock: "
                                                   "correctness of a run, not scheduling",
}
# Services write and find their own work with the ORM; the reads by entity (SELECTORS) are the
# edges' and the runtime's. (service, selector module): why that service reads through it anyway.
SERVICE_READS = {
    ("memory.services.maintenance", "memory.selectors.maintenance"):
        "a run finds its own work (the pages of stopped turns) once it holds the user's lock, and re-checks "
        "each page in the transaction that completes it: the caller cannot hand it a list that stays true; "
        "it asks whether each occasional step has work just before the step, for the same reason",
    ("memory.services.memory_talk", "memory.selectors.about_me"):
        "what a memory request reads depends on what it asks, and picks what the same turn then forgets or "
        "corrects: one command, decided by its reads",
    ("memory.services.turns", "memory.selectors.long_term"):
        "the facts a reply uses are read after the turn stored its message and answered a memory request in it "
        "(a fact forgotten by this very message is not used)",
}
# The setting that says where work runs: read by memory.runtime only.
RUNTIME_SETTINGS = ("MAINTENANCE_MODE",)
# What a contract's forbidden list lets through all the same: (who, what), the engine's own.
CONTRACT_ALLOWED = {ENGINE: ("memory.engine",)}
# Code that may import the benchmarks: the benchmarks, a model's own bench, and the command that runs them.
BENCHMARK_USERS = ("memory.benchmarks", "memory.policies.*.bench", "memory.management.commands.bench")

# The memory models' packages: nothing outside a model's package imports it; the registry
# (memory/policies/registry.py) loads the packages named in memory.policies.MODELS by name.
MODEL_PACKAGES = "memory.policies.*"
MODEL_CORE = ("memory.policies", "memory.policies.registry")  # the registry: not a model
# (importer, model package): why it still imports the model directly. Each is a hook to make.
MODEL_IMPORT_EXCEPTIONS: dict[tuple[str, str], str] = {}
# Recall reaches the adapters in one module, which builds the relevance core's candidate source and
# the recall's other adapter reads (the query's embedding, the nearest facts); the rest of recall
# ranks what it is given, so it can run on plain data.
ADAPTER_LOCATOR = "memory.adapters.configured"
RECALL_ADAPTER_MODULE = "memory.recall.candidates"
# (module): why it still imports the locator itself.
RECALL_ADAPTER_EXCEPTIONS = {
    "memory.policies.memoria.ranking": "Memoria's sona vector and its own searches (its full text, the graph)",
    "memory.policies.exocortex.ranking": "the recollections' search, a kind of point only the Exocortex reads",
}

# The recall policies' names. Only the recall package and the engine spell them; everything else asks
# the policy (memory/recall/base.py: get_policy, policies, RecallPolicy's declarations), so that a new
# policy is one module.
POLICY_NAMES = frozenset({"memoryos", "hybrid", "memoria", "exocortex", "generative_agents"})
POLICY_NAME_OWNERS = ("memory.recall", "memory.engine", "memory.policies")
# (module, name): why the name is spelled there. Migrations are not read (their history is fixed).
POLICY_NAME_EXCEPTIONS = {
    ("memoryos_site.settings", "hybrid"): "MEMORYOS_RECALL_POLICY's default: settings are plain values",
    ("memoryos_site.settings", "memoryos"): "the project's name: the Qdrant collection and the Redis prefix",
    ("memory.adapters.vectors", "memoryos"): "the project's name: the Qdrant collection's default",
    ("memory.web.mcp", "memoryos"): "the project's name: the MCP server's and its auth realm's",
    ("memory.web.openai_api", "memoryos"): "the project's name: /v1's auth realm, model owner and answer extension",
    ("memory.benchmarks.v1", "memoryos"): "the project's name: the /v1 answer's extension field, read by its bench",
    ("memory.models", "memoryos"): "RetrievalTrace.policy's column default, as migration 0001 has it",
}


@dataclass(frozen=True)
class Import:
    source: str  # the importing module
    target: str  # the project module imported (or the one a name is imported from)
    name: str  # the name imported from `target` ("" for `import target`)
    line: int


def module_files(root: Path, packages=PACKAGES) -> dict[str, Path]:
    """Module name -> file, for every module of the packages (migrations left out)."""
    found = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            parts = path.relative_to(root).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _type_checking_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def imports_of(module: str, path: Path, modules: dict[str, Path]) -> Iterator[Import]:
    tree = ast.parse(path.read_text(), filename=str(path))
    skipped = _type_checking_lines(tree)
    is_package = path.name == "__init__.py"
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skipped:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(module, alias.name, "", node.lineno)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")
                anchor = anchor if is_package else anchor[:-1]
                anchor = anchor[:len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                if submodule in modules:
                    yield Import(module, submodule, "", node.lineno)
                else:
                    yield Import(module, base, alias.name, node.lineno)


def _private_attribute_uses(module: str, path: Path, modules: dict[str, Path]) -> Iterator[str]:
    """`m._name` where `m` is bound to another project module by an import."""
    tree = ast.parse(path.read_text())
    bound: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname and alias.name in modules:
                    bound[alias.asname] = alias.name
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                if f"{node.module}.{alias.name}" in modules:
                    bound[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound
                and node.attr.startswith("_") and not node.attr.startswith("__") and bound[node.value.id] != module):
            yield f"{module}:{node.lineno} uses {bound[node.value.id]}.{node.attr}"


def _matched(module: str, pattern: str) -> str | None:
    """The part of `module` that `pattern` names (itself or a package above it), `*` standing for one
    name; None when the pattern names neither."""
    parts, wanted = module.split("."), pattern.rstrip(".").split(".")
    if len(parts) < len(wanted) or any(w != "*" and w != p for w, p in zip(wanted, parts, strict=False)):
        return None
    return ".".join(parts[:len(wanted)])


def _within(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(_matched(module, p) is not None for p in prefixes)


def _own(module: str, prefixes: tuple[str, ...]) -> tuple[str, ...]:
    """The parts of the tree `module` is in by `prefixes` (a model's engine, not every model's)."""
    return tuple(own for p in prefixes if (own := _matched(module, p)) is not None)


def _project(target: str, modules: dict[str, Path]) -> str | None:
    """The project module an import names (the deepest that exists), or None for a library."""
    parts = target.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in modules:
            return candidate
    return None


def _model_import(module: str, imp: Import, *, exceptions) -> list[str]:
    """A model's package imported from outside it (the registry, and the exceptions, aside)."""
    model = _matched(imp.target, MODEL_PACKAGES)
    if model is None or imp.target in MODEL_CORE or module in MODEL_CORE or _within(module, (model,)) \
            or (module, model) in exceptions:
        return []
    return [f"{module}:{imp.line} imports {imp.target}: a memory model is reached through the registry's hooks"]


def violations(root: Path, packages=PACKAGES, contracts=CONTRACTS, model_exceptions=None) -> list[str]:
    model_exceptions = MODEL_IMPORT_EXCEPTIONS if model_exceptions is None else model_exceptions
    modules = module_files(root, packages)
    found: list[str] = []
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for module, path in modules.items():
        for imp in imports_of(module, path, modules):
            target = _project(imp.target, modules)
            if target and target != module:
                graph[module].add(target)
            if imp.name.startswith("_") and not imp.name.startswith("__") and target and target != module:
                found.append(f"{module}:{imp.line} imports the private name {imp.name} from {target}")
            for who, forbidden, why in contracts:
                if (_within(module, who) and not _within(imp.target, _own(module, who))
                        and not module.endswith(".admin") and _within(imp.target, forbidden)
                        and not _within(imp.target, CONTRACT_ALLOWED.get(who, ()))):
                    found.append(f"{module}:{imp.line} imports {imp.target}: {why}")
            if target and _within(target, ("memory.benchmarks", "memory.policies.*.bench")) \
                    and not _within(module, BENCHMARK_USERS):
                found.append(f"{module}:{imp.line} imports {target}: runtime code must not need the benchmarks")
            found += _model_import(module, imp, exceptions=model_exceptions)
        found += _private_attribute_uses(module, path, modules)
    found += [f"import cycle: {' -> '.join(cycle)}" for cycle in cycles(graph)]
    return found


def services_running_work(root: Path, packages=PACKAGES, exceptions=RUNNER_EXCEPTIONS) -> list[str]:
    """Services that import a way of running work (RUNNERS) or read where work runs (RUNTIME_SETTINGS)."""
    found = []
    modules = module_files(root, packages)
    for module, path in modules.items():
        if not _within(module, SERVICES):
            continue
        for imp in imports_of(module, path, modules):
            runner = next((r for r in RUNNERS if _within(imp.target, (r,))), None)
            if runner is not None and (module, runner) not in exceptions:
                found.append(f"{module}:{imp.line} imports {imp.target}: how work runs is memory.runtime's")
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in RUNTIME_SETTINGS:
                found.append(f"{module}:{node.lineno} reads {node.value}: where work runs is memory.runtime's")
    return found


def services_reading(root: Path, packages=PACKAGES, exceptions=SERVICE_READS) -> list[str]:
    """Services that import a selector module, save the listed ones."""
    modules = module_files(root, packages)
    found = []
    for module, path in modules.items():
        if not _within(module, SERVICES):
            continue
        for imp in imports_of(module, path, modules):
            target = _project(imp.target, modules) or imp.target
            if _within(target, SELECTORS) and (module, target) not in exceptions:
                found.append(f"{module}:{imp.line} imports {target}: services write; reads are the callers'")
    return found


def recall_adapter_imports(root: Path, packages=PACKAGES, exceptions=RECALL_ADAPTER_EXCEPTIONS) -> list[str]:
    """Every import of the adapter locator in memory.recall outside its one adapter module (the
    exceptions aside)."""
    modules = module_files(root, packages)
    return [f"{module}:{imp.line} imports {ADAPTER_LOCATOR}: recall reaches the adapters through "
            f"{RECALL_ADAPTER_MODULE} alone"
            for module, path in modules.items()
            if _within(module, RECALL) and module != RECALL_ADAPTER_MODULE and module not in exceptions
            for imp in imports_of(module, path, modules) if _within(imp.target, (ADAPTER_LOCATOR,))]


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle (as a path back to its start) per strongly connected component that has one."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's algorithm; the module graph is small
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1 or node in graph.get(node, ()):
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [_cycle_path(graph, set(component)) for component in components]


def _cycle_path(graph: dict[str, set[str]], component: set[str]) -> list[str]:
    start = min(component)
    path, seen = [start], {start}
    node = start
    while True:
        node = min(n for n in graph[node] if n in component)
        path.append(node)
        if node in seen:
            return path[path.index(node):]
        seen.add(node)


def policy_name_literals(root: Path, packages=PACKAGES, exceptions=POLICY_NAME_EXCEPTIONS) -> list[str]:
    """Every string constant equal to a policy's name outside the recall package and the engine (the
    exceptions aside), and every quoted policy name in a template."""
    found = []
    for module, path in module_files(root, packages).items():
        if _within(module, POLICY_NAME_OWNERS):
            continue
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if (isinstance(node, ast.Constant) and node.value in POLICY_NAMES
                    and (module, node.value) not in exceptions):
                found.append(f"{module}:{node.lineno} spells the policy name {node.value!r}")
    for path in sorted((root / "templates").rglob("*.html")) if (root / "templates").is_dir() else ():
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            for name in sorted(POLICY_NAMES):
                if f'"{name}"' in line or f"'{name}'" in line:
                    found.append(f"{path.relative_to(root)}:{number} spells the policy name {name!r}")
    return found


# ------------------------------------------------------------------ the project itself

def test_the_project_has_no_cycle_no_private_import_and_keeps_its_layers() -> None:
    assert violations(ROOT) == []


def test_services_neither_run_work_nor_ask_where_it_runs() -> None:
    assert services_running_work(ROOT) == []
    modules = module_files(ROOT)
    assert all(module in modules for module, _ in RUNNER_EXCEPTIONS)  # no exception outlives its reason


def test_services_read_through_selectors_only_where_listed() -> None:
    assert services_reading(ROOT) == []
    modules = module_files(ROOT)
    assert all(module in modules and selector in modules for module, selector in SERVICE_READS)


def test_only_the_recall_package_names_a_policy() -> None:
    assert policy_name_literals(ROOT) == []
    modules = module_files(ROOT)
    assert all(module in modules for module, _ in POLICY_NAME_EXCEPTIONS)  # no exception outlives its reason


def test_a_memory_model_is_reached_only_through_the_registry() -> None:
    """The rule runs in the first test; here: the registry loads every model package there is (a
    package it does not name would be reached some other way), and each exception still has its
    importer and its import."""
    from memory.policies import MODELS

    modules = module_files(ROOT)
    packages = {module for module in modules if _matched(module, MODEL_PACKAGES) == module} - set(MODEL_CORE)
    assert packages and packages == set(MODELS)
    for importer, model in MODEL_IMPORT_EXCEPTIONS:
        assert model in modules and importer in modules, (importer, model)
        assert any(_matched(imp.target, MODEL_PACKAGES) == model
                   for imp in imports_of(importer, modules[importer], modules)), (importer, model)


def test_recall_reaches_the_adapters_in_one_module() -> None:
    assert recall_adapter_imports(ROOT) == []
    modules = module_files(ROOT)
    assert RECALL_ADAPTER_MODULE in modules
    assert all(module in modules for module in RECALL_ADAPTER_EXCEPTIONS)  # no exception outlives its module


def test_who_may_see_whom_is_decided_in_one_module() -> None:
    """Permission checks live in memory/web/access.py (the admin's own aside): the views, the API and
    the template tags ask it, and no selector filters by who is looking."""
    found = [f"{module}:{node.lineno}" for module, path in module_files(ROOT).items()
             if module not in ("memory.web.access", "memory.admin")
             for node in ast.walk(ast.parse(path.read_text()))
             if isinstance(node, ast.Attribute) and node.attr == "has_perm"]
    assert found == []


def test_the_layers_exist() -> None:
    modules = module_files(ROOT)
    for package in ("memory.engine", "memory.adapters", "memory.recall", "memory.services", "memory.runtime",
                    "memory.web", "memory.benchmarks", "memory.selectors", "memory.selectors.recall_panel",
                    "memory.web.access", "memory.policies.registry", "memory.policies.memoria.engine",
                    "memory.policies.memoria.ranking", "memory.policies.exocortex.engine",
                    "memory.policies.exocortex.ranking"):
        assert package in modules, package
    assert len([m for m in modules if m.startswith("memory.engine.")]) >= 8


# ------------------------------------------------------------------ the checker can fail

def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def test_a_cycle_through_a_lazy_import_is_found(tmp_path) -> None:
    root = _tree(tmp_path, {
        "memory/__init__.py": "",
        "memory/services/__init__.py": "",
        "memory/services/a.py": "from memory.services import b\n",
        "memory/services/b.py": "def f():\n    from memory.services.a import g\n",
    })
    assert violations(root, packages=("memory",)) == [
        "import cycle: memory.services.a -> memory.services.b -> memory.services.a"]


def test_private_names_and_forbidden_layers_are_found(tmp_path) -> None:
    root = _tree(tmp_path, {
        "memory/__init__.py": "",
        "memory/models.py": "",
        "memory/engine/__init__.py": "",
        "memory/engine/heat.py": "from django.conf import settings\n",
        "memory/services/__init__.py": "",
        "memory/services/common.py": "def _lock(): ...\n",
        "memory/services/turns.py": "from memory.services.common import _lock\nfrom memory.services import common\n"
                                    "common._lock()\n",
        "memory/web/__init__.py": "",
        "memory/web/views.py": "from memory.models import Page\n",
        "memory/web/fine.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from memory.models import X\n",
    })
    found = violations(root, packages=("memory",))
    assert "memory.engine.heat:1 imports django.conf: the engine is pure: it imports only the engine and plain " \
           "libraries" in found
    assert "memory.services.turns:1 imports the private name _lock from memory.services.common" in found
    assert "memory.services.turns:3 uses memory.services.common._lock" in found
    assert "memory.web.views:1 imports memory.models: edges read through selectors and write through services" in found
    assert not any(v.startswith("memory.web.fine") for v in found)
    assert len(found) == 4


def test_long_term_memory_depending_back_on_memory_is_found(tmp_path) -> None:
    root = _tree(tmp_path, {
        "memory/__init__.py": "",
        "memory/services/__init__.py": "",
        "memory/services/long_term.py": "from persona.models import KnowledgeFact\n",
        "persona/__init__.py": "",
        "persona/models.py": "from django.db import models\n",
        "persona/promote.py": "from memory.services import long_term\n",
    })
    assert violations(root, packages=("memory", "persona")) == [
        "persona.promote:1 imports memory.services.long_term: long-term memory's models depend on nothing of the "
        "project: memory depends on them, never the reverse"]


def test_a_policy_name_spelled_outside_recall_is_found(tmp_path) -> None:
    root = _tree(tmp_path, {
        "memory/__init__.py": "",
        "memory/recall/memoria.py": "name = 'memoria'\n",
        "memory/engine/exocortex.py": "EXOCORTEX = 'exocortex'\n",
        "memory/services/turns.py": "def f(recall):\n    return recall.policy == 'memoria'  # not 'hybrid'\n",
        "memory/selectors.py": "KINDS = ('memoria_page', 'hybrid')\n",
        "memory/web/mcp.py": "NAME = 'memoryos'\n",
        "templates/trace.html": "{% if t.policy == \"exocortex\" %}{% endif %}\n<p id=\"memoria-expansion\"></p>\n",
    })
    assert policy_name_literals(root, packages=("memory",), exceptions={("memory.web.mcp", "memoryos"): "a name"}) == [
        "memory.selectors:1 spells the policy name 'hybrid'",
        "memory.services.turns:2 spells the policy name 'memoria'",
        "templates/trace.html:1 spells the policy name 'exocortex'",
    ]


def test_a_service_that_runs_work_is_found(tmp_path) -> None:
    root = _tree(tmp_path, {
        "memory/__init__.py": "",
        "memory/runtime/__init__.py": "",
        "memory/runtime/lane.py": "import threading\nfrom memory.services import turns\n",
        "memory/services/__init__.py": "",
        "memory/services/turns.py": "from concurrent.futures import ThreadPoolExecutor\n"
                                    "from memory.runtime.lane import lane\n"
                                    "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import asyncio\n",
        "memory/services/maintenance.py": "import threading\nfrom celery import shared_task\n",
        "memory/services/after_reply.py": "def f(settings):\n    return settings.MEMORYOS['MAINTENANCE_MODE']\n",
        "memory/web/__init__.py": "",
        "memory/web/views.py": "from memory.runtime import lane\n",
    })
    assert services_running_work(root, packages=("memory",),
                                 exceptions={("memory.services.maintenance", "threading"): "a lock"}) == [
        "memory.services.after_reply:2 reads MAINTENANCE_MODE: where work runs is memory.runtime's",
        "memory.services.maintenance:2 imports celery: how work runs is memory.runtime's",
        "memory.services.turns:1 imports concurrent.futures: how work runs is memory.runtime's",
    ]
    assert services_reading(root, packages=("memory",)) == []
    assert violations(root, packages=("memory",)) == [
        "memory.services.turns:2 imports memory.runtime.lane: services are plain functions the runtime calls, "
        "never the other way",
        "import cycle: memory.runtime.lane -> memory.services.turns -> memory.runtime.lane",
    ]


def test_a_service_reading_through_a_selector_is_found(tmp_path) -> None:
    root = _tree(tmp_path, {
        "memory/__init__.py": "",
        "memory/selectors/__init__.py": "",
        "memory/selectors/sonas.py": "",
        "memory/selectors/files.py": "",
        "memory/services/__init__.py": "",
        "memory/services/chat.py": "from memory.selectors.sonas import sona_for_user\n"
                                   "from memory.selectors import files\n",
        "memory/services/turns.py": "from memory.selectors.files import attached_files\n",
    })
    assert services_reading(root, packages=("memory",),
                            exceptions={("memory.services.turns", "memory.selectors.files"): "a reason"}) == [
        "memory.services.chat:1 imports memory.selectors.sonas: services write; reads are the callers'",
        "memory.services.chat:2 imports memory.selectors.files: services write; reads are the callers'",
    ]


def test_a_memory_model_s_layers_and_its_package_s_walls_are_kept(tmp_path) -> None:
    root = _tree(tmp_path, {
        "memory/__init__.py": "",
        "memory/engine/__init__.py": "",
        "memory/engine/similarity.py": "",
        "memory/services/__init__.py": "",
        "memory/services/pages.py": "from memory.policies.memoria.services import put\n"
                                    "from memory.policies import registry\n",
        "memory/policies/__init__.py": "",
        "memory/policies/registry.py": "",
        "memory/policies/memoria/__init__.py": "",
        "memory/policies/memoria/engine/__init__.py": "",
        "memory/policies/memoria/engine/scoring.py": "from memory.engine.similarity import cosine\n"
                                                     "from memory.policies.memoria.engine import rating\n"
                                                     "from django.conf import settings\n",
        "memory/policies/memoria/engine/rating.py": "from memory.policies.exocortex.engine import decay\n",
        "memory/policies/memoria/ranking.py": "from memory.policies.memoria import services\n",
        "memory/policies/memoria/services.py": "from memory.policies.memoria.engine import scoring\n",
        "memory/policies/exocortex/__init__.py": "",
        "memory/policies/exocortex/engine/__init__.py": "",
        "memory/policies/exocortex/engine/decay.py": "",
    })
    found = violations(root, packages=("memory",), model_exceptions={})
    assert sorted(found) == sorted([
        "memory.services.pages:1 imports memory.policies.memoria.services: a memory model is reached through the "
        "registry's hooks",
        "memory.policies.memoria.engine.scoring:3 imports django.conf: the engine is pure: it imports only the engine "
        "and plain libraries",
        "memory.policies.memoria.engine.rating:1 imports memory.policies.exocortex.engine.decay: the engine is pure: "
        "it imports only the engine and plain libraries",
        "memory.policies.memoria.engine.rating:1 imports memory.policies.exocortex.engine.decay: a memory model is "
        "reached through the registry's hooks",
        "memory.policies.memoria.ranking:1 imports memory.policies.memoria.services: recall reads; what it writes "
        "(visits, the trace) is memory.services.recall's",
    ])
    excused = violations(root, packages=("memory",),
                         model_exceptions={("memory.services.pages", "memory.policies.memoria"): "a reason"})
    assert not any(v.startswith("memory.services.pages") for v in excused)


def test_recall_reaching_the_adapters_outside_its_one_module_is_found(tmp_path) -> None:
    root = _tree(tmp_path, {
        "memory/__init__.py": "",
        "memory/adapters/__init__.py": "",
        "memory/adapters/configured.py": "",
        "memory/recall/__init__.py": "",
        "memory/recall/candidates.py": "from memory.adapters import configured\n",
        "memory/recall/hybrid.py": "def f():\n    from memory.adapters.configured import vector_index\n",
        "memory/recall/memoria.py": "import memory.adapters.configured\n",
        "memory/recall/rows.py": "from memory.adapters import vectors\n",
        "memory/services/turns.py": "from memory.adapters import configured\n",
    })
    assert recall_adapter_imports(root, packages=("memory",), exceptions={}) == [
        "memory.recall.hybrid:2 imports memory.adapters.configured: recall reaches the adapters through "
        "memory.recall.candidates alone",
        "memory.recall.memoria:1 imports memory.adapters.configured: recall reaches the adapters through "
        "memory.recall.candidates alone"]
    assert recall_adapter_imports(root, packages=("memory",), exceptions={"memory.recall.memoria": "moving"}) == [
        "memory.recall.hybrid:2 imports memory.adapters.configured: recall reaches the adapters through "
        "memory.recall.candidates alone"]


# ------------------------------------------------------------------ the fakes stand on the public ports

# tests/fakes.py replaces adapters through the ports and what the adapters publish
# (memory/adapters/vector_points.py): a fake built on an adapter's private parts would pass the
# contract tests while hiding that it leans on them.
FAKES = "tests/fakes.py"


def private_imports(root: Path, relative: str, packages=PACKAGES) -> list[str]:
    """The project's private names one file outside the packages imports, or reaches as `module._name`."""
    modules = module_files(root, packages)
    path = root / relative
    module = relative.removesuffix(".py").replace("/", ".")
    found = [f"{module}:{imp.line} imports the private name {imp.name} from {imp.target}"
             for imp in imports_of(module, path, modules)
             if imp.name.startswith("_") and not imp.name.startswith("__") and _project(imp.target, modules)]
    return found + list(_private_attribute_uses(module, path, modules))


def test_the_fakes_use_no_private_name_of_the_project() -> None:
    assert private_imports(ROOT, FAKES) == []


def test_a_fake_reaching_into_an_adapter_is_found(tmp_path) -> None:
    root = _tree(tmp_path, {
        "memory/__init__.py": "",
        "memory/adapters/__init__.py": "",
        "memory/adapters/vectors.py": "class _ScopedIndex: ...\nDENSE = 'dense'\n",
        "tests/fakes.py": "from memory.adapters.vectors import DENSE, _ScopedIndex\n"
                          "from memory.adapters import vectors\nvectors._ScopedIndex\n"
                          "from json import _default_decoder\n",
    })
    assert private_imports(root, FAKES, packages=("memory",)) == [
        "tests.fakes:1 imports the private name _ScopedIndex from memory.adapters.vectors",
        "tests.fakes:3 uses memory.adapters.vectors._ScopedIndex"]


# ------------------------------------------------------------------ who starts threads

# Starting a thread, a pool or a process is how work runs: memory.runtime's, and an adapter's own
# (a stream's reader, the models' warm-up). (module): why it starts one all the same.
THREAD_MAKERS = ("Thread", "Timer", "ThreadPoolExecutor", "ProcessPoolExecutor", "Process")
THREAD_OWNERS = ("memory.runtime", "memory.adapters")
THREAD_EXCEPTIONS = {
    "memory.recall.pipeline": "the query is embedded on a thread beside recall's reads: a part of one recall, "
                              "not work the runtime schedules",
}


def thread_starts(root: Path, packages=PACKAGES, exceptions=THREAD_EXCEPTIONS) -> list[str]:
    """Every call that makes a thread, pool or process outside the runtime and the adapters."""
    found = []
    for module, path in module_files(root, packages).items():
        if _within(module, THREAD_OWNERS) or module in exceptions:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                if name in THREAD_MAKERS:
                    found.append(f"{module}:{node.lineno} starts a {name}: how work runs is memory.runtime's")
    return found


def test_only_the_runtime_and_the_adapters_start_threads() -> None:
    assert thread_starts(ROOT) == []
    modules = module_files(ROOT)
    assert all(module in modules for module in THREAD_EXCEPTIONS)  # no exception outlives its module


def test_a_thread_started_outside_the_runtime_is_found(tmp_path) -> None:
    root = _tree(tmp_path, {
        "memory/__init__.py": "",
        "memory/runtime/lane.py": "import threading\nthreading.Thread(target=print).start()\n",
        "memory/web/api.py": "import threading\n\ndef f():\n    threading.Thread(target=print).start()\n",
        "memory/recall/pipeline.py": "from concurrent.futures import ThreadPoolExecutor\nPOOL = ThreadPoolExecutor()\n",
        "memory/services/holders.py": "from memory.models import ServerProcess\nServerProcess(id=1)\n",
    })
    assert thread_starts(root, packages=("memory",), exceptions={}) == [
        "memory.recall.pipeline:2 starts a ThreadPoolExecutor: how work runs is memory.runtime's",
        "memory.web.api:4 starts a Thread: how work runs is memory.runtime's",
    ]
