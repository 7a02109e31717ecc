"""Two databases on one file in one process (a service's key store beside a tenant's memory)
must not cost that process its SQLite locks: another process closing last would then take the
write-ahead log for unused, delete it, and every later write of this process would vanish."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

from fourfold.stores.sqlite import SQLiteDatabase


def _count_elsewhere(path: Path) -> int:
    code = ("import sqlite3, sys\nc = sqlite3.connect(sys.argv[1])\n"
            "print(c.execute('SELECT count(*) FROM facts').fetchone()[0])\nc.close()")
    return int(subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True,
                              check=True, timeout=60).stdout)


def test_a_second_database_on_the_same_file_keeps_the_first_ones_writes_visible(tmp_path: Path) -> None:
    path = tmp_path / "fourfold.sqlite3"
    first = SQLiteDatabase(path)
    with first.write() as conn:
        conn.execute("INSERT INTO facts (key, value_json, updated_at) VALUES ('a', '1', 0)")
    second = SQLiteDatabase(path)  # opening it must not drop `first`'s locks
    assert _count_elsewhere(path) == 1  # another process opens the file and closes last
    with first.write() as conn:
        conn.execute("INSERT INTO facts (key, value_json, updated_at) VALUES ('b', '2', 0)")
    assert Path(f"{path}-wal").exists()
    assert _count_elsewhere(path) == 2  # the write is in the shared log, not an orphaned one
    second.close()
    first.close()


def test_opening_a_file_while_another_connection_writes_waits_instead_of_failing(tmp_path: Path) -> None:
    """Switching a file to WAL needs an exclusive lock, and SQLite refuses it at once, without
    waiting, while another connection holds the write lock: processes opening one new data dir
    together failed this way (CI, `test_concurrent_processes_lose_no_writes`)."""
    path = tmp_path / "fourfold.sqlite3"
    SQLiteDatabase(path).close()
    writer = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    assert writer.execute("PRAGMA journal_mode = DELETE").fetchone() == ("delete",)
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("INSERT INTO facts (key, value_json, updated_at) VALUES ('a', '1', 0)")
    release = threading.Timer(0.3, lambda: writer.execute("COMMIT"))
    release.start()
    try:
        db = SQLiteDatabase(path, timeout=10)
        with db.read() as conn:
            assert conn.execute("SELECT key FROM facts").fetchall() == [("a",)]
            assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        db.close()
    finally:
        release.join()
        writer.close()
