"""The test suite reads nothing outside the repository: a clone anywhere passes `make test`.

Three modules once read the development conversations kept in a folder beside the clone, and a
clone elsewhere failed. This scan finds the ways a test module reaches out: a path climbing above
the repository (`Path(__file__).parents[N]`), or naming the development data or its folder."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.data import DEMO, REPOSITORY

TESTS = REPOSITORY / "tests"
# Words that only a path out of the repository, or the gate's own data, would contain.
# Spelled in pieces, so that this file itself names no path outside the repository.
BESIDE = "sha" "red"  # the workspace's folder beside a clone
OUTSIDE = (BESIDE + "/", "locomo" "_dev", "DEV" "_DATA", "locomo" "10")


def reaches_out(path: Path) -> list[str]:
    """Where the module at `path` names a file outside the repository, as 'line: why'."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    folders = len(path.relative_to(REPOSITORY).parts) - 1  # parents[folders] is the repository
    docstrings = {id(body[0].value) for body in [tree.body] + [n.body for n in ast.walk(tree) if isinstance(
        n, ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef)] if body and isinstance(body[0], ast.Expr)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):  # path / BESIDE
            for side in (node.left, node.right):
                if isinstance(side, ast.Constant) and side.value == BESIDE:
                    found.append(f"{side.lineno}: names {BESIDE!r}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            if any(word in node.value for word in OUTSIDE):
                found.append(f"{node.lineno}: names {node.value[:60]!r}")
        elif (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute)
              and node.value.attr == "parents" and isinstance(node.slice, ast.Constant)
              and isinstance(node.slice.value, int) and node.slice.value > folders):
            found.append(f"{node.lineno}: parents[{node.slice.value}] climbs above the repository")
    return found


def test_no_test_module_reads_outside_the_repository():
    here = Path(__file__).resolve()
    offenders = {str(p.relative_to(REPOSITORY)): where for p in sorted(TESTS.rglob("*.py"))
                 if p.resolve() != here and (where := reaches_out(p))}
    assert offenders == {}


@pytest.mark.parametrize("source, why", [
    ('DATA = Path(__file__).resolve().parents[4] / "x.json"\n', "parents[4] climbs above the repository"),
    (f'DATA = ROOT.parent / "{BESIDE}" / "data" / "file.json"\n', f"names {BESIDE!r}"),
    ('DATA = os.environ.get("MEMORYOS_' 'DEV' '_DATA")\n', "names 'MEMORYOS_" "DEV" "_DATA'"),
])
def test_the_scan_finds_each_way_out(tmp_path, monkeypatch, source, why):
    module = TESTS / "memory" / "management" / "reaching_out.py"  # three folders down: parents[3] is the repository
    monkeypatch.setattr(Path, "read_text", lambda self, encoding=None: source)
    assert [line.split(": ", 1)[1] for line in reaches_out(module)] == [why]


def test_the_scan_lets_a_path_inside_the_repository_pass(monkeypatch):
    module = TESTS / "memory" / "management" / "inside.py"
    monkeypatch.setattr(Path, "read_text", lambda self, encoding=None: 'DATA = Path(__file__).parents[3] / "x"\n')
    assert reaches_out(module) == []


def test_the_tests_data_lies_in_the_repository():
    assert DEMO.is_file() and DEMO.resolve().is_relative_to(REPOSITORY)
