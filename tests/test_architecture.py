"""The layers of docs/ARCHITECTURE.md, checked from the code's own imports.

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
EDGES = ("memory.web", "memory.management", "memory.templatetags", "memoryos_site")
MODELS = ("memory.models", "persona.models")
SERVICES = ("memory.services",)
# The reads (one module per thing read), and the inspector's figures, which the reads build and cache.
SELECTORS = ("memory.selectors", "memory.inspector")

# (who, what it must not import, why)
CONTRACTS: tuple[tuple[tuple[str, ...], tuple[str, ...], str], ...] = (
    (("memory.engine",), ("memory.", "persona.", "memoryos_site.", *FRAMEWORKS),
     "the engine is pure: it imports only the engine and plain libraries"),
    (("memory.adapters",), ("memory.models", "memory.services", "memory.recall", "memory.selectors", "memory.web",
                            "memory.config", "persona.", "memoryos_site."),
     "adapters implement engine ports and know nothing of models"),
    (("memory.recall",), ("memory.services", "memory.selectors", "memory.web", "memory.management"),
     "recall reads; what it writes (visits, the trace) is memory.services.recall's"),
    (("persona",), ("memory.", "memoryos_site.", "channels", "ninja"),
     "long-term memory's models depend on nothing of the project: memory depends on them, never the reverse"),
    (SELECTORS, (*SERVICES, *EDGES), "selectors read and never write"),
    (SERVICES, EDGES, "services are called by the edges, never the other way"),
    (EDGES, MODELS, "edges read through selectors and write through services"),
)
# Code that may import the benchmarks: the benchmarks and the command that runs them.
BENCHMARK_USERS = ("memory.benchmarks", "memory.management.commands.bench")

# The recall policies' names. Only the recall package and the engine spell them; everything else asks
# the policy (memory/recall/base.py: get_policy, policies, RecallPolicy's declarations), so that a new
# policy is one module.
POLICY_NAMES = frozenset({"memoryos", "hybrid", "memoria", "exocortex", "generative_agents"})
POLICY_NAME_OWNERS = ("memory.recall", "memory.engine")
# (module, name): why the name is spelled there. Migrations are not read (their history is fixed).
POLICY_NAME_EXCEPTIONS = {
    ("memoryos_site.settings", "hybrid"): "MEMORYOS_RECALL_POLICY's default: settings are plain values",
    ("memoryos_site.settings", "memoryos"): "the project's name: the Qdrant collection and the Redis prefix",
    ("memory.adapters.vectors", "memoryos"): "the project's name: the Qdrant collection's default",
    ("memory.web.mcp", "memoryos"): "the project's name: the MCP server's and its auth realm's",
    ("memory.web.openai_api", "memoryos"): "the project's name: /v1's auth realm, model owner and answer extension",
    ("memory.benchmarks.v1", "memoryos"): "the project's name: the /v1 answer's extension field, read by its bench",
    ("memory.models", "memoryos"): "RetrievalTrace.policy's column default, as migration 0001 has it",
    ("memory.management.commands.bench", "memoria"): "a benchmark's name: memory/benchmarks/memoria.py",
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


def _within(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p.rstrip(".") or module.startswith(p.rstrip(".") + ".") for p in prefixes)


def _project(target: str, modules: dict[str, Path]) -> str | None:
    """The project module an import names (the deepest that exists), or None for a library."""
    parts = target.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in modules:
            return candidate
    return None


def violations(root: Path, packages=PACKAGES, contracts=CONTRACTS) -> list[str]:
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
                if (_within(module, who) and not _within(imp.target, who) and not module.endswith(".admin")
                        and _within(imp.target, forbidden)):
                    found.append(f"{module}:{imp.line} imports {imp.target}: {why}")
            if target and _within(target, ("memory.benchmarks",)) and not _within(module, BENCHMARK_USERS):
                found.append(f"{module}:{imp.line} imports {target}: runtime code must not need the benchmarks")
        found += _private_attribute_uses(module, path, modules)
    found += [f"import cycle: {' -> '.join(cycle)}" for cycle in cycles(graph)]
    return found


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


def test_only_the_recall_package_names_a_policy() -> None:
    assert policy_name_literals(ROOT) == []
    modules = module_files(ROOT)
    assert all(module in modules for module, _ in POLICY_NAME_EXCEPTIONS)  # no exception outlives its reason


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
    for package in ("memory.engine", "memory.adapters", "memory.recall", "memory.services", "memory.web",
                    "memory.benchmarks", "memory.selectors", "memory.selectors.recall_panel", "memory.web.access"):
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
