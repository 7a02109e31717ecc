"""The database seam: what every store of a data dir needs from its SQL engine.

Stores (memories, episodes, facts, threads, keys) are written once, in SQL both engines
speak (`?` placeholders, `ON CONFLICT`, `RETURNING`); an engine supplies transactions, its
schema, and erasure. Versions are the engine-independent part: a named counter (one per
memory scope, one for the facts...) that every write transaction moves on, taken from one
clock row whose update also orders writers, so readers can keep caches and check one small
row instead of dropping everything whenever anyone wrote.
"""

from __future__ import annotations

import threading
import weakref
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any, Protocol

from fourfold.errors import FourfoldError, StoreCorrupt, StoreUnavailable
from fourfold.stores.vector import chunked

__all__ = ["EPISODE_INDEXES", "Connection", "Cursor", "Database", "Lock", "is_url"]

#: URL schemes that name a PostgreSQL database rather than a file.
URL_SCHEMES = ("postgresql://", "postgres://")
#: Names per `IN (...)` list of a version statement, well under every engine's parameter limit.
_NAMES_PER_STATEMENT = 500


class Cursor(Protocol):
    """The part of a DB-API cursor the stores use."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Connection(Protocol):
    """A connection inside a transaction: statements with `?` placeholders."""

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> Cursor: ...

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> Any: ...


#: The episode log's indexes and its derived-case links, the same SQL on every engine; each
#: schema creates its own `episodes_log` index (the log's skeleton in log order) first.
EPISODE_INDEXES = (
    "DROP INDEX IF EXISTS episodes_seq",  # (seq, pos): the prefix of episodes_log
    # A scope's successes in log order without touching its failures or sorting (its first search).
    "CREATE INDEX IF NOT EXISTS episodes_group ON episodes (scope, success, seq, pos)",
    "DROP INDEX IF EXISTS episodes_scope",  # (scope): the prefix of episodes_group
    # The successes still to embed (no vector, or another embedder's), found without a scan.
    "CREATE INDEX IF NOT EXISTS episodes_embedder ON episodes (embedder) WHERE success = 1",
    # An episode derived from another scope's (a shared case from a customer's ticket): the
    # link is kept only so that erasing that scope erases what was derived from it.
    "CREATE TABLE IF NOT EXISTS episode_sources (episode_id TEXT PRIMARY KEY, source_scope TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS episode_sources_scope ON episode_sources (source_scope)",
)


class Lock(Protocol):
    """A named lock shared by every process using the database; re-entrant within a thread."""

    def hold(self, timeout: float | None = None) -> AbstractContextManager[None]: ...


class Database(ABC):
    """A SQL database shared by the stores of a data dir (or of a whole deployment).

    `read()` is a consistent snapshot, `write()` a transaction that holds the write lock
    of what it touches; both nest within one thread, and the outermost one commits.
    """

    #: Where the data lives, for messages (a path, or a URL without its password).
    where: str
    #: The error the last write met when the store itself refused it (a full disk, a
    #: read-only or damaged store, a server out of reach); None once a write commits again.
    #: What a service's health check reports.
    degraded: FourfoldError | None = None

    @contextmanager
    def _watched(self) -> Iterator[None]:
        """Around a write transaction: note whether the store took it (`degraded`)."""
        try:
            yield
        except (StoreUnavailable, StoreCorrupt) as exc:
            self.degraded = exc
            raise
        self.degraded = None

    @abstractmethod
    def read(self) -> AbstractContextManager[Connection]:
        """A consistent snapshot for several statements."""

    @abstractmethod
    def write(self) -> AbstractContextManager[Connection]:
        """A write transaction."""

    @abstractmethod
    def erased(self) -> bool:
        """Called after a transaction that erased data commits: make the engine forget it too."""

    @abstractmethod
    def close(self) -> None:
        """Release connections; further use raises StoreUnavailable."""

    def lock(self, name: str) -> Lock:
        """A lock named `name`, held across transactions (a conversation turn), by whichever
        process of whichever machine uses this database; released if its holder dies.

        Re-entrant within a thread: the same object comes back for a name while anyone holds it.
        """
        with _NAMED_GUARD:
            named: weakref.WeakValueDictionary[str, Lock] = self.__dict__.setdefault(
                "_named_locks", weakref.WeakValueDictionary()
            )
            found = named.get(name)
            if found is None:
                found = named[name] = self._new_lock(name)
            return found

    @abstractmethod
    def _new_lock(self, name: str) -> Lock:
        """A new lock object for `name` (`lock` hands out one per name)."""

    def version(self, name: str) -> int:
        """The version of `name` (0: never written, or erased); changes with every write to it."""
        with self.read() as conn:
            row = conn.execute("SELECT version FROM versions WHERE name = ?", (name,)).fetchone()
        return int(row[0]) if row else 0

    def versions(self, names: Sequence[str]) -> dict[str, int]:
        """The versions of several names in one statement (0 for a name never written)."""
        marks = ",".join("?" * len(names))
        with self.read() as conn:
            found = dict(conn.execute(f"SELECT name, version FROM versions WHERE name IN ({marks})", list(names)).fetchall())
        return {name: int(found.get(name, 0)) for name in names}

    def bump(self, conn: Connection, names: Iterable[str], *, drop: bool = False) -> dict[str, tuple[int, int]]:
        """Inside a write: move each name to a new version; returns name -> (before, after).

        `drop` removes the name instead (its version reads 0), for an erased scope whose
        name itself should not stay on disk. The clock row's update serializes writers that
        bump, so versions (and rows stamped with them) follow commit order.
        """
        wanted = list(dict.fromkeys(names))
        if not wanted:
            return {}
        # A statement per part of the names, not per name: a batch may write to a thousand scopes.
        before: dict[str, int] = {}
        for part in chunked(wanted, _NAMES_PER_STATEMENT):
            marks = ",".join("?" * len(part))
            before.update(conn.execute(f"SELECT name, version FROM versions WHERE name IN ({marks})", part).fetchall())
            if drop:
                conn.execute(f"DELETE FROM versions WHERE name IN ({marks})", part)
        if drop:
            return {name: (int(before.get(name, 0)), 0) for name in wanted}
        # The names take the clock's next values in order, as one tick per name would give.
        last = int(conn.execute("UPDATE clock SET value = value + ? WHERE id = 1 RETURNING value",
                                (len(wanted),)).fetchone()[0])
        changes = {name: (int(before.get(name, 0)), last - len(wanted) + 1 + i) for i, name in enumerate(wanted)}
        conn.executemany(
            "INSERT INTO versions (name, version) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET version = excluded.version",
            [(name, after) for name, (_, after) in changes.items()],
        )
        return changes


_NAMED_GUARD = threading.Lock()


def is_url(target: object) -> bool:
    """Whether `target` names a PostgreSQL database (postgresql://...) rather than a path."""
    return isinstance(target, str) and target.lower().startswith(URL_SCHEMES)
