"""Connections to PostgreSQL: the driver (imported only when used), its errors as fourfold's,
text that may hold NUL, and a pool of connections shared by a process's databases of one URL."""

from __future__ import annotations

import re
import threading
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from fourfold._extras import require
from fourfold.errors import (
    FourfoldError,
    InvalidInput,
    LockTimeout,
    StorageFull,
    StoreCorrupt,
    StoreReadOnly,
    StoreUnavailable,
)

if TYPE_CHECKING:
    import psycopg

__all__ = ["Pool", "psycopg_module", "redact_url", "release_pool", "shared_pool", "translate", "unescape_rows"]


def psycopg_module() -> Any:
    return require("psycopg", "postgres", what="PostgreSQL")


def redact_url(url: str) -> str:
    """The URL without its password (for messages and logs)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    user = f"{parts.username}:***@" if parts.username else ":***@"
    return urlunsplit(parts._replace(netloc=user + host))


class Pool:
    """Idle connections to one server, shared by the databases (schemas) of one URL.

    At most `size` are lent at once; a caller waits up to its timeout for one. A connection
    that broke is dropped with every idle one (a restarted server broke them all), and a
    refused connection fails at once with StoreUnavailable instead of waiting for a pool.
    """

    def __init__(self, url: str, *, size: int, connect_timeout: float) -> None:
        self.url = url
        self.where = redact_url(url)
        self.size = size
        self.connect_timeout = connect_timeout
        self._idle: list[psycopg.Connection[Any]] = []
        self._lent = threading.BoundedSemaphore(size)
        self._guard = threading.Lock()
        self.users = 0
        self.purpose = ""
        self.closed = False

    def get(self, timeout: float) -> psycopg.Connection[Any]:
        if not self._lent.acquire(timeout=max(timeout, 0.0)):
            raise LockTimeout(
                f"all {self.size} connections to {self.where} stayed in use for {timeout:g}s; "
                "raise the pool size (?pool=N in the URL) or PostgreSQL's max_connections"
            )
        try:
            with self._guard:
                if self.closed:
                    raise StoreUnavailable(f"the connection to {self.where} is closed")
                if self._idle:
                    return self._idle.pop()
            return self._connect()
        except BaseException:
            self._lent.release()
            raise

    def _connect(self) -> psycopg.Connection[Any]:
        pg = psycopg_module()
        try:
            conn: psycopg.Connection[Any] = pg.Connection.connect(
                self.url, autocommit=True, connect_timeout=max(1, round(self.connect_timeout))
            )
        except pg.Error as exc:
            raise translate(exc, self.url) from None
        _register_text(conn)
        return conn

    def put(self, conn: psycopg.Connection[Any], *, broken: bool = False) -> None:
        try:
            broken = broken or conn.broken or conn.closed or conn.info.transaction_status != 0
            stale: list[psycopg.Connection[Any]] = []
            with self._guard:
                if broken or self.closed:
                    stale, self._idle = (self._idle, []) if broken else ([], self._idle)
                    stale.append(conn)
                else:
                    self._idle.append(conn)
            for old in stale:
                old.close()
        finally:
            self._lent.release()

    def close(self) -> None:
        with self._guard:
            self.closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()


_POOLS: dict[tuple[str, str], Pool] = {}
_POOLS_GUARD = threading.Lock()


def shared_pool(url: str, purpose: str, *, size: int, connect_timeout: float) -> Pool:
    """The process's pool of connections to `url` for `purpose`, shared by its schemas."""
    with _POOLS_GUARD:
        pool = _POOLS.get((url, purpose))
        if pool is None or pool.closed:
            pool = _POOLS[(url, purpose)] = Pool(url, size=size, connect_timeout=connect_timeout)
            pool.purpose = purpose
        pool.users += 1
        return pool


def release_pool(pool: Pool) -> None:
    with _POOLS_GUARD:
        pool.users -= 1
        if pool.users > 0:
            return
        if _POOLS.get((pool.url, pool.purpose)) is pool:
            del _POOLS[(pool.url, pool.purpose)]
    pool.close()


#: PostgreSQL text cannot hold NUL, which SQLite (and fourfold) can: NUL is stored as ESC "0"
#: and ESC itself as ESC "1". ESC is a Unicode noncharacter, which no interchanged text holds.
_ESC = "\ufdd0"
_ESCAPED = re.compile(_ESC + "(.)", re.DOTALL)


def _escape(text: str) -> str:
    if "\x00" not in text and _ESC not in text:
        return text
    return text.replace(_ESC, _ESC + "1").replace("\x00", _ESC + "0")


def _unescape(text: str) -> str:
    if _ESC not in text:
        return text
    return _ESCAPED.sub(lambda m: "\x00" if m.group(1) == "0" else _ESC, text)


def _register_text(conn: psycopg.Connection[Any]) -> None:
    """Make the connection store text with NUL characters (escaped), as SQLite does; rows
    are unescaped as they are fetched (`_unescape_rows`)."""
    from psycopg.types.string import StrDumperUnknown

    class Dumper(StrDumperUnknown):
        def dump(self, obj: str) -> Any:
            return super().dump(_escape(obj))

    conn.adapters.register_dumper(str, Dumper)


def unescape_rows(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    out = rows
    for i, row in enumerate(rows):
        for value in row:
            if value.__class__ is str and _ESC in value:
                if out is rows:
                    out = list(rows)
                out[i] = tuple(_unescape(v) if v.__class__ is str else v for v in row)
                break
    return out


def translate(exc: Exception, url: str, *, timeout: float | None = None) -> FourfoldError:
    """A psycopg error as the fourfold error a caller can act on; never shows the password."""
    psycopg = psycopg_module()
    errors = psycopg.errors
    where = redact_url(url)
    password = urlsplit(url).password
    message = " ".join(str(exc).split())
    if password:
        message = message.replace(password, "***")
    if isinstance(exc, (errors.LockNotAvailable, errors.DeadlockDetected)):
        waited = f" for {timeout:g}s" if timeout is not None else ""
        return LockTimeout(
            f"{where} stayed locked by another writer{waited} ({message}). Retry, or raise "
            "MemoryConfig.lock_timeout if writers are slow."
        )
    if isinstance(exc, errors.DiskFull):
        return StorageFull(
            f"the disk of the PostgreSQL server at {where} is full ({message}); the write was not stored. "
            "Free space on the server, and write again."
        )
    if isinstance(exc, errors.ReadOnlySqlTransaction):
        return StoreReadOnly(
            f"PostgreSQL at {where} accepts reads only ({message}): a standby, or a read-only "
            "database. Point fourfold at the primary, and write again."
        )
    if isinstance(exc, (errors.DataCorrupted, errors.IndexCorrupted)):
        return StoreCorrupt(f"PostgreSQL reports damaged data in {where} ({message}); restore it from a backup.")
    if isinstance(exc, (errors.UndefinedTable, errors.UndefinedColumn, errors.InvalidSchemaName)):
        return StoreCorrupt(
            f"{where} lacks fourfold's tables ({message}): was the schema dropped or changed by hand?"
        )
    if isinstance(exc, errors.InsufficientPrivilege):
        return StoreUnavailable(f"PostgreSQL refused an operation on {where} ({message}); grant the user rights on it.")
    if isinstance(exc, (psycopg.DataError, errors.CharacterNotInRepertoire, errors.UntranslatableCharacter)):
        return InvalidInput(f"PostgreSQL cannot store this value ({message})")
    if isinstance(exc, psycopg.OperationalError):
        return StoreUnavailable(f"cannot reach PostgreSQL at {where}: {message}")
    return StoreUnavailable(f"PostgreSQL error on {where}: {message}")
