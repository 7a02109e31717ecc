"""`fourfold doctor`: check a data dir, and repair what can be repaired without losing data.

Repairs never delete user data: unreadable episode lines and damaged files are moved to a
quarantine file next to the original (`*.quarantine`, `*.damaged-<time>`), where a human
can read them. Only stale temporary files, which never held an acknowledged write, are
removed.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from fourfold._files import write_private
from fourfold._manifest import FORMAT, MANIFEST, VECTORS, LegacyFile
from fourfold.errors import InvalidInput
from fourfold.salvage import copy_readable, readonly_db
from fourfold.shortterm.threads import THREAD_FORMAT
from fourfold.stores.chroma import ChromaVectorStore
from fourfold.stores.sqlite import DATABASE, SCHEMA_VERSION, SQLiteDatabase

__all__ = ["Finding", "Report", "check", "repair"]

#: A temporary file older than this is left over from a crashed writer.
STALE_AFTER = 60.0


@dataclass(frozen=True, slots=True)
class Finding:
    """One problem: which file, what is wrong, and what to do (or what repair will do)."""

    file: str
    problem: str
    action: str
    repairable: bool

    def __str__(self) -> str:
        how = "repairable" if self.repairable else "needs you"
        return f"{self.file}: {self.problem} -> {self.action} ({how})"


@dataclass(slots=True)
class Report:
    data_dir: Path | str
    findings: list[Finding] = field(default_factory=list)
    repaired: list[str] = field(default_factory=list)
    checked: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.findings


def check(data_dir: str | os.PathLike[str]) -> Report:
    """Look at every file fourfold keeps in data_dir (or at a postgresql:// database); change nothing."""
    from fourfold.stores.database import is_url

    if is_url(data_dir):
        return _check_database(str(data_dir))
    root = _root(data_dir)
    report = Report(root)
    for checker in (_check_manifest, _check_legacy, _check_facts, _check_vectors, _check_conversations, _check_tmp):
        report.findings.extend(checker(root, report))
    return report


def repair(data_dir: str | os.PathLike[str]) -> Report:
    """Repair what `check` marks repairable, then check again; the report lists both."""
    from fourfold.stores.database import is_url

    if is_url(data_dir):
        return check(data_dir)  # nothing in a PostgreSQL database is repaired from here
    root = _root(data_dir)
    done: list[str] = []
    for finding in check(root).findings:
        if finding.repairable:
            done.extend(_REPAIRS[_kind(finding)](root, finding))
    report = check(root)
    report.repaired = done
    return report


def _check_database(url: str) -> Report:
    """Can fourfold open this PostgreSQL database, and does it have pgvector for large scopes?"""
    from fourfold.errors import FourfoldError, StoreUnavailable
    from fourfold.stores.postgres import PostgresDatabase, redact_url

    report = Report(redact_url(url), checked=["connection", "schema", "pgvector"])
    try:
        db = PostgresDatabase(url, timeout=10.0)
    except FourfoldError as exc:
        action = ("check that the server runs and accepts this URL's user and password"
                  if isinstance(exc, StoreUnavailable) else "see the message")
        report.findings.append(Finding(redact_url(url), str(exc), action, False))
        return report
    try:
        with db.read() as conn:
            vector = conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone()
    finally:
        db.close()
    if vector is None:
        report.findings.append(Finding(
            db.where, "the pgvector extension is not installed: scopes past 50,000 records are read whole",
            "run CREATE EXTENSION vector as a superuser (or install pgvector on the server)", False,
        ))
    return report


def _root(data_dir: str | os.PathLike[str]) -> Path:
    if not isinstance(data_dir, (str, os.PathLike)) or "\x00" in str(data_dir):
        raise InvalidInput(f"data dir must be a path, got {data_dir!r:.80}")
    root = Path(data_dir)
    if not root.is_dir():
        raise InvalidInput(f"{root} is not a directory")
    return root


def _kind(finding: Finding) -> str:
    return finding.problem.split(":", 1)[0]


# -- manifest -------------------------------------------------------------------------------


def _check_manifest(root: Path, report: Report) -> list[Finding]:
    path = root / MANIFEST
    report.checked.append(MANIFEST)
    if not path.exists():
        return []
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        fmt, embedder = int(manifest["format"]), str(manifest["embedder"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        identity = _collection_identity(root)
        action = (f"move it aside and rewrite it for embedder {identity!r} (read from the vector store)"
                  if identity else "restore it from a backup; the vector store does not say which embedder built it")
        return [Finding(str(path), f"manifest: unreadable ({exc})", action, identity is not None)]
    if fmt > FORMAT:
        return [Finding(str(path), f"newer: format {fmt}, this fourfold reads {FORMAT}", "upgrade fourfold", False)]
    identity = _collection_identity(root)
    if identity is not None and identity != embedder:
        return [Finding(str(root), f"embedder: vectors built with {identity!r}, manifest says {embedder!r}",
                        "re-index into a new data dir with one embedder", False)]
    return []


def _collection_identity(root: Path) -> str | None:
    """The embedder identity recorded by the vector store (the database, or Chroma's metadata)."""
    database = root / DATABASE
    if database.exists():
        try:
            with readonly_db(database) as conn:
                row = conn.execute("SELECT value FROM meta WHERE name = 'embedder'").fetchone()
        except sqlite3.Error:
            row = None
        if row:
            return str(row[0])
    return ChromaVectorStore.recorded_identity(root / VECTORS)


def _repair_manifest(root: Path, finding: Finding) -> list[str]:
    identity = _collection_identity(root)
    if identity is None:
        return []
    path = root / MANIFEST
    aside = _aside(path)
    os.replace(path, aside)
    store = "sqlite" if (root / DATABASE).exists() and not (root / VECTORS).exists() else "chroma"
    manifest = {"format": FORMAT, "embedder": identity, "store": store, "created_at": time.time(),
                "repaired_by": "fourfold doctor"}
    _write_atomically(path, (json.dumps(manifest, indent=2) + "\n").encode())
    return [f"{path}: rewritten for {identity!r}; the damaged copy is {aside.name}"]


# -- facts ----------------------------------------------------------------------------------


def _check_facts(root: Path, report: Report) -> list[Finding]:
    """The SQLite files: the data dir's database, and a 0.1 data dir's fact store."""
    findings: list[Finding] = []
    for name in (DATABASE, LegacyFile.FACTS):
        path = root / name
        if not path.exists():
            continue
        report.checked.append(name)
        problem = _sqlite_problem(path)
        if problem is None:
            findings += _schema_version(path)
            continue
        salvage = _salvageable(path)
        action = ("copy every readable row into a fresh file; the damaged file is kept beside it" if salvage
                  else "restore it from a backup, or move it aside to start an empty store")
        findings.append(Finding(str(path), f"database: {problem}", action, salvage))
    return findings


def _schema_version(path: Path) -> list[Finding]:
    try:
        with readonly_db(path) as conn:
            row = conn.execute("SELECT value FROM meta WHERE name = 'schema_version'").fetchone()
    except sqlite3.Error:
        return []
    if row is not None and str(row[0]).isdigit() and int(row[0]) > SCHEMA_VERSION:
        return [Finding(str(path), f"newer: schema {row[0]}, this fourfold knows {SCHEMA_VERSION}",
                        "upgrade fourfold", False)]
    return []


def _sqlite_problem(path: Path) -> str | None:
    try:
        with readonly_db(path) as conn:
            result = [r[0] for r in conn.execute("PRAGMA integrity_check").fetchall()]
    except sqlite3.Error as exc:
        return f"not a readable SQLite database ({exc})"
    return None if result == ["ok"] else "integrity check failed: " + "; ".join(result[:3])


def _salvageable(path: Path) -> bool:
    try:
        with readonly_db(path) as conn:
            conn.execute("SELECT name FROM sqlite_master LIMIT 1").fetchall()
    except sqlite3.Error:
        return False
    return True


def _repair_database(root: Path, finding: Finding) -> list[str]:
    """Copy readable rows table by table into a new file; rows that cannot be read are skipped."""
    path = Path(finding.file)
    fresh = path.with_name(f".{path.name}.salvage")
    for leftover in (fresh, Path(f"{fresh}-wal"), Path(f"{fresh}-shm")):
        leftover.unlink(missing_ok=True)
    salvage = copy_readable(path, fresh)
    aside = _aside(path)
    os.replace(path, aside)
    for suffix in ("-wal", "-shm"):
        side = Path(f"{path}{suffix}")
        if side.exists():
            os.replace(side, Path(f"{aside}{suffix}"))
    os.replace(fresh, path)
    return [f"{path}: salvaged {salvage.total} row(s) into a fresh file ({salvage.summary()}); "
            f"the damaged file is {aside.name}"]


# -- vectors --------------------------------------------------------------------------------


def _check_vectors(root: Path, report: Report) -> list[Finding]:
    path = ChromaVectorStore.catalog_file(root / VECTORS)
    report.checked.append(f"{VECTORS}/")
    if not path.exists():
        return []
    problem = _sqlite_problem(path)
    if problem is not None:
        return [Finding(str(path), f"vectors: {problem}",
                        "restore vectors/ from a backup, or re-index into a new data dir", False)]
    problem = _open_problem(root)
    if problem is not None:
        return [Finding(str(root / VECTORS), f"vectors: cannot be opened ({problem})",
                        "restore vectors/ from a backup, or re-index into a new data dir", False)]
    return []


def _open_problem(root: Path) -> str | None:
    """Open the embedded store the way fourfold does, with a stand-in for its embedder."""
    import numpy as np

    from fourfold.embeddings.base import Embedder
    from fourfold.errors import EmbedderMismatch, FourfoldError

    identity = _collection_identity(root)
    if identity is None:
        return "the collection does not record which embedder built it"

    class _Recorded(Embedder):
        def __init__(self) -> None:
            self.name, _, dim = str(identity).rpartition(":")
            self.dimension = int(dim) if dim.isdigit() else 0

        def embed_batch(self, texts: Sequence[str]) -> np.typing.NDArray[np.float32]:
            return np.zeros((len(texts), self.dimension), dtype=np.float32)

    try:
        store = ChromaVectorStore.persistent(root / VECTORS, _Recorded(), lock_timeout=30.0)
        store.count()
        store.close()
    except EmbedderMismatch as exc:
        return str(exc)
    except FourfoldError as exc:
        return str(exc)
    return None


# -- conversation threads -------------------------------------------------------------------


def _check_conversations(root: Path, report: Report) -> list[Finding]:
    path = root / DATABASE
    report.checked.append("threads")
    if not path.exists() or _sqlite_problem(path) is not None:
        return []
    found = []
    with readonly_db(path) as conn:
        for scope, payload in conn.execute("SELECT scope, payload FROM threads"):
            try:
                raw = json.loads(payload)
                fmt = int(raw.get("format", 0))
            except (ValueError, TypeError, AttributeError) as exc:
                found.append(Finding(f"{path}#threads/{scope}", f"conversation: unreadable thread ({exc})",
                                     "delete it; the customer starts a new thread", True))
                continue
            if fmt > THREAD_FORMAT:
                found.append(Finding(f"{path}#threads/{scope}", f"newer: thread format {fmt}", "upgrade fourfold", False))
    return found


def _repair_conversation(root: Path, finding: Finding) -> list[str]:
    scope = finding.file.partition("#threads/")[2]
    db = SQLiteDatabase(root / DATABASE)
    try:
        with db.write() as conn:
            conn.execute("DELETE FROM threads WHERE scope = ?", (scope,))
        db.erased()
    finally:
        db.close()
    return [f"deleted the unreadable thread of {scope!r}"]


# -- a data dir of fourfold 0.1 --------------------------------------------------------------


def _check_legacy(root: Path, report: Report) -> list[Finding]:
    legacy = [name for name in LegacyFile if (root / name).exists()]
    if not legacy or (root / DATABASE).exists():
        return []
    return [Finding(str(root), f"legacy: written by fourfold 0.1 ({', '.join(legacy)})",
                    f"run `fourfold migrate {root}` once", False)]


# -- temporary files ------------------------------------------------------------------------


def _tmp_files(root: Path) -> list[Path]:
    patterns = ["*.tmp", f"{VECTORS}/*.tmp", f".{DATABASE}.salvage"]
    now = time.time()
    found: set[Path] = set()
    for pattern in patterns:
        for path in root.glob(pattern):
            try:
                if path.is_file() and now - path.stat().st_mtime > STALE_AFTER:
                    found.add(path)
            except FileNotFoundError:
                continue
    return sorted(found)


def _check_tmp(root: Path, report: Report) -> list[Finding]:
    stale = _tmp_files(root)
    if not stale:
        return []
    names = ", ".join(str(p.relative_to(root)) for p in stale[:5]) + (" ..." if len(stale) > 5 else "")
    return [Finding(str(root), f"tmp: {len(stale)} stale temporary file(s) from a crashed write ({names})",
                    "remove them (they never held an acknowledged write, but may hold forgotten text)", True)]


def _repair_tmp(root: Path, finding: Finding) -> list[str]:
    stale = _tmp_files(root)
    for path in stale:
        path.unlink(missing_ok=True)
    return [f"removed {len(stale)} stale temporary file(s)"] if stale else []


_REPAIRS = {
    "manifest": _repair_manifest,
    "database": _repair_database,
    "conversation": _repair_conversation,
    "tmp": _repair_tmp,
}


# -- helpers --------------------------------------------------------------------------------


def _aside(path: Path) -> Path:
    return path.with_name(f"{path.name}.damaged-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}")


def _write_atomically(path: Path, data: bytes) -> None:
    write_private(path, data)  # a repaired log holds customer text: 0600, like the original
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
