"""Corrupt or foreign files: a clear, typed error naming the file and what to do, never silent
data loss; `fourfold doctor` checks a data dir and repairs what it can without loss."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import OpenMemory
from fourfold import EmbedderMismatch, FourfoldError, StoreCorrupt, doctor
from fourfold.embeddings import HashEmbedder
from fourfold.shortterm.threads import Thread


@pytest.fixture
def data_dir(open_memory: OpenMemory, tmp_path: Path) -> Path:
    with open_memory(tmp_path) as mem:
        mem.long_term.remember("Prefers parcel lockers", scope="customer:1")
        for i in range(3):
            mem.episodes.record(goal=f"Parcel {i} late", actions=["traced"], outcome="resent", success=True)
        mem.facts.set("refund_window_days", 30)
        mem.conversations.save(Thread("customer:1", messages=({"role": "user", "content": "hello"},)))
    return tmp_path


def test_a_healthy_data_dir_passes_the_doctor(data_dir: Path) -> None:
    report = doctor.check(data_dir)
    assert report.ok, report.findings
    assert {"fourfold.json", "fourfold.sqlite3", "threads"} <= set(report.checked)


def test_a_damaged_database_is_a_clear_error_naming_the_file(open_memory: OpenMemory, data_dir: Path) -> None:
    facts = data_dir / "fourfold.sqlite3"
    for side in ("-wal", "-shm"):
        Path(f"{facts}{side}").unlink(missing_ok=True)
    facts.write_bytes(b"this is not sqlite" * 500)
    with pytest.raises(StoreCorrupt, match=r"fourfold\.sqlite3.*(backup|move it aside)"):
        open_memory(data_dir)
    (finding,) = doctor.check(data_dir).findings
    assert finding.file == str(facts) and not finding.repairable and "backup" in finding.action


def test_doctor_salvages_the_readable_rows_of_a_damaged_database(open_memory: OpenMemory, data_dir: Path) -> None:
    facts = data_dir / "fourfold.sqlite3"
    import sqlite3

    conn = sqlite3.connect(facts)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute("CREATE TABLE junk (x)")
    conn.executemany("INSERT INTO junk VALUES (?)", [("x" * 500,)] * 200)
    conn.commit()
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.close()
    page = 4096
    raw = bytearray(facts.read_bytes())
    raw[-page * 3 : -page * 3 + 64] = b"\xff" * 64  # damage a page of the junk table only
    facts.write_bytes(bytes(raw))
    report = doctor.check(data_dir)
    assert [f.problem.split(":")[0] for f in report.findings] == ["database"]
    assert doctor.repair(data_dir).ok
    assert list(data_dir.glob("fourfold.sqlite3.damaged-*"))  # the original is kept
    salvaged = sqlite3.connect(facts)
    # kept tokens are not copied from a damaged file: the store makes them again from the text
    assert [r[0] for r in salvaged.execute("SELECT tokens FROM memories")] == [None]
    salvaged.close()
    with open_memory(data_dir) as mem:
        assert mem.facts.get("refund_window_days").value == 30
        assert mem.long_term.recall("parcel lockers", scope="customer:1")[0].text == "Prefers parcel lockers"


def test_a_vector_store_built_with_another_embedder_is_refused_by_name(open_memory: OpenMemory, data_dir: Path) -> None:
    (data_dir / "fourfold.json").unlink()  # only the database's own record is left to catch it
    with pytest.raises(EmbedderMismatch, match=r"fourfold\.sqlite3.*hash-v1:256.*hash-v1:64"):
        open_memory(data_dir, embedder=HashEmbedder(dimension=64))
    report = doctor.check(data_dir)
    assert report.ok  # a missing manifest is rewritten on the next open; nothing is damaged


def test_a_data_dir_from_a_newer_version_says_upgrade(open_memory: OpenMemory, data_dir: Path) -> None:
    manifest = data_dir / "fourfold.json"
    manifest.write_text(json.dumps({"format": 99, "embedder": "hash-v1:256"}))
    with pytest.raises(StoreCorrupt, match=r"fourfold\.json.*format 99.*upgrade fourfold"):
        open_memory(data_dir)
    (finding,) = doctor.check(data_dir).findings
    assert not finding.repairable and finding.action == "upgrade fourfold"


def test_a_damaged_manifest_points_to_the_doctor_which_rebuilds_it(open_memory: OpenMemory, data_dir: Path) -> None:
    (data_dir / "fourfold.json").write_text('{"format": 1, "embed')
    with pytest.raises(StoreCorrupt, match=r"fourfold doctor"):
        open_memory(data_dir)
    report = doctor.repair(data_dir)
    assert report.ok and any("hash-v1:256" in line for line in report.repaired)
    with open_memory(data_dir) as mem:
        assert mem.long_term.recall("parcel lockers", scope="customer:1")[0].text == "Prefers parcel lockers"


def test_a_damaged_vector_database_is_a_typed_error_and_a_doctor_finding(open_memory: OpenMemory, tmp_path: Path) -> None:
    with open_memory(tmp_path, store="chroma") as mem:
        mem.long_term.remember("Prefers parcel lockers", scope="customer:1")
    data_dir = tmp_path
    db = data_dir / "vectors" / "chroma.sqlite3"
    db.write_bytes(b"\x00garbage" * 4096)
    with pytest.raises(FourfoldError, match=r"vectors"):
        open_memory(data_dir)
    (finding,) = doctor.check(data_dir).findings
    assert finding.file == str(db) and not finding.repairable


def test_a_damaged_conversation_is_named_and_deleted_by_the_doctor(open_memory: OpenMemory, data_dir: Path) -> None:
    _damage_thread(data_dir, "customer:1")
    with open_memory(data_dir) as mem, pytest.raises(StoreCorrupt, match="customer:1"):
        mem.conversations.load("customer:1")
    (finding,) = doctor.check(data_dir).findings
    assert "customer:1" in finding.file and finding.repairable
    assert doctor.repair(data_dir).ok
    with open_memory(data_dir) as mem:
        assert mem.conversations.load("customer:1").messages == ()  # a new thread


def _damage_thread(data_dir: Path, scope: str) -> None:
    import sqlite3

    conn = sqlite3.connect(data_dir / "fourfold.sqlite3")
    with conn:
        conn.execute("UPDATE threads SET payload = ? WHERE scope = ?", ('{"format": 1, "scope": "x", "messages": [', scope))
    conn.close()


def test_stale_temporary_files_are_found_and_removed(data_dir: Path) -> None:
    stale = [data_dir / "fourfold.tmp", data_dir / ".fourfold.json.123.tmp", data_dir / "export.tmp"]
    for path in stale:
        path.write_text("left by a crashed writer")
        os.utime(path, (time.time() - 3600, time.time() - 3600))
    fresh = data_dir / "fresh.tmp"
    fresh.write_text("a save in progress")
    (finding,) = doctor.check(data_dir).findings
    assert "3 stale" in finding.problem
    assert doctor.repair(data_dir).ok
    assert not any(p.exists() for p in stale) and fresh.exists()


def test_the_doctor_command(data_dir: Path) -> None:
    _damage_thread(data_dir, "customer:1")
    code = ("import sys\nfrom fourfold.cli import main\nfrom fourfold.cli.app import app\n"
            "from fourfold.cli.doctor_command import register\n"
            "if not any(c.name == 'doctor' for c in app.registered_commands): register(app)\n"
            "sys.exit(main(sys.argv[1:]))")
    check = subprocess.run([sys.executable, "-c", code, "doctor", str(data_dir)], capture_output=True, text=True, timeout=120)
    assert check.returncode == 1 and "customer:1" in check.stdout and "--repair" in check.stdout
    fix = subprocess.run([sys.executable, "-c", code, "--json", "doctor", str(data_dir), "--repair"],
                         capture_output=True, text=True, timeout=120)
    assert fix.returncode == 0, fix.stdout + fix.stderr
    assert json.loads(fix.stdout)["ok"] is True
