"""The map in docs/ARCHITECTURE.md, generated from LAYERS and checked against the code's imports.

LAYERS is the diagram's source: rows from top to bottom, each row one or more boxes of packages.
A module may import its own box and any box on a lower row, never a box on its own row or above.
Every module of the project sits in exactly one box. The diagram and the table of contracts in
docs/ARCHITECTURE.md are written by this module (`python -m tests.test_architecture_map --write`)
and a test fails when the page differs from what it would write, so the map, the contracts of
tests/test_architecture.py and the code cannot disagree.
"""

from __future__ import annotations

import fnmatch
import re
import sys
from pathlib import Path

from tests.test_architecture import CONTRACTS, ROOT, _project, imports_of, module_files

DOC = ROOT / "docs" / "ARCHITECTURE.md"

# (box name, module patterns (a package name, or fnmatch patterns with *), what it holds); a row is a tuple of boxes.
Box = tuple[str, tuple[str, ...], str]
LAYERS: tuple[tuple[Box, ...], ...] = (
    (("edges", ("memoryos_site", "memory.web", "memory.management", "memory.templatetags", "memory.admin",
                "memory.apps", "memory.benchmarks", "memory.policies.*", "memory.policies.*.web",
                "memory.policies.*.bench"),
      "views, websocket, REST, MCP, /v1, commands, admin, benchmarks; a model's pages and its loading"),),
    (("runtime", ("memory.runtime",), "how work runs: turn and reply workers, the lane, Celery tasks, due work"),),
    (("services", ("memory.services", "memory.policies.*.services", "memory.policies.*.hooks"),
      "the one write path: plain synchronous functions by entity; a model's writes and hooks"),),
    (("selectors", ("memory.selectors", "memory.inspector", "memory.policies.*.selectors"),
      "the reads, one module per thing read; figures"),),
    (("recall", ("memory.recall", "memory.policies.*.ranking"), "ranks what the store holds for one query"),),
    (("models", ("memory.models", "persona"), "the source of truth (persona: long-term memory's models)"),
     ("registry", ("memory.policies", "memory.policies.registry"), "the memory models' hooks"),
     ("formats", ("memory.formats",), "file formats: LoCoMo, histories, CAR"),
     ("config", ("memory.config", "memory.policies.*.settings"), "settings turned into engine values"),
     ("adapters", ("memory.adapters",), "Qdrant, MiniLM, the chat model, full text, file text")),
    (("engine", ("memory.engine", "memory.policies.*.engine"),
      "pure Python: formulas, decisions, the offline engine, ports"),),
)

BEGIN = "<!-- {name}: written by `python -m tests.test_architecture_map --write`; do not edit by hand -->"
END = "<!-- end of {name} -->"


def _matches(module: str, pattern: str) -> int:
    """How specific a match of `pattern` for `module` is (0: no match)."""
    if "*" in pattern:
        inside = fnmatch.fnmatchcase(module, pattern) or fnmatch.fnmatchcase(module, pattern + ".*")
        return len(pattern) if inside else 0
    return len(pattern) if module == pattern or module.startswith(pattern + ".") else 0


def box_of(module: str, layers=LAYERS) -> tuple[int, str] | None:
    """(row, box name) of the most specific pattern matching the module."""
    best, found = 0, None
    for row, boxes in enumerate(layers):
        for name, patterns, _what in boxes:
            for pattern in patterns:
                score = _matches(module, pattern)
                if score > best:
                    best, found = score, (row, name)
    return found


def layer_violations(root: Path, layers=LAYERS, packages=("memory", "persona", "memoryos_site")) -> list[str]:
    modules = module_files(root, packages)
    # A top-level package's own __init__ (`memory`) needs no box; every module in it does.
    found = [f"{module} is in no box of the map" for module in modules
             if box_of(module, layers) is None and "." in module]
    for module, path in modules.items():
        here = box_of(module, layers)
        if here is None:
            continue
        for imp in imports_of(module, path, modules):
            target = _project(imp.target, modules)
            there = box_of(target, layers) if target else None
            if there is None or there[1] == here[1]:
                continue
            if there[0] == here[0]:
                problem = f"{module}:{imp.line} imports {target}: {here[1]} and {there[1]} sit side by side"
            elif there[0] < here[0]:
                problem = f"{module}:{imp.line} imports {target}: {there[1]} sits above {here[1]}"
            else:
                continue
            if problem not in found:  # `from x import a, b` is one import
                found.append(problem)
    for number, row in enumerate(layers):
        for name, _patterns, _what in row:
            if not any(box_of(module, layers) == (number, name) for module in modules):
                found.append(f"the box {name} holds no module")
    return found


def diagram(layers=LAYERS) -> str:
    """The map as text: boxes from top to bottom; a box imports only its own and those below it."""
    lines = []
    for number, row in enumerate(layers):
        if number:
            lines.append(f"{'':12}|  (imports go down)")
        for index, (name, patterns, what) in enumerate(row):
            if index:
                lines.append(f"{'':12}=  (beside: neither imports the other)")
            lines.append(f"{name:12}{', '.join(patterns)}")
            lines.append(f"{'':12}{what}")
    return "```text\n" + "\n".join(lines) + "\n```"


def contracts_table(contracts=CONTRACTS) -> str:
    rows = ["| who | must not import | why |", "| --- | --- | --- |"]
    for who, forbidden, why in contracts:
        shown = ", ".join(f"`{f.rstrip('.')}`" for f in forbidden)
        rows.append(f"| {', '.join(f'`{w}`' for w in who)} | {shown} | {why} |")
    return "\n".join(rows)


SECTIONS = {"layers": diagram, "contracts": contracts_table}


def written(text: str) -> str:
    """The page with each generated section replaced by what this module makes of it now."""
    for name, make in SECTIONS.items():
        begin, end = BEGIN.format(name=name), END.format(name=name)
        pattern = re.compile(re.escape(begin) + r"\n(?:.*?\n)?" + re.escape(end), re.S)
        if not pattern.search(text):
            raise ValueError(f"docs/ARCHITECTURE.md has no {name} section ({begin})")
        section = f"{begin}\n{make()}\n{end}"
        text = pattern.sub(lambda _m, section=section: section, text)
    return text


# ------------------------------------------------------------------ the project itself

def test_the_code_keeps_to_the_map() -> None:
    assert layer_violations(ROOT) == []


def test_the_page_shows_the_map_and_the_contracts_as_they_are() -> None:
    text = DOC.read_text()
    assert written(text) == text, "run `python -m tests.test_architecture_map --write`"


def test_the_page_is_a_map_not_a_book() -> None:
    assert len(re.findall(r"\S+", DOC.read_text())) <= 1500


# ------------------------------------------------------------------ the checker can fail

def test_an_import_up_or_across_the_map_is_found(tmp_path) -> None:
    files = {
        "memory/__init__.py": "",
        "memory/engine/__init__.py": "",
        "memory/engine/heat.py": "from memory.services import turns\n",
        "memory/services/__init__.py": "",
        "memory/services/turns.py": "from memory.selectors import stats\nfrom memory.engine import heat\n",
        "memory/selectors/__init__.py": "",
        "memory/selectors/stats.py": "",
        "memory/stray.py": "",
        "memory/web/__init__.py": "",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    layers = (
        (("edges", ("memory.web",), ""),),
        (("services", ("memory.services",), ""), ("selectors", ("memory.selectors",), "")),
        (("engine", ("memory.engine",), ""), ("empty", ("memory.nothing",), "")),
    )
    assert layer_violations(tmp_path, layers, packages=("memory",)) == [
        "memory.stray is in no box of the map",
        "memory.engine.heat:1 imports memory.services.turns: services sits above engine",
        "memory.services.turns:1 imports memory.selectors.stats: services and selectors sit side by side",
        "the box empty holds no module",
    ]


def test_a_stale_page_is_found() -> None:
    stale = DOC.read_text().replace("(imports go down)", "(imports go anywhere)", 1)
    assert written(stale) != stale


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        DOC.write_text(written(DOC.read_text()))
    else:
        print(diagram())
        print()
        print(contracts_table())
