"""No import cycles inside the package: each module's imports form a graph without loops.

Imports under `if TYPE_CHECKING:` are not edges (they never run); imports inside functions
are (they run, later). A cycle means two modules each need the other: the names they share
belong in a leaf module both import.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import fourfold

ROOT = Path(fourfold.__file__).parent


def _modules(root: Path) -> dict[str, Path]:
    found = {}
    for path in root.rglob("*.py"):
        parts = ("fourfold", *path.relative_to(root).with_suffix("").parts)
        found[".".join(parts).removesuffix(".__init__")] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> Iterator[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = {id(n) for node in ast.walk(tree)
               if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
               for stmt in node.body for n in ast.walk(stmt)}
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                yield target


def import_cycles(root: Path = ROOT) -> list[list[str]]:
    """Every strongly connected set of two or more modules (Tarjan's algorithm), sorted."""
    modules = _modules(root)
    graph = {name: set(_imports(name, path, modules)) for name, path in modules.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for name in sorted(graph):
        if name not in index:
            visit(name)
    return sorted(cycles)


def test_the_check_finds_a_cycle(tmp_path: Path) -> None:
    """The detector itself: two modules importing each other (one inside a function) are a cycle."""
    pkg = tmp_path / "fourfold"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from fourfold.b import x\n")
    (pkg / "b.py").write_text("def f():\n    from fourfold import a\nx = 1\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from fourfold import a\n")
    (pkg / "d.py").write_text("from . import c\n")
    assert import_cycles(pkg) == [["fourfold.a", "fourfold.b"]]


def test_no_import_cycle_in_the_package() -> None:
    """Shared names live in leaf modules (`cli._common`, `embeddings.default`, `stores.engine`, ...)."""
    assert import_cycles() == []
