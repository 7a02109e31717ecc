"""Vector-store backends behind one small interface (`VectorStore`).

- `SQLiteVectorStore`: the embedded default, in the data dir's SQLite file;
- `PostgresVectorStore`: PostgreSQL with pgvector, for several machines and large scopes;
- `ChromaVectorStore`: embedded Chroma or a Chroma server (the `chroma` extra);
- `InMemoryVectorStore`: nothing on disk, for tests and throwaway work.

The SQLite and PostgreSQL stores share one portable SQL store (`fourfold.stores.sql`) over the
`Database` seam (`fourfold.stores.database`). Backends that need an optional package load on
first access.
"""

from typing import TYPE_CHECKING

from fourfold.stores.inmemory import InMemoryVectorStore
from fourfold.stores.vector import VectorRecord, VectorStore

if TYPE_CHECKING:
    from fourfold.stores.chroma import ChromaVectorStore
    from fourfold.stores.pgvector import PostgresVectorStore
    from fourfold.stores.sqlite import SQLiteVectorStore

__all__ = [
    "ChromaVectorStore", "InMemoryVectorStore", "PostgresVectorStore", "SQLiteVectorStore", "VectorRecord", "VectorStore",
]


def __getattr__(name: str) -> object:
    if name == "SQLiteVectorStore":
        from fourfold.stores.sqlite import SQLiteVectorStore

        return SQLiteVectorStore
    if name == "PostgresVectorStore":  # psycopg only when asked
        from fourfold.stores.pgvector import PostgresVectorStore

        return PostgresVectorStore
    if name == "ChromaVectorStore":  # chromadb is slow to import: only when asked
        from fourfold.stores.chroma import ChromaVectorStore

        return ChromaVectorStore
    raise AttributeError(name)
