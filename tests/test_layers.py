"""Each layer uses the ones below it through their public names.

A module may import private names (`_x`, or anything from a `_module`) only from its own
package: `fourfold.longterm.store` may use `fourfold.longterm._y`, not `fourfold.models._text`.
The package's own private seams at the root (`fourfold._validate`, `fourfold._files`, ...) are
shared by every package and stay allowed. Likewise for attributes: a module reaches private
attributes (`x._write(...)`) only of its own package's objects, so `semantic.docs` writes
through `LongTermMemory.write_documents`, not `_write`. The memory layers never import the
surfaces built on them (the service, the CLI, the agent).

Storage sits below ranking: a store stores and reads, and imports neither the memory layers nor
the ranker. The memory layers reach an engine only through the `Database` seam and the portable
SQL store, and one engine's store does not build on another's. A surface asks the library for
what it shows (a recall, an explanation): it builds no index and reads no scope out of a store.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from test_import_cycles import ROOT, _modules

#: The memory layers, and the surfaces they must not reach up to.
LAYERS = ("fourfold.longterm", "fourfold.episodic", "fourfold.semantic", "fourfold.shortterm")
SURFACES = ("fourfold.service", "fourfold.cli", "fourfold.agent")


def _unit(module: str) -> str:
    """The package a module belongs to: `fourfold.<pkg>` for a subpackage, else the module itself."""
    parts = module.split(".")
    if len(parts) > 1 and (ROOT / parts[1]).is_dir():
        return ".".join(parts[:2])
    return module


def _is_private(module: str, name: str) -> bool:
    """Whether `from module import name` reaches a private name, inside a subpackage or by name."""
    if name.startswith("_") and not name.startswith("__"):
        return True
    inner = module.split(".")[2:] if _unit(module) != module else []
    return any(part.startswith("_") and not part.startswith("__") for part in inner)


def _imports(path: Path, name: str) -> Iterator[tuple[str, str]]:
    """(module, name) for every absolute or relative import of fourfold in the file."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from ((alias.name, "") for alias in node.names if alias.name.startswith("fourfold"))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            if base == "fourfold" or base.startswith("fourfold."):
                yield from ((base, alias.name) for alias in node.names)


def private_crossings(root: Path = ROOT) -> set[tuple[str, str, str]]:
    """(importer, module, name) for each private name imported from another package."""
    found = set()
    for importer, path in _modules(root).items():
        for module, name in _imports(path, importer):
            if module == "fourfold" and name.startswith("_"):
                continue  # the root's private seams (`from fourfold import _wire`) are shared
            if _unit(module) != _unit(importer) and _is_private(module, name):
                found.add((importer, module, name))
    return found


def upward_imports(root: Path = ROOT) -> set[tuple[str, str]]:
    """(layer module, surface module) for each import of a surface from a memory layer."""
    found = set()
    for importer, path in _modules(root).items():
        if not importer.startswith(LAYERS):
            continue
        for module, name in _imports(path, importer):
            target = f"{module}.{name}" if name else module
            if any(target == s or target.startswith(f"{s}.") for s in SURFACES):
                found.add((importer, target))
    return found


#: Storage, and what it must not import: the memory layers and the ranker (BM25 included).
STORAGE = "fourfold.stores"
RANKING = (*LAYERS, "fourfold.ranking")
#: The engines' own modules; everything else in `fourfold.stores` is engine-neutral.
ENGINES = {
    "sqlite": ("fourfold.stores.sqlite",),
    "postgres": ("fourfold.stores.postgres", "fourfold.stores.pgvector", "fourfold.stores._pgconn"),
    "chroma": ("fourfold.stores.chroma",),
}
#: The index and ranking machinery a surface must leave to the library.
INDEX_NAMES = frozenset({"ScopeIndex", "BM25Index", "BM25Table", "rank", "Background", "lexical_share"})


def _targets(path: Path, name: str) -> Iterator[str]:
    """Every fourfold module or module attribute the file imports, as a dotted name."""
    for module, imported in _imports(path, name):
        yield f"{module}.{imported}" if imported else module


def _under(target: str, prefixes: tuple[str, ...] | str) -> bool:
    prefixes = (prefixes,) if isinstance(prefixes, str) else prefixes
    return any(target == p or target.startswith(f"{p}.") for p in prefixes)


def storage_imports_ranking(root: Path = ROOT) -> set[tuple[str, str]]:
    """(store module, target) for each import of a memory layer or the ranker from storage."""
    return {(importer, target) for importer, path in _modules(root).items() if _under(importer, STORAGE)
            for target in _targets(path, importer) if _under(target, RANKING)}


def engine_crossings(root: Path = ROOT) -> set[tuple[str, str]]:
    """(module, target) for each import of an engine's module from another engine or a memory layer."""
    found = set()
    for importer, path in _modules(root).items():
        own = next((modules for modules in ENGINES.values() if _under(importer, modules)), None)
        if own is None and not _under(importer, LAYERS):
            continue
        for target in _targets(path, importer):
            for modules in ENGINES.values():
                if modules is not own and _under(target, modules):
                    found.add((importer, target))
    return found


def surface_index_work(root: Path = ROOT) -> set[tuple[str, str]]:
    """(surface module, what) for each index built or scope read by a surface: an import of the
    index and ranking machinery, or a read of a scope through a store (`x.store.scan...`)."""
    found = set()
    for importer, path in _modules(root).items():
        if not _under(importer, SURFACES):
            continue
        for module, name in _imports(path, importer):
            if name in INDEX_NAMES or _under(module, "fourfold.longterm.retrieval"):
                found.add((importer, f"{module}.{name}"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Attribute) and node.attr.startswith("scan")
                    and isinstance(node.value, ast.Attribute) and node.value.attr == "store"):
                found.add((importer, ast.unparse(node)))
    return found


#: Methods of named tuples: public despite their underscore (`urlsplit(url)._replace(...)`).
NAMEDTUPLE_API = frozenset({"_replace", "_asdict", "_fields", "_make"})


def _bound_private_names(tree: ast.AST) -> set[str]:
    """The private names a module binds: its functions, classes, variables and attributes."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return {n for n in names if n.startswith("_") and not n.startswith("__")}


def _private_members(tree: ast.AST) -> set[str]:
    """The private names a module gives its objects: what its class bodies define, and the
    attributes it stores (`self._client = ...`); not its module-level functions or variables,
    which no `obj._name` of another object reaches."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    names.add(item.name)
                targets = item.targets if isinstance(item, ast.Assign) else [item.target] \
                    if isinstance(item, ast.AnnAssign) else []
                names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
    return {n for n in names if n.startswith("_") and not n.startswith("__")}


def private_attributes(root: Path = ROOT) -> set[tuple[str, str]]:
    """(module, attribute) for each private attribute a module reads that only other packages
    define, such as `self._lt._write(...)` in `fourfold.semantic` on a `LongTermMemory`.

    The check reads names, not types: a private name that the module's own package also
    defines passes. Names the root's private seams define (`fourfold._extras.SDKClient`'s
    `_keep_client`, inherited by models and embedders) are shared, as their imports are.
    """
    trees = {name: ast.parse(path.read_text(encoding="utf-8")) for name, path in _modules(root).items()}
    bound: dict[str, set[str]] = {}
    for name, tree in trees.items():
        bound.setdefault(_unit(name), set()).update(_bound_private_names(tree))
    shared = set().union(*(_private_members(tree) for name, tree in trees.items() if _unit(name).startswith("fourfold._")))
    found = set()
    for name, tree in trees.items():
        own = bound[_unit(name)] | shared | NAMEDTUPLE_API
        others = set().union(*(names for unit, names in bound.items() if unit != _unit(name)))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in others and node.attr not in own:
                found.add((name, node.attr))
    return found


def test_no_private_names_cross_packages() -> None:
    unexpected = sorted(private_crossings())
    assert not unexpected, f"private names imported from another package (make them public there): {unexpected}"


def test_no_private_attributes_cross_packages() -> None:
    unexpected = sorted(private_attributes())
    assert not unexpected, f"private attributes of another package's objects (give them a public name): {unexpected}"


def test_memory_layers_do_not_import_surfaces() -> None:
    assert upward_imports() == set()


@pytest.mark.xfail(strict=True, reason=(
    "pgvector builds a ScopeIndex to keep a large scope's features and returns the long-term "
    "layer's Candidates; it needs a candidate-source interface that imports nothing from longterm"))
def test_storage_imports_neither_the_memory_layers_nor_the_ranker() -> None:
    assert storage_imports_ranking() == set()


def test_engines_stay_apart_and_the_layers_reach_them_through_the_seam() -> None:
    assert engine_crossings() == set()


@pytest.mark.xfail(strict=True, reason=(
    "service.explain reads a whole scope through lt.store and builds its own ScopeIndex and "
    "BM25 index to explain results; explaining should read the library's own hits"))
def test_surfaces_build_no_index_and_read_no_scope_from_a_store() -> None:
    assert surface_index_work() == set()


def test_each_layer_leak_is_caught(tmp_path: Path) -> None:
    _package(tmp_path, "stores", "from fourfold.longterm.retrieval import ScopeIndex\nimport fourfold.ranking\n")
    assert storage_imports_ranking(tmp_path) == {
        ("fourfold.stores.probe", "fourfold.longterm.retrieval.ScopeIndex"), ("fourfold.stores.probe", "fourfold.ranking")}
    (tmp_path / "stores" / "pgvector.py").write_text("from fourfold.stores.sqlite import _COLUMNS, SQLiteVectorStore\n")
    _package(tmp_path, "episodic", "from fourfold.stores.sqlite import chunked_ids\nfrom fourfold.stores.sql import scope_of\n")
    assert engine_crossings(tmp_path) == {
        ("fourfold.stores.pgvector", "fourfold.stores.sqlite._COLUMNS"),
        ("fourfold.stores.pgvector", "fourfold.stores.sqlite.SQLiteVectorStore"),
        ("fourfold.episodic.probe", "fourfold.stores.sqlite.chunked_ids"),
    }
    _package(tmp_path, "service", "from fourfold.longterm.retrieval import ScopeIndex\n"
                                  "def explain(lt):\n    return lt.store.scan_versioned(None)\n")
    assert surface_index_work(tmp_path) == {
        ("fourfold.service.probe", "fourfold.longterm.retrieval.ScopeIndex"),
        ("fourfold.service.probe", "lt.store.scan_versioned"),
    }


@pytest.mark.parametrize(
    ("source", "crossing"),
    [
        ("from fourfold.longterm.store import _judge\n", ("fourfold.longterm.store", "_judge")),
        ("from fourfold.models._text import block_text\n", ("fourfold.models._text", "block_text")),
        ("from ..models._text import block_text\n", ("fourfold.models._text", "block_text")),
    ],
)
def test_a_private_import_from_another_package_is_caught(tmp_path: Path, source: str, crossing: tuple[str, str]) -> None:
    _package(tmp_path, "semantic", source)
    assert private_crossings(tmp_path) == {("fourfold.semantic.probe", *crossing)}


def test_private_imports_inside_a_package_and_from_root_seams_are_fine(tmp_path: Path) -> None:
    _package(tmp_path, "semantic", "from fourfold.semantic._own import x\nfrom fourfold._validate import check_k\n"
                                   "from fourfold import _wire\n")
    assert private_crossings(tmp_path) == set()


def test_a_private_method_of_another_package_is_caught(tmp_path: Path) -> None:
    _package(tmp_path, "semantic", "def ingest(lt):\n    lt._write([])\n    return lt.url._replace(path='/')\n")
    (tmp_path / "longterm" / "store.py").write_text("class LongTermMemory:\n    def _write(self, items): ...\n")
    (tmp_path / "_extras.py").write_text("class SDKClient:\n    def _keep_client(self): ...\n")
    # a root seam's module-level function of the same name shares nothing (`fourfold._manifest._write`)
    (tmp_path / "_manifest.py").write_text("def _write(path, data): ...\n")
    assert private_attributes(tmp_path) == {("fourfold.semantic.probe", "_write")}
    (tmp_path / "semantic" / "probe.py").write_text("def make(model):\n    model._keep_client()\n")
    assert private_attributes(tmp_path) == set()  # a root seam's own names are shared


@pytest.mark.parametrize("source", ["from fourfold.service.app import create_app\n", "import fourfold.cli\n",
                                    "from fourfold import agent\n"])
def test_a_layer_importing_a_surface_is_caught(tmp_path: Path, source: str) -> None:
    _package(tmp_path, "episodic", source)
    assert len(upward_imports(tmp_path)) == 1


def _package(root: Path, layer: str, source: str) -> None:
    """A fake fourfold tree: the layer holding `probe.py`, and the packages it may name."""
    for package in (layer, "longterm", "models", "service", "cli", "agent", "stores"):
        (root / package).mkdir(exist_ok=True)
        (root / package / "__init__.py").write_text("")
    (root / layer / "probe.py").write_text(source)
