"""The layers hold: no upward import (import-linter's contract in pyproject.toml), no cycle.

cli > fleet > report/reproduce > drive > diagnose > analyze > run > guest > measure > store >
spec > collect/target/workload > stacks > base, as docs/architecture.md draws them. The
contract is checked on the source tree, and once on a copy with one upward import added, to
show that it would fail.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(root / "src")}
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(root / "pyproject.toml"), "--no-cache"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_no_upward_imports():
    result = _lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr


def test_an_upward_import_fails_the_contract(tmp_path):
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    shutil.copytree(ROOT / "src" / "fslab", tmp_path / "src" / "fslab")
    units = tmp_path / "src" / "fslab" / "base" / "units.py"
    units.write_text(units.read_text() + "\nfrom fslab.report import text  # noqa\n")
    result = _lint_imports(tmp_path)
    assert result.returncode != 0
    assert "fslab.base is not allowed to import fslab.report" in result.stdout
    assert "fslab.base.units -> fslab.report.text" in result.stdout


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in edges.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycles():
    graph = grimp.build_graph("fslab")
    edges = {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    assert _cycles(edges) == []


def test_a_cycle_is_found():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(edges) == [["a", "b", "c"]]


# The house rules of docs/architecture.md, kept true by a test: every layer of the
# contract is a folder, few modules lie loose at the top, few modules grow past a size
# where one job usually became several (each one left says why in its docstring).
MAX_LOOSE = 6
MAX_LINES = 600
LARGE_ALLOWED = 2


def _layers() -> list[str]:
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    top = next(c for c in config["contracts"] if c["containers"] == ["fslab"])
    return [name.strip() for layer in top["layers"] for name in layer.split("|")]


def test_every_layer_is_a_folder_and_few_modules_are_loose():
    package = ROOT / "src" / "fslab"
    layers = [name for name in _layers() if name != "__main__"]
    assert [name for name in layers if not (package / name).is_dir()] == []
    loose = sorted(p.name for p in package.glob("*.py"))
    assert len(loose) <= MAX_LOOSE, loose


def test_at_most_two_modules_are_large_and_each_says_why():
    large = {
        path: len(path.read_text().splitlines())
        for path in (ROOT / "src" / "fslab").rglob("*.py")
        if len(path.read_text().splitlines()) > MAX_LINES
    }
    assert len(large) <= LARGE_ALLOWED, sorted(str(p) for p in large)
    for path in large:
        assert "on purpose" in path.read_text()[:3000], f"{path}: say why it is one module"
