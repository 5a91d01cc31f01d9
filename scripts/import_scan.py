"""What memory/services imports, and how it runs: the evidence for issue 38's runtime move.

    .venv/bin/python scripts/import_scan.py [PACKAGE]   (default: memory.services)

Prints the package's modules, the import arrows between them, each module's floor (the length of
the longest chain of imports below it inside the package: 0 imports none of them), the modules
that import a way of running work (threading, concurrent.futures, celery, asyncio), those that
hold a lock (`threading.Lock()` and the like) and those that import selectors or memory.runtime.
Reads the code's own imports with tests/test_architecture.py's module_files and imports_of.
"""

from __future__ import annotations

import ast
import functools
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.test_architecture import PACKAGES, imports_of, module_files  # noqa: E402

RUNNERS = ("threading", "concurrent.futures", "celery", "asyncio", "multiprocessing")
LOCKS = ("Lock", "RLock", "Condition", "Semaphore", "BoundedSemaphore", "Event", "Timer", "Thread",
         "ThreadPoolExecutor")


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def _locks(path: Path) -> list[str]:
    """`Lock()`, `threading.Event()`, ...: the calls that make a lock, an event or a thread."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in LOCKS:
                found.append(f"{name}@{node.lineno}")
            # defaultdict(threading.Lock): a lock made for each key
            found += [f"{arg.attr}@{node.lineno}" for arg in node.args
                      if isinstance(arg, ast.Attribute) and arg.attr in LOCKS]
    return found


def scan(package: str = "memory.services") -> str:
    modules = module_files(ROOT, PACKAGES)
    inside = sorted(m for m in modules if _within(m, package))
    arrows: dict[str, set[str]] = {m: set() for m in inside}
    runners: dict[str, set[str]] = {}
    reads: dict[str, set[str]] = {}
    for module in inside:
        for imp in imports_of(module, modules[module], modules):
            target = imp.target
            if target in arrows and target != module:
                arrows[module].add(target)
            elif imp.name and f"{target}.{imp.name}" in arrows:
                arrows[module].add(f"{target}.{imp.name}")
            if any(_within(target, r) for r in RUNNERS):
                runners.setdefault(module, set()).add(target)
            if _within(target, "memory.selectors") or _within(target, "memory.runtime"):
                reads.setdefault(module, set()).add(target)

    @functools.cache
    def floor(module: str, seen: frozenset[str] = frozenset()) -> int:
        below = [floor(t, seen | {module}) for t in arrows[module] if t not in seen | {module}]
        return 1 + max(below) if below else 0

    short = {m: m[len(package) + 1:] or m for m in inside}
    lines = [f"# {package}: {len(inside)} modules, {sum(map(len, arrows.values()))} import arrows", ""]
    lines.append("## modules (floor: longest import chain below it inside the package)")
    for module in sorted(inside, key=lambda m: (floor(m), m)):
        lines.append(f"  {floor(module):2d}  {short[module]}")
    lines += ["", "## import arrows"]
    for module in inside:
        if arrows[module]:
            lines.append(f"  {short[module]} -> {', '.join(short[t] for t in sorted(arrows[module]))}")
    lines += ["", f"## importing {', '.join(RUNNERS)}"]
    lines += [f"  {short[m]}: {', '.join(sorted(runners[m]))}" for m in sorted(runners)] or ["  (none)"]
    lines += ["", "## making locks, events, threads or pools"]
    held = {m: _locks(modules[m]) for m in inside}
    lines += [f"  {short[m]}: {', '.join(held[m])}" for m in inside if held[m]] or ["  (none)"]
    lines += ["", "## importing memory.selectors or memory.runtime"]
    lines += [f"  {short[m]}: {', '.join(sorted(reads[m]))}" for m in sorted(reads)] or ["  (none)"]
    lines += ["", f"## floors: {max(map(floor, inside), default=0)} deepest"]
    return "\n".join(lines)


if __name__ == "__main__":
    print(scan(*sys.argv[1:]))
