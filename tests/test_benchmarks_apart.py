"""Tests do not import the benchmarks: what both need lives in `tests/harness` (which benchmarks
import through `benchmarks/_harness.py`), what only the tests need in `tests/`.

`benchmarks/` is a folder of scripts whose data and defaults change as they are tuned; a test that
imports one passes or fails with the benchmark's latest edit, not with the library's behaviour.
The one exception is a `test_bench_*.py` file, whose subject is a benchmark script itself (its
loader, its metrics, its generated data), and which imports that script the way it runs.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
BENCHMARKS = TESTS.parent / "benchmarks"


def _benchmark_modules() -> set[str]:
    return {p.stem for p in BENCHMARKS.glob("*.py")} | {"benchmarks"}


def benchmark_imports(path: Path, benchmarks: set[str]) -> list[str]:
    """What the file imports from `benchmarks/`, and each way it puts the folder on `sys.path`."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.partition(".")[0] in benchmarks]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            if node.module.partition(".")[0] in benchmarks:
                found.append(node.module)
        elif isinstance(node, ast.Call) and ast.unparse(node.func).startswith("sys.path."):
            if "benchmarks" in ast.unparse(node):
                found.append(ast.unparse(node))
    return found


def offenders(tests: Path = TESTS, benchmarks: set[str] | None = None) -> dict[str, list[str]]:
    """Test files (other than `test_bench_*.py`) that import a benchmark, with what they import."""
    names = _benchmark_modules() if benchmarks is None else benchmarks
    out = {}
    for path in sorted(tests.rglob("*.py")):
        if path.name.startswith("test_bench_"):
            continue
        if found := benchmark_imports(path, names):
            out[str(path.relative_to(tests))] = found
    return out


def test_no_test_imports_a_benchmark() -> None:
    assert offenders() == {}


def test_the_benchmark_modules_are_found() -> None:
    assert {"episodes_relevance", "reliability", "_paraphrase_data"} <= _benchmark_modules()


@pytest.mark.parametrize("source", [
    'import sys\nsys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))\n',
    "import _paraphrase_data as data\n",
    "from reliability import run\n",
    "from benchmarks.reliability import run\n",
    "def f():\n    import episodes_relevance\n",
])
def test_a_planted_benchmark_import_is_caught(tmp_path: Path, source: str) -> None:
    (tmp_path / "test_planted.py").write_text(source, encoding="utf-8")
    assert list(offenders(tmp_path, _benchmark_modules())) == ["test_planted.py"]


def test_a_benchmarks_own_test_and_library_imports_are_fine(tmp_path: Path) -> None:
    (tmp_path / "test_bench_x.py").write_text("import _paraphrase_data\n", encoding="utf-8")
    (tmp_path / "test_y.py").write_text(
        "from harness import episode_desk\nfrom harness.reliability import Workload\n"
        "import secrets_corpus\nfrom . import helpers\n", encoding="utf-8")
    assert offenders(tmp_path, _benchmark_modules()) == {}
