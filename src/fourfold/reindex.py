"""Move a store to another embedder: re-embed every memory and document chunk in place.

A store records the embedder that made its vectors and refuses another one (vectors of two
models rank nonsense). `reindex` is the way across: it reads each text back, embeds it with
the new embedder, and in one write transaction replaces every vector and the recorded
embedder, so readers see either the old store or the new one, never a mix. Episodes'
vectors are dropped there too; they are derived data, embedded again at the first search.

SQLite data dirs and PostgreSQL databases are re-embedded in place. A data dir on Chroma
is not: export it, and `import_memory(..., reembed=True)` it into a new data dir opened with
the new embedder.
Stop services using the store first: a process that still holds the old embedder would
keep writing its vectors.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fourfold._manifest import MANIFEST, read_manifest, record_embedder, store_kind
from fourfold.embeddings.base import Embedder
from fourfold.errors import InvalidInput, StoreUnavailable
from fourfold.stores.database import Connection, Database, is_url
from fourfold.stores.engine import open_database
from fourfold.stores.sql import memories_version_name, scope_of
from fourfold.stores.sqlite import DATABASE
from fourfold.stores.vector import embedding_text

__all__ = ["Reindexed", "reindex"]

#: Texts embedded per call, so progress moves and memory stays flat on a large store.
BATCH = 256

#: (label, done, total) after each batch, as `DocumentStore.ingest_paths` reports.
Progress = Callable[[str, int, int], None]

_SELECT = "SELECT id, scope, text, extra FROM memories ORDER BY scope, created_at, seq"


@dataclass(frozen=True)
class Reindexed:
    """What a reindex did: the identities before and after, and how many vectors it rewrote."""

    before: str
    after: str
    memories: int
    episodes_cleared: int


def reindex(
    target: str | os.PathLike[str], embedder: Embedder, *, progress: Progress | None = None, batch: int = BATCH
) -> Reindexed:
    """Re-embed the store at `target` (a data dir, or a postgresql:// URL) with `embedder`.

    Nothing changes when the store already uses `embedder`. On any error before the final
    transaction commits, the store is left as it was.
    """
    if not isinstance(embedder, Embedder):
        raise InvalidInput(f"embedder must be an Embedder, not {type(embedder).__name__}")
    data_dir = None if is_url(target) else _sqlite_data_dir(Path(target))
    db = open_database(str(target) if data_dir is None else data_dir / DATABASE)
    try:
        before = _recorded(db)
        if before is None or before == embedder.identity:
            if data_dir is not None and (data_dir / MANIFEST).exists():
                record_embedder(data_dir, embedder.identity)
            return Reindexed(before or embedder.identity, embedder.identity, 0, 0)
        with db.read() as conn:
            rows = conn.execute(_SELECT).fetchall()
        vectors = _embed(embedder, rows, progress, batch)
        with db.write() as conn:
            # Memories written since the first read are embedded now, inside the transaction.
            current = conn.execute(_SELECT).fetchall()
            vectors.update(_embed(embedder, [r for r in current if r[0] not in vectors], None, batch))
            conn.executemany("UPDATE memories SET embedding = ? WHERE id = ?",
                             [(vectors[r[0]], r[0]) for r in current])
            conn.execute("UPDATE meta SET value = ? WHERE name = 'embedder'", (embedder.identity,))
            cleared = conn.execute(
                "UPDATE episodes SET embedding = NULL, embedder = NULL WHERE embedder IS NOT NULL").rowcount
            if data_dir is None:
                _drop_ann(conn)
            db.bump(conn, {memories_version_name(scope_of(r[1])) for r in current})
        if data_dir is not None and (data_dir / MANIFEST).exists():
            record_embedder(data_dir, embedder.identity)
        return Reindexed(before, embedder.identity, len(current), max(int(cleared), 0))
    finally:
        db.close()


def _sqlite_data_dir(data_dir: Path) -> Path:
    """The data dir, checked: it exists, is not 0.1, and keeps its vectors in its database."""
    if not (data_dir / DATABASE).is_file():
        raise StoreUnavailable(f"{data_dir} is not a fourfold data dir (no {DATABASE}); nothing to reindex")
    manifest = read_manifest(data_dir) if (data_dir / MANIFEST).exists() else None
    if store_kind(manifest) == "chroma":
        raise InvalidInput(
            f"{data_dir} keeps its memories on Chroma, which reindex cannot rewrite in place: "
            "`fourfold export` it, then `fourfold --data-dir NEW_DIR --embedder SPEC import --reembed` the file"
        )
    return data_dir


def _recorded(db: Database) -> str | None:
    with db.read() as conn:
        row = conn.execute("SELECT value FROM meta WHERE name = 'embedder'").fetchone()
    return None if row is None else str(row[0])


def _embed(embedder: Embedder, rows: Sequence[tuple[str, str, str, str]], progress: Progress | None,
           batch: int) -> dict[str, bytes]:
    """id -> the new vector's bytes; the text is embedded with its facts, as `remember` does."""
    import json

    out: dict[str, bytes] = {}
    for start in range(0, len(rows), batch):
        part = rows[start : start + batch]
        texts = [embedding_text(text, json.loads(extra)) for _id, _scope, text, extra in part]
        vectors = np.ascontiguousarray(embedder.embed_many(texts), dtype=np.float32)
        if vectors.shape != (len(part), embedder.dimension):
            raise InvalidInput(f"{embedder.identity} returned vectors of shape {vectors.shape}")
        out.update((r[0], v.tobytes()) for r, v in zip(part, vectors, strict=True))
        if progress is not None:
            progress("memories", start + len(part), len(rows))
    return out


def _drop_ann(conn: Connection) -> None:
    """PostgreSQL: drop the ANN features (built from the old vectors, sized to the old
    dimension); the next open adds them back and large scopes are promoted again."""
    conn.execute("ALTER TABLE memories DROP COLUMN IF EXISTS ann, DROP COLUMN IF EXISTS terms,"
                 " DROP COLUMN IF EXISTS context, DROP COLUMN IF EXISTS length")
    conn.execute("DROP TABLE IF EXISTS large_scopes")
