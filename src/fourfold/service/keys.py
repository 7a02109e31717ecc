"""API keys: each belongs to one tenant; only an HMAC of it is stored, never the key itself."""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from fourfold.errors import InvalidInput, NotFound
from fourfold.service.tenancy import check_tenant
from fourfold.stores.database import Connection, Database
from fourfold.stores.engine import open_database

__all__ = ["ANONYMOUS", "KEY_PREFIX", "ApiKey", "KeyStore", "key_id_of"]

#: Every key looks like `ffk_<id>_<secret>`: the id is public (list, revoke), the secret is not.
KEY_PREFIX = "ffk_"
#: Who a request without a key is, on a service that allows that (loopback, before any key
#: exists); never a key id, which is 12 hex digits.
ANONYMOUS = "anonymous"
@dataclass(frozen=True, slots=True)
class ApiKey:
    """What `keys list` shows about a key: never the secret, which is not stored."""

    id: str
    tenant: str
    label: str
    created_at: float
    revoked_at: float | None = None

    @property
    def active(self) -> bool:
        return self.revoked_at is None


class KeyStore:
    """Keys in the `keys` table of the data dir's database, shared by the CLI and the service.

    The service reads it on every request, so a key created or revoked with the CLI takes
    effect at once without a restart. A path (or a postgresql:// URL) opens a database of its own.
    """

    def __init__(self, path: str | Path | Database) -> None:
        self._owns = not isinstance(path, Database)
        self.db = open_database(path)
        self.path = self.db.where
        with self._db() as conn:
            conn.execute("INSERT INTO meta (name, value) VALUES ('salt', ?) ON CONFLICT (name) DO NOTHING",
                         (secrets.token_hex(32),))
            self._salt = bytes.fromhex(conn.execute("SELECT value FROM meta WHERE name = 'salt'").fetchone()[0])

    def create(self, tenant: str, *, label: str = "") -> tuple[ApiKey, str]:
        """A new key for `tenant`: its record, and the secret key (shown once, never stored)."""
        tenant = check_tenant(tenant)
        if not isinstance(label, str) or len(label) > 200 or not label.isprintable():
            raise InvalidInput("a key label is at most 200 printable characters")
        key_id = secrets.token_hex(6)
        secret = f"{KEY_PREFIX}{key_id}_{secrets.token_urlsafe(32)}"
        record = ApiKey(key_id, tenant, label, time.time())
        with self._db() as conn:
            conn.execute(
                "INSERT INTO keys (id, tenant, digest, label, created_at) VALUES (?, ?, ?, ?, ?)",
                (key_id, tenant, self._digest(secret), label, record.created_at),
            )
        return record, secret

    def list(self, *, tenant: str | None = None) -> list[ApiKey]:
        """Every key (revoked ones too), oldest first."""
        sql = "SELECT id, tenant, label, created_at, revoked_at FROM keys"
        args: tuple[str, ...] = ()
        if tenant is not None:
            sql, args = sql + " WHERE tenant = ?", (check_tenant(tenant),)
        with self.db.read() as conn:
            rows = conn.execute(sql + " ORDER BY created_at, id", args).fetchall()
        return [ApiKey(*row) for row in rows]

    def revoke(self, key_id: str) -> ApiKey:
        """Revoke a key by id (or by the key itself); NotFound if unknown. Idempotent."""
        key_id = key_id_of(key_id) or key_id
        with self._db() as conn:
            conn.execute(
                "UPDATE keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", (time.time(), key_id)
            )
            row = conn.execute(
                "SELECT id, tenant, label, created_at, revoked_at FROM keys WHERE id = ?", (key_id,)
            ).fetchone()
        if row is None:
            raise NotFound(f"no key with id {key_id!r}")
        return ApiKey(*row)

    def authenticate(self, key: str) -> str | None:
        """The tenant of an active key; None for an unknown, malformed or revoked key."""
        key_id = key_id_of(key)
        if key_id is None:
            return None
        # A read: every request authenticates, and a write transaction here would queue each
        # request behind every other write to the data dir (and its fsync).
        with self.db.read() as conn:
            row = conn.execute(
                "SELECT tenant, digest FROM keys WHERE id = ? AND revoked_at IS NULL", (key_id,)
            ).fetchone()
        if row is None or not hmac.compare_digest(row[1], self._digest(key)):
            return None
        return str(row[0])

    def has_keys(self) -> bool:
        """True once any key was created, even if all are revoked since (auth stays on)."""
        with self.db.read() as conn:
            return conn.execute("SELECT 1 FROM keys LIMIT 1").fetchone() is not None

    def close(self) -> None:
        if self._owns:
            self.db.close()

    def _digest(self, key: str) -> str:
        return hmac.new(self._salt, key.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()

    @contextmanager
    def _db(self) -> Iterator[Connection]:
        with self.db.write() as conn:
            yield conn


def key_id_of(key: object) -> str | None:
    """The id part of `ffk_<id>_<secret>`, or None when the text is not shaped like a key."""
    if not isinstance(key, str) or not key.startswith(KEY_PREFIX) or len(key) > 200:
        return None
    key_id, sep, secret = key[len(KEY_PREFIX) :].partition("_")
    if not sep or not secret or len(key_id) != 12 or not all(c in "0123456789abcdef" for c in key_id):
        return None
    return key_id
