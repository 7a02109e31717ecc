"""The `<log>.vectors` sidecar: a rebuildable cache of episode vectors, appended under the lock.

Layout: a header (magic, identity length, embedder identity, dimension), then fixed-size
records of a 32-byte ASCII hex id followed by `dimension` little-endian float32 values.
"""

from __future__ import annotations

import os
import re
import struct
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np

from fourfold.embeddings import Vectors

__all__ = ["VectorSidecar", "write_atomically"]

_MAGIC = b"FFVEC1\n"
_ID_BYTES = 32
_HEX_ID = re.compile(rb"[0-9a-f]{32}")


def write_atomically(path: Path, chunks: Iterable[bytes]) -> None:
    """Replace path with new content: temp file, fsync, os.replace, fsync of the directory."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        try:
            for chunk in chunks:
                write_all(fd, chunk)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def write_all(fd: int, data: bytes) -> None:
    """os.write until every byte is out (a regular file rarely takes less, but may)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def fsync_dir(directory: Path) -> None:
    """Make a create, rename or replace in directory durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class VectorSidecar:
    """Reads new records incrementally; writes only while the caller holds the log's lock."""

    def __init__(self, path: Path, identity: str, dimension: int) -> None:
        self.path = path
        self.dimension = dimension
        name = identity.encode("utf-8")
        self._header = _MAGIC + struct.pack("<H", len(name)) + name + struct.pack("<I", dimension)
        self._record = _ID_BYTES + 4 * dimension
        self.reset()

    def reset(self) -> None:
        """Forget the read position; the next read starts from the header."""
        self._offset = 0
        self._file_key: tuple[int, int] | None = None

    def read_new(self) -> dict[str, Vectors]:
        """Vectors appended since the last call (all of them after a replace or a shrink)."""
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            self.reset()
            return {}
        try:
            st = os.fstat(fd)
            if (st.st_dev, st.st_ino) != self._file_key or st.st_size < self._offset:
                self.reset()
                self._file_key = (st.st_dev, st.st_ino)
            if self._offset == 0:
                if os.pread(fd, len(self._header), 0) != self._header:
                    return {}  # another embedder's cache, or torn header: ignore it
                self._offset = len(self._header)
            whole = (st.st_size - self._offset) // self._record * self._record
            data = os.pread(fd, whole, self._offset) if whole > 0 else b""
        finally:
            os.close(fd)
        self._offset += len(data)
        return self._parse(data)

    def _parse(self, data: bytes) -> dict[str, Vectors]:
        layout = np.dtype([("id", f"S{_ID_BYTES}"), ("vector", "<f4", (self.dimension,))])
        records = np.frombuffer(data, dtype=layout)
        vectors = records["vector"].astype(np.float32)  # one copy, native order, writable
        finite: list[bool] = np.asarray(np.isfinite(vectors).all(axis=1)).tolist()
        return {
            raw_id.decode("ascii"): vectors[i]
            for i, (raw_id, ok) in enumerate(zip(records["id"].tolist(), finite, strict=True))
            # a zero-filled or damaged record is skipped: its vector is recomputed later
            if ok and _HEX_ID.fullmatch(raw_id)
        }

    def _encode(self, items: Mapping[str, Vectors]) -> bytes:
        return b"".join(
            episode_id.encode("ascii") + np.asarray(vec, dtype="<f4").tobytes()
            for episode_id, vec in items.items()
        )

    def append(self, items: Mapping[str, Vectors]) -> None:
        """Append records (caller holds the lock); a foreign or torn header means a fresh file."""
        if not items:
            return
        if not self._has_own_header():
            self.rewrite(items)
            return
        fd = os.open(self.path, os.O_WRONLY)
        try:
            st = os.fstat(fd)
            size, same_file = st.st_size, (st.st_dev, st.st_ino) == self._file_key
            # Cut a record torn by a crash so that every record stays aligned.
            aligned = len(self._header) + (size - len(self._header)) // self._record * self._record
            if aligned != size:
                os.ftruncate(fd, aligned)
            os.lseek(fd, aligned, os.SEEK_SET)
            payload = self._encode(items)
            write_all(fd, payload)
            if (
                same_file and self._offset == aligned
            ):  # we had read it all: no need to read our own records
                self._offset += len(payload)
        finally:
            os.close(fd)

    def _has_own_header(self) -> bool:
        try:
            with self.path.open("rb") as f:
                return f.read(len(self._header)) == self._header
        except FileNotFoundError:
            return False

    def rewrite(self, items: Mapping[str, Vectors]) -> None:
        """Replace the whole sidecar with exactly these records (caller holds the lock)."""
        write_atomically(self.path, [self._header, self._encode(items)])
