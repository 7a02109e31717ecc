"""Open the database a target names: a PostgreSQL URL, else a SQLite file.

Apart from `database` (the seam both engines implement) so that the seam knows no engine.
"""

from __future__ import annotations

import os

from fourfold.stores.database import Database, is_url

__all__ = ["open_database"]


def open_database(target: Database | str | os.PathLike[str], *, timeout: float = 30.0) -> Database:
    """A database as given, a PostgreSQL one for a postgresql:// URL, else a SQLite file."""
    if isinstance(target, Database):
        return target
    if is_url(target):
        from fourfold.stores.postgres import PostgresDatabase

        return PostgresDatabase(str(target), timeout=timeout)
    from fourfold.stores.sqlite import SQLiteDatabase

    return SQLiteDatabase(target, timeout=timeout)
