"""The `<log>.index` snapshot: the parsed episodes of a prefix of the log, so opening is fast.

Parsing and validating 100k JSON lines takes seconds; loading them back with `marshal`
takes a fraction of that. The snapshot is only a cache: it names how many bytes of the
log it covers and a digest of those bytes, and is ignored unless the log still starts
with exactly them (a rewrite by forget_scope, a truncation or a replaced file all fail
the check), and its own content carries a digest too. Only episodes, as columns of
builtins, are stored: `marshal` runs no code.
"""

from __future__ import annotations

import hashlib
import marshal
import os
from dataclasses import dataclass, fields
from pathlib import Path

from fourfold.episodic._vectors import write_atomically
from fourfold.types import Episode

__all__ = ["Snapshot", "load_snapshot", "save_snapshot"]

_VERSION = 3
_FIELDS = tuple(f.name for f in fields(Episode))


@dataclass(frozen=True, slots=True)
class Snapshot:
    offset: int
    line_count: int
    last_line: bytes
    episodes: list[Episode]


def _digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


def load_snapshot(path: Path, fd: int, size: int) -> Snapshot | None:
    """The snapshot at path if it describes the first bytes of the open log `fd`, else None."""
    try:
        data = path.read_bytes()
        body = data[16:]
        if len(data) < 16 or _digest(body) != data[:16]:
            return None  # torn or mixed: ignore it
        raw = marshal.loads(body)
    except (OSError, ValueError, EOFError, TypeError):
        return None
    if not (isinstance(raw, tuple) and len(raw) == 6 and raw[0] == _VERSION):
        return None
    _, offset, line_count, last_line, digest, rows = raw
    if not (isinstance(offset, int) and 0 < offset <= size and isinstance(rows, list) and len(rows) == len(_FIELDS)):
        return None
    if _digest(os.pread(fd, offset, 0)) != digest:
        return None
    try:
        episodes = list(map(Episode, *rows))  # columns, in Episode's field order
    except (TypeError, ValueError):
        return None
    return Snapshot(offset, line_count, last_line, episodes)


def save_snapshot(path: Path, log_fd: int, snapshot: Snapshot) -> None:
    """Write a snapshot atomically (best effort: it is a cache, the caller ignores OSError)."""
    eps = snapshot.episodes
    rows = [[getattr(ep, name) for ep in eps] for name in _FIELDS]
    digest = _digest(os.pread(log_fd, snapshot.offset, 0))
    payload = (_VERSION, snapshot.offset, snapshot.line_count, snapshot.last_line, digest, rows)
    body = marshal.dumps(payload)
    write_atomically(path, [_digest(body), body])
