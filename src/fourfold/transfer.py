"""Moving data: a versioned, lossless JSON Lines dump of a `Memory`, read back into any engine,
and the one-time move of a fourfold 0.1 data dir (Chroma, JSONL, separate SQLite files)
into this version's single database.

The dump holds memories and document chunks with their metadata and vectors, episodes with
their stored vectors, facts with their history, and conversation threads. It never holds API
keys: a key is a secret of the deployment, and only its digest is stored anyway.
"""

from __future__ import annotations

import base64
import json
import shutil
import sqlite3
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import numpy as np

from fourfold._manifest import COLLECTION, MANIFEST, VECTORS, LegacyFile
from fourfold._validate import json_object
from fourfold.embeddings.base import Embedder, Vectors
from fourfold.episodic.codec import decode_line
from fourfold.errors import EmbedderMismatch, InvalidInput, StoreCorrupt
from fourfold.longterm.versions import is_current
from fourfold.semantic.facts import FactRow
from fourfold.semantic.tools import DEFAULT_DESCRIPTION
from fourfold.shortterm.threads import thread_from_payload, thread_payload
from fourfold.stores.vector import DOC_KIND, VectorRecord, embedding_text
from fourfold.types import Episode

if TYPE_CHECKING:
    from fourfold.memory import Memory

__all__ = ["EXPORT_FORMAT", "EXPORT_VERSION", "Counts", "export_memory", "import_memory", "migrate_legacy"]

EXPORT_FORMAT = "fourfold-export"
EXPORT_VERSION = 1
#: What a 0.1 data dir held beside its manifest; moved into the backup folder by `migrate_legacy`.
_LEGACY_FILES = (*LegacyFile, VECTORS)
_BATCH = 500


@dataclass(slots=True)
class Counts:
    """How many items of each kind were written (or read).

    `memories` are current memories, `old_versions` the versions a newer one replaced, and
    `doc_chunks` the chunks of ingested documents, as `Memory.scopes` counts them. An import
    counts only what it added; `unchanged` is what the target held already.
    """

    memories: int = 0
    old_versions: int = 0
    doc_chunks: int = 0
    episodes: int = 0
    facts: int = 0
    fact_history: int = 0
    threads: int = 0
    keys: int = 0
    skipped: int = 0
    unchanged: int = 0

    def add(self, other: Counts) -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    def as_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def tally(self, records: Iterable[VectorRecord]) -> None:
        """Count long-term records as memories, old versions or document chunks."""
        for record in records:
            if record.kind == DOC_KIND:
                self.doc_chunks += 1
            elif is_current(record):
                self.memories += 1
            else:
                self.old_versions += 1


# -- export -------------------------------------------------------------------------------------


def export_memory(memory: Memory, out: IO[str]) -> Counts:
    """Write everything `memory` holds as JSON Lines to `out`: a header, then one item a line."""
    counts = Counts()
    embedder = memory.long_term.embedder
    _line(out, {"type": "header", "format": EXPORT_FORMAT, "version": EXPORT_VERSION,
                "embedder": embedder.identity, "dimension": embedder.dimension, "exported_at": time.time()})
    store = memory.long_term.store
    scopes = sorted(store.scopes(), key=lambda s: (s is not None, s or ""))
    for scope in scopes:
        records = sorted(store.scan(scope), key=lambda r: (r.created_at, r.seq, r.id))
        for record in records:
            _line(out, _memory_item(record))
        counts.tally(records)
    episodes = memory.episodes.episodes()
    vectors = memory.episodes.stored_vectors([ep.id for ep in episodes])
    sources = memory.episodes.sources([ep.id for ep in episodes])
    for ep in episodes:
        _line(out, _episode_item(ep, vectors.get(ep.id), sources.get(ep.id)))
        counts.episodes += 1
    current, history = memory.facts.dump()
    for kind, rows in (("fact", current), ("fact_history", history)):
        for row in rows:
            _line(out, {"type": kind, "key": row.key, "value": json.loads(row.value_json),
                        "description": row.description, "at": row.at})
    counts.facts, counts.fact_history = len(current), len(history)
    tool = memory.facts.tool_description()
    if tool != DEFAULT_DESCRIPTION:
        _line(out, {"type": "tool_description", "description": tool})
    for scope in memory.conversations.scopes():
        _line(out, {"type": "thread", **thread_payload(memory.conversations.load(scope))})
        counts.threads += 1
    return counts


#: Characters that end a line for `str.splitlines` but that JSON leaves unescaped.
_LINE_BREAKS = str.maketrans({"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def _line(out: IO[str], item: dict[str, Any]) -> None:
    """One item a line, whatever splits lines: text with line separators stays on its line."""
    out.write(json.dumps(item, ensure_ascii=False, separators=(",", ":")).translate(_LINE_BREAKS) + "\n")


def _vector_text(vector: Vectors) -> str:
    return base64.b64encode(np.ascontiguousarray(vector, dtype="<f4").tobytes()).decode("ascii")


def _vector(text: object, dimension: int, what: str) -> Vectors:
    if not isinstance(text, str):
        raise StoreCorrupt(f"{what}: the vector is not base64 text")
    try:
        vector = np.frombuffer(base64.b64decode(text, validate=True), dtype="<f4").astype(np.float32)
    except ValueError as exc:
        raise StoreCorrupt(f"{what}: the vector is not valid base64 ({exc})") from None
    if vector.shape != (dimension,):
        raise StoreCorrupt(f"{what}: a vector of {vector.shape[0]} numbers, not {dimension}")
    return vector


def _memory_item(record: VectorRecord) -> dict[str, Any]:
    return {"type": "memory", "id": record.id, "scope": record.scope, "kind": record.kind, "text": record.text,
            "metadata": dict(record.metadata), "extra": list(record.extra), "created_at": record.created_at,
            "seq": record.seq, "embedding": _vector_text(record.embedding)}


def _episode_item(ep: Episode, vector: Vectors | None, source: str | None) -> dict[str, Any]:
    item = {"type": "episode", "id": ep.id, "scope": ep.scope, "ts": ep.ts, "success": ep.success,
            "goal": ep.goal, "actions": list(ep.actions), "outcome": ep.outcome, "tags": list(ep.tags),
            "embedding": None if vector is None else _vector_text(vector)}
    item.update({name: value for name, value in (("problem", ep.problem), ("fix", ep.fix)) if value})
    if source is not None:  # a shared case: erasing its customer after an import erases it too
        item["derived_from"] = source
    return item


# -- import -------------------------------------------------------------------------------------


def import_memory(memory: Memory, lines: Iterable[str], *, reembed: bool = False) -> Counts:
    """Read a dump made by `export_memory` into `memory` (any engine); items already there stay.

    The dump must come from the same embedder (its vectors are stored as they are), unless
    `reembed`: then every memory is embedded again with `memory`'s embedder (and episodes'
    vectors left to be made at the first search), which moves a store to another embedder.
    A damaged line is a `StoreCorrupt` naming the line; what was read before it is kept.
    """
    items = _items(lines)
    header = next(items, None)
    if header is None or header[1].get("type") != "header" or header[1].get("format") != EXPORT_FORMAT:
        raise InvalidInput("not a fourfold export: its first line is not a fourfold-export header")
    if int(header[1].get("version", 0)) > EXPORT_VERSION:
        raise StoreCorrupt(f"the export has version {header[1]['version']}; this fourfold reads up to {EXPORT_VERSION}")
    embedder = memory.long_term.embedder
    if header[1].get("embedder") != embedder.identity and not reembed:
        raise EmbedderMismatch(
            f"the export was made with embedder {header[1].get('embedder')!r}, not {embedder.identity!r}: "
            "import it into a data dir of the same embedder, or pass reembed=True (`import --reembed`)"
        )
    writer = _Writer(memory, embedder, reembed=reembed)
    for lineno, item in items:
        writer.take(lineno, item)
    writer.flush()
    return writer.counts


def _items(lines: Iterable[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        yield lineno, json_object(line, what=f"line {lineno} of the export", error=StoreCorrupt)


class _Writer:
    """Collects items and writes them in batches, each kind through its own store."""

    def __init__(self, memory: Memory, embedder: Embedder, *, reembed: bool = False) -> None:
        self.memory, self.dimension = memory, embedder.dimension
        self.embedder = embedder if reembed else None
        self.counts = Counts()
        self.records: list[VectorRecord] = []
        self.episodes: list[Episode] = []
        self.vectors: dict[str, Vectors] = {}
        self.sources: dict[str, str] = {}
        self.current: list[FactRow] = []
        self.history: list[FactRow] = []

    def take(self, lineno: int, item: dict[str, Any]) -> None:
        kind, where = item.get("type"), f"line {lineno} of the export"
        try:
            if kind == "memory":
                # With reembed, a placeholder vector: the record is embedded again in `flush`.
                blank = None if self.embedder is None else np.zeros(self.dimension, dtype=np.float32)
                self.records.append(_record(item, self.dimension, where, vector=blank))
            elif kind == "episode":
                ep = _episode(item)
                self.episodes.append(ep)
                if item.get("embedding") is not None and self.embedder is None:
                    self.vectors[ep.id] = _vector(item["embedding"], self.dimension, where)
                if item.get("derived_from") is not None:
                    self.sources[ep.id] = str(item["derived_from"])
            elif kind in ("fact", "fact_history"):
                row = FactRow(item["key"], json.dumps(item["value"], ensure_ascii=False), item.get("description", ""),
                              float(item["at"]))
                (self.current if kind == "fact" else self.history).append(row)
            elif kind == "tool_description":
                self.memory.facts.set_tool_description(str(item["description"]))
            elif kind == "thread":
                thread = thread_from_payload(item)
                if self.memory.conversations.load(thread.scope) == thread:
                    self.counts.unchanged += 1
                else:
                    self.memory.conversations.save(thread)
                    self.counts.threads += 1
            else:
                self.counts.skipped += 1
        except (KeyError, TypeError, ValueError) as exc:
            raise StoreCorrupt(f"{where}: a {kind} item that cannot be read ({exc!r})") from None
        if len(self.records) + len(self.episodes) >= _BATCH:
            self.flush()

    def flush(self) -> None:
        if self.records and self.embedder is not None:
            vectors = self.embedder.embed_many([embedding_text(r.text, r.extra) for r in self.records])
            self.records = [replace(r, embedding=v) for r, v in zip(self.records, vectors, strict=True)]
        if self.records:
            store = self.memory.long_term.store
            with store.writing():
                there = store.existing([r.id for r in self.records])
                fresh = [r for r in self.records if r.id not in there]
                store.add(fresh)
            self.counts.tally(fresh)
            self.counts.unchanged += len(self.records) - len(fresh)
            self.records = []
        if self.episodes:
            there = self.memory.episodes.existing([ep.id for ep in self.episodes])
            self.memory.episodes.insert(self.episodes, vectors=self.vectors, derived_from=self.sources)
            self.counts.episodes += len(self.episodes) - len(there)
            self.counts.unchanged += len(there)
            self.episodes, self.vectors, self.sources = [], {}, {}
        if self.current or self.history:
            held_current, held_history = (set(rows) for rows in self.memory.facts.dump())
            self.memory.facts.restore(self.current, self.history)
            for rows, held, kind in ((self.current, held_current, "facts"), (self.history, held_history, "fact_history")):
                new = sum(row not in held for row in rows)
                setattr(self.counts, kind, getattr(self.counts, kind) + new)
                self.counts.unchanged += len(rows) - new
            self.current, self.history = [], []


def _record(item: dict[str, Any], dimension: int, where: str, *, vector: Vectors | None = None) -> VectorRecord:
    text = item["text"]
    if not isinstance(text, str) or not isinstance(item["id"], str):
        raise TypeError("id and text must be strings")
    return VectorRecord(
        id=item["id"], text=text, embedding=_vector(item["embedding"], dimension, where) if vector is None else vector, scope=item.get("scope"),
        kind=str(item.get("kind", "note")), created_at=float(item["created_at"]), metadata=dict(item.get("metadata") or {}),
        seq=int(item.get("seq", 0)), extra=tuple(str(x) for x in item.get("extra", ())),
    )


def _episode(item: dict[str, Any]) -> Episode:
    line = json.dumps({"v": 1, **{k: item[k] for k in ("id", "ts", "scope", "success", "goal", "actions", "outcome")},
                       "tags": item.get("tags", []), "problem": item.get("problem", ""),
                       "fix": item.get("fix", "")}).encode("utf-8")
    return decode_line(line)  # the same checks as the episode log's own format


# -- fourfold 0.1 -------------------------------------------------------------------------------


def migrate_legacy(data_dir: str | Path) -> Counts:
    """Move a fourfold 0.1 data dir (and its tenants) into this version's single database.

    Everything is written to the new database first; only then are the old files moved into
    `<data_dir>/fourfold-0.1-backup/` (delete it once satisfied: it still holds everything,
    forgotten data included) and the manifest rewritten. Run again after a crash: a partly
    written database is started afresh. API keys keep working.
    """
    from fourfold.stores.chroma import ChromaVectorStore, StandInEmbedder

    root = Path(data_dir)
    manifest = _legacy_manifest(root)
    identity = str(manifest["embedder"])
    embedder = StandInEmbedder(identity)
    vectors = root / VECTORS
    homes = [(COLLECTION, root)] + [
        (ChromaVectorStore.tenant_collection(home.name), home) for home in sorted((root / "tenants").glob("*")) if home.is_dir()
    ]
    total = Counts()
    for collection, home in homes:
        chroma = ChromaVectorStore.persistent(vectors, embedder, collection=collection) if vectors.is_dir() else None
        try:
            total.add(_migrate_home(home, chroma, embedder, keys=home == root))
        finally:
            if chroma is not None:
                chroma.close()
    for _, home in homes:
        backup = home / "fourfold-0.1-backup"
        backup.mkdir(mode=0o700, exist_ok=True)
        for name in _LEGACY_FILES:
            for path in home.glob(f"{name}*"):
                shutil.move(str(path), backup / path.name)
        fresh = {"format": 2, "embedder": identity, "store": "sqlite", "created_at": manifest.get("created_at", time.time()),
                 "migrated_from": "0.1", "migrated_at": time.time()}
        from fourfold._files import write_private

        write_private(home / MANIFEST, (json.dumps(fresh, indent=2) + "\n").encode("utf-8"))
    return total


def _legacy_manifest(root: Path) -> dict[str, Any]:

    try:
        manifest = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InvalidInput(f"{root} holds no fourfold data dir (no {MANIFEST})") from None
    except (OSError, ValueError) as exc:
        raise StoreCorrupt(f"{root / MANIFEST} cannot be read ({exc}); run `fourfold doctor {root}`") from None
    if not isinstance(manifest, dict) or int(manifest.get("format", 0)) != 1:
        raise InvalidInput(f"{root} is not a fourfold 0.1 data dir (its manifest says format {manifest.get('format')!r})")
    return manifest


def _migrate_home(home: Path, chroma: Any, embedder: Embedder, *, keys: bool) -> Counts:
    from fourfold.episodic.log import EpisodeLog
    from fourfold.semantic.facts import FactStore
    from fourfold.shortterm.threads import ConversationStore
    from fourfold.stores.sqlite import DATABASE, SQLiteDatabase, SQLiteVectorStore

    for leftover in (home / DATABASE, Path(f"{home / DATABASE}-wal"), Path(f"{home / DATABASE}-shm")):
        leftover.unlink(missing_ok=True)  # a migration that crashed: start afresh
    counts = Counts()
    db = SQLiteDatabase(home / DATABASE)
    try:
        if chroma is not None:
            store = SQLiteVectorStore(db, embedder_identity=embedder.identity, dimension=embedder.dimension)
            for scope in chroma.scopes():
                records = chroma.scan(scope)
                store.add(records)
                counts.tally(records)
        log = EpisodeLog(db, embedder)
        episodes, counts.skipped = _legacy_episodes(home / LegacyFile.EPISODES)
        for start in range(0, len(episodes), _BATCH):
            log.insert(episodes[start : start + _BATCH])
        counts.episodes = len(episodes)
        current, history = _legacy_facts(home / LegacyFile.FACTS)
        FactStore(db).restore(current, history)
        counts.facts, counts.fact_history = len(current), len(history)
        threads = ConversationStore(db)
        for path in sorted((home / LegacyFile.CONVERSATIONS).glob("*.json")):
            try:
                raw = json.loads(path.read_text(encoding="utf-8"))
                threads.save(thread_from_payload(raw))
                counts.threads += 1
            except (OSError, ValueError, KeyError, TypeError):
                counts.skipped += 1
        if keys:
            counts.keys = _legacy_keys(home / LegacyFile.KEYS, db)
    finally:
        db.close()
    return counts


def _legacy_episodes(path: Path) -> tuple[list[Episode], int]:
    """Every readable episode of a 0.1 log, in order; torn or damaged lines are counted, not kept."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return [], 0
    episodes: dict[str, Episode] = {}
    skipped = 0
    for line in data.split(b"\n"):
        if not line.strip():
            continue
        try:
            ep = decode_line(line)
        except ValueError:
            skipped += 1
            continue
        episodes.setdefault(ep.id, ep)
    return list(episodes.values()), skipped


def _read_legacy(path: Path, *queries: str) -> list[list[Any]]:
    """The rows of each query on a 0.1 SQLite file, read-only; a damaged file is StoreCorrupt."""
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            return [conn.execute(query).fetchall() for query in queries]
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise StoreCorrupt(f"{path} cannot be read ({exc}); run `fourfold doctor` on the data dir first") from None


def _legacy_facts(path: Path) -> tuple[list[FactRow], list[FactRow]]:
    if not path.exists():
        return [], []
    current, history = _read_legacy(path, "SELECT key, value_json, description, updated_at FROM facts",
                                    "SELECT key, value_json, description, replaced_at FROM fact_history ORDER BY id")
    return [FactRow(*r) for r in current], [FactRow(*r) for r in history]


def _legacy_keys(path: Path, db: Any) -> int:
    """Copy the key digests and their salt, so every API key of the 0.1 service keeps working."""
    if not path.exists():
        return 0
    salts, rows = _read_legacy(path, "SELECT value FROM meta WHERE name = 'salt'",
                               "SELECT id, tenant, digest, label, created_at, revoked_at FROM keys")
    salt = salts[0] if salts else None
    with db.write() as new:
        if salt is not None:
            new.execute("INSERT INTO meta (name, value) VALUES ('salt', ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                        (salt[0],))
        new.executemany("INSERT INTO keys (id, tenant, digest, label, created_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?)"
                        " ON CONFLICT (id) DO NOTHING", rows)
    return len(rows)
