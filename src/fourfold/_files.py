"""Private files: directories 0700 and files 0600, whatever the umask, so that no other local
user can read a memory. Every store that creates files goes through these."""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator
from pathlib import Path

from fourfold.errors import StorageFull, StoreReadOnly, StoreUnavailable

__all__ = ["DIR_MODE", "FILE_MODE", "narrow_tree", "private_dir", "private_file", "replacing", "write_error", "write_private"]

DIR_MODE = 0o700
FILE_MODE = 0o600


def private_dir(path: str | os.PathLike[str]) -> Path:
    """Create `path` and its missing parents as 0700; a folder that exists keeps its mode.

    A folder the user made (a data dir given with `--data-dir`, a home directory) is not ours to
    narrow: what fourfold writes into it is private on its own (files 0600, folders 0700).
    """
    directory = Path(path)
    missing = []
    for folder in (directory, *directory.parents):
        if folder.exists():
            break
        missing.append(folder)
    directory.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)  # the mode is masked by umask...
    for folder in missing:
        os.chmod(folder, DIR_MODE)  # ...so set it outright
    return directory


def narrow_tree(root: str | os.PathLike[str]) -> None:
    """Narrow every folder under `root` to 0700 and every file to 0600, for files another
    library created with the umask's modes (embedded Chroma's database and index files)."""
    for folder, dirs, files in os.walk(root):
        for name, mode in [*((d, DIR_MODE) for d in dirs), *((f, FILE_MODE) for f in files)]:
            path = os.path.join(folder, name)
            with contextlib.suppress(FileNotFoundError):  # removed by its writer meanwhile
                if os.lstat(path).st_mode & 0o077:
                    os.chmod(path, mode)


def private_file(path: str | os.PathLike[str], flags: int = os.O_RDWR | os.O_CREAT) -> int:
    """Open (creating if asked) a file that only its owner can read; returns the descriptor.

    A file created here is 0600 from its first byte; an existing one is narrowed to 0600.
    """
    fd = os.open(path, flags, FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)
    except BaseException:
        os.close(fd)
        raise
    return fd


def write_private(path: str | os.PathLike[str], data: bytes) -> None:
    """Write `data` to `path` atomically (a private temp file, fsynced, then renamed)."""
    target = Path(path)
    private_dir(target.parent)
    with replacing(target) as temp:
        with os.fdopen(private_file(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())


@contextlib.contextmanager
def replacing(target: str | os.PathLike[str]) -> Iterator[Path]:
    """A temp path beside `target` to write; it replaces `target` in one rename if the block
    succeeds, and is removed if it fails, so readers see the old file or the new, never half."""
    final = Path(target)
    temp = final.with_name(f".{final.name}.{os.getpid()}.tmp")
    try:
        yield temp
        os.replace(temp, final)
    finally:
        temp.unlink(missing_ok=True)


def write_error(exc: OSError, path: str | os.PathLike[str]) -> StoreUnavailable:
    """A failed write of a file as the typed error that names its cause (a full disk, a
    read-only one, or another I/O error)."""
    reason = exc.strerror or str(exc)
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return StorageFull(f"cannot write {path}: {reason}; nothing was left half-written. Free space, and retry.")
    if exc.errno == errno.EROFS:
        return StoreReadOnly(f"cannot write {path}: {reason}")
    return StoreUnavailable(f"cannot write {path}: {reason}")
