"""fourfold: memory for LLM agents, with short-term, long-term, episodic and semantic kept apart."""

from typing import TYPE_CHECKING

from fourfold.errors import (
    BudgetExceeded,
    EmbedderMismatch,
    Forbidden,
    FourfoldError,
    InvalidInput,
    LockTimeout,
    MissingDependency,
    ModelError,
    NotFound,
    StorageFull,
    StoreCorrupt,
    StoreReadOnly,
    StoreUnavailable,
    TooLarge,
)
from fourfold.types import (
    DocHit,
    DocSource,
    Episode,
    Fact,
    Ingested,
    Recalled,
    Redaction,
    Remembered,
)

if TYPE_CHECKING:
    from fourfold.memory import Memory

__version__ = "0.2.0"


def __getattr__(name: str) -> object:
    # `Memory` pulls in numpy and the stores; importing the package stays cheap without it.
    if name == "Memory":
        from fourfold.memory import Memory

        return Memory
    raise AttributeError(f"module 'fourfold' has no attribute {name!r}")

__all__ = [
    "BudgetExceeded",
    "DocHit",
    "DocSource",
    "EmbedderMismatch",
    "Episode",
    "Fact",
    "Forbidden",
    "FourfoldError",
    "Ingested",
    "InvalidInput",
    "LockTimeout",
    "Memory",
    "MissingDependency",
    "ModelError",
    "NotFound",
    "Recalled",
    "Redaction",
    "Remembered",
    "StorageFull",
    "StoreCorrupt",
    "StoreReadOnly",
    "StoreUnavailable",
    "TooLarge",
    "__version__",
]
