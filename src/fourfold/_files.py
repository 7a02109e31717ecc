"""Private files: directories 0700 and files 0600, whatever the umask, so that no other local
user can read a memory. Every store that creates files goes through these."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["DIR_MODE", "FILE_MODE", "private_dir", "private_file", "write_private"]

DIR_MODE = 0o700
FILE_MODE = 0o600


def private_dir(path: str | os.PathLike[str]) -> Path:
    """Create `path` (and missing parents) as 0700; an existing directory is narrowed to 0700."""
    directory = Path(path)
    directory.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)  # the mode is masked by umask...
    os.chmod(directory, DIR_MODE)  # ...so set it outright
    return directory


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
    temp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    fd = private_file(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, target)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
