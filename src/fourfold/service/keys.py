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
from typing import Literal

from fourfold.errors import InvalidInput, NotFound
from fourfold.service.tenancy import check_tenant
from fourfold.stores.database import Connection, Database
from fourfold.stores.engine import open_database

__all__ = ["ANONYMOUS", "KEY_PREFIX", "ROLES", "ApiKey", "KeyStore", "Role", "allows", "check_role", "key_id_of"]

#: Every key looks like `ffk_<id>_<secret>`: the id is public (list, revoke), the secret is not.
KEY_PREFIX = "ffk_"
#: Who a request without a key is, on a service that allows that (loopback, before any key
#: exists); never a key id, which is 12 hex digits.
ANONYMOUS = "anonymous"
#: What a key may do, each role all the one before it may:
#: - agent: read and write its tenant's customers' memories, episodes and conversations, read
#:   facts, documents and shared cases, run turns and resolves, send a case for review;
#: - operator: also set facts and documents, and review and delete shared cases;
#: - admin: also manage the tenant's keys.
Role = Literal["agent", "operator", "admin"]
ROLES: tuple[Role, ...] = ("agent", "operator", "admin")


def check_role(role: object) -> Role:
    if role not in ROLES:
        raise InvalidInput(f"a key's role is one of {', '.join(ROLES)}, got {role!r}")
    return role  # type: ignore[return-value]


def allows(role: Role, needed: Role) -> bool:
    """Whether a key of `role` may do what `needed` may."""
    return ROLES.index(role) >= ROLES.index(needed)


@dataclass(frozen=True, slots=True)
class ApiKey:
    """What `keys list` shows about a key: never the secret, which is not stored."""

    id: str
    tenant: str
    label: str
    created_at: float
    revoked_at: float | None = None
    role: Role = "agent"

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

    def create(self, tenant: str, *, label: str = "", role: Role = "agent") -> tuple[ApiKey, str]:
        """A new key for `tenant` with `role` (see `Role`): its record, and the secret key (shown
        once, never stored)."""
        tenant, role = check_tenant(tenant), check_role(role)
        if not isinstance(label, str) or len(label) > 200 or not label.isprintable():
            raise InvalidInput("a key label is at most 200 printable characters")
        key_id = secrets.token_hex(6)
        secret = f"{KEY_PREFIX}{key_id}_{secrets.token_urlsafe(32)}"
        record = ApiKey(key_id, tenant, label, time.time(), role=role)
        with self._db() as conn:
            conn.execute(
                "INSERT INTO keys (id, tenant, digest, label, created_at, role) VALUES (?, ?, ?, ?, ?, ?)",
                (key_id, tenant, self._digest(secret), label, record.created_at, role),
            )
        return record, secret

    def list(self, *, tenant: str | None = None) -> list[ApiKey]:
        """Every key (revoked ones too), oldest first."""
        sql = "SELECT id, tenant, label, created_at, revoked_at, role FROM keys"
        args: tuple[str, ...] = ()
        if tenant is not None:
            sql, args = sql + " WHERE tenant = ?", (check_tenant(tenant),)
        with self.db.read() as conn:
            rows = conn.execute(sql + " ORDER BY created_at, id", args).fetchall()
        return [ApiKey(*row) for row in rows]

    def revoke(self, key_id: str, *, tenant: str | None = None) -> ApiKey:
        """Revoke a key by id (or by the key itself), of `tenant` only when given; NotFound if
        unknown (or another tenant's). Idempotent."""
        key_id = key_id_of(key_id) or key_id
        within, args = ("", ()) if tenant is None else (" AND tenant = ?", (check_tenant(tenant),))
        with self._db() as conn:
            conn.execute(
                "UPDATE keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL" + within,
                (time.time(), key_id, *args),
            )
            row = conn.execute(
                "SELECT id, tenant, label, created_at, revoked_at, role FROM keys WHERE id = ?" + within,
                (key_id, *args),
            ).fetchone()
        if row is None:
            raise NotFound(f"no key with id {key_id!r}")
        return ApiKey(*row)

    def authenticate(self, key: str) -> str | None:
        """The tenant of an active key; None for an unknown, malformed or revoked key."""
        found = self.identify(key)
        return None if found is None else found[0]

    def identify(self, key: str) -> tuple[str, Role] | None:
        """(tenant, role) of an active key; None for an unknown, malformed or revoked key."""
        key_id = key_id_of(key)
        if key_id is None:
            return None
        # A read: every request authenticates, and a write transaction here would queue each
        # request behind every other write to the data dir (and its fsync).
        with self.db.read() as conn:
            row = conn.execute(
                "SELECT tenant, digest, role FROM keys WHERE id = ? AND revoked_at IS NULL", (key_id,)
            ).fetchone()
        if row is None or not hmac.compare_digest(row[1], self._digest(key)):
            return None
        return str(row[0]), check_role(row[2])

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
