"""Typed errors: every failure fourfold reports derives from `FourfoldError`."""

from __future__ import annotations

__all__ = [
    "BudgetExceeded",
    "EmbedderMismatch",
    "Forbidden",
    "FourfoldError",
    "InvalidInput",
    "LockTimeout",
    "MissingDependency",
    "ModelError",
    "NotFound",
    "StorageFull",
    "StoreCorrupt",
    "StoreReadOnly",
    "StoreUnavailable",
    "TooLarge",
]


class FourfoldError(Exception):
    """Base class of every error fourfold raises on purpose."""

    code = "error"


class InvalidInput(FourfoldError, ValueError):
    """The caller passed something fourfold refuses (empty text, bad k, bad metadata...)."""

    code = "invalid_input"


class TooLarge(InvalidInput):
    """The input is over a size limit (a document, a batch); the service answers 413."""

    code = "too_large"


class BudgetExceeded(InvalidInput):
    """A token budget cannot hold what must be sent, even with long texts cut.

    What must be sent: the system prompt and messages, the first request and the newest
    turn, with tool calls whole. Nothing is dropped silently instead: the caller decides (a
    larger budget, a shorter system prompt, or a turn of its own choosing). `max_tokens` is
    the budget and `smallest` the count of the smallest acceptable request (None if unknown).
    """

    code = "budget_exceeded"

    def __init__(self, message: str, *, max_tokens: int | None = None, smallest: int | None = None) -> None:
        super().__init__(message)
        self.max_tokens = max_tokens
        self.smallest = smallest


class Forbidden(FourfoldError):
    """The caller may not do this: the service's configuration or the caller's key does not allow it
    (a case sent through the API without review, or approved by the key that sent it)."""

    code = "forbidden"


class NotFound(FourfoldError, KeyError):
    """The id or key does not exist."""

    code = "not_found"

    def __str__(self) -> str:  # KeyError quotes its message; we want it plain
        return str(self.args[0]) if self.args else "not found"


class EmbedderMismatch(FourfoldError):
    """A store was built with another embedder or dimension than the one given."""

    code = "embedder_mismatch"


class StoreUnavailable(FourfoldError):
    """A backend could not be reached or opened (server down, directory unreadable)."""

    code = "store_unavailable"


class StorageFull(StoreUnavailable):
    """The store's disk (or its size quota) is full: reads still work, writes are refused
    until space is freed; a refused write left nothing behind."""

    code = "storage_full"


class StoreReadOnly(StoreUnavailable):
    """The store can be read but not written (a read-only file, directory or mount, a
    standby server); a refused write left nothing behind."""

    code = "store_read_only"


class StoreCorrupt(FourfoldError):
    """A file in the data dir is damaged or from an unknown format version."""

    code = "store_corrupt"


class LockTimeout(FourfoldError):
    """Another process held the data dir's write lock for too long."""

    code = "lock_timeout"


class ModelError(FourfoldError):
    """A chat or embedding model call failed."""

    code = "model_error"


class MissingDependency(FourfoldError, ImportError):
    """An optional extra is not installed; the message says which one."""

    code = "missing_dependency"


def error_types() -> dict[str, type[FourfoldError]]:
    """fourfold's specific error classes by their `code` (the codes the service answers with):
    every subclass of `FourfoldError` that names its own code, the library's and the service's."""
    found: dict[str, type[FourfoldError]] = {}
    todo: list[type[FourfoldError]] = FourfoldError.__subclasses__()
    while todo:
        cls = todo.pop(0)
        todo.extend(cls.__subclasses__())
        if "code" in vars(cls) and cls.__module__.startswith("fourfold."):
            found.setdefault(cls.code, cls)
    return found
