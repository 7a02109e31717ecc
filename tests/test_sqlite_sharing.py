"""Two databases on one file in one process (a service's key store beside a tenant's memory)
must not cost that process its SQLite locks: another process closing last would then take the
write-ahead log for unused, delete it, and every later write of this process would vanish."""

from __future__ import annotations

import subprocess
import sys
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
