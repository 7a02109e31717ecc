"""Private files: 0700 directories, 0600 files, any umask; a folder the user made keeps its mode."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import OpenMemory
from fourfold._files import private_dir, private_file, replacing, write_private


@pytest.fixture(autouse=True)
def lax_umask() -> Iterator[None]:
    old = os.umask(0o022)  # the usual umask, which made the data dir 0755 and files 0644
    yield
    os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_private_dir_is_0700_with_its_new_parents_and_leaves_an_existing_one_as_it_is(
    open_memory: OpenMemory, tmp_path: Path
) -> None:
    before = _mode(tmp_path)
    made = private_dir(tmp_path / "a" / "b")
    assert _mode(made) == _mode(tmp_path / "a") == 0o700  # the new parent too
    assert _mode(tmp_path) == before  # an existing parent is not ours to narrow
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o775)  # a folder a team shares, given as --data-dir
    assert _mode(private_dir(shared)) == 0o775
    with open_memory(shared) as mem:  # what fourfold writes into it is private all the same
        mem.long_term.remember("Prefers email", scope="c1")
    assert _mode(shared) == 0o775 and _open_modes(shared)[1:] == []


def test_private_file_is_0600_from_creation_and_narrows_an_existing_one(tmp_path: Path) -> None:
    fd = private_file(tmp_path / "new.db")
    os.close(fd)
    assert _mode(tmp_path / "new.db") == 0o600
    old = tmp_path / "old.db"
    old.write_text("x")
    old.chmod(0o644)
    os.close(private_file(old, os.O_RDONLY))
    assert _mode(old) == 0o600


def test_write_private_replaces_atomically_and_leaves_no_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "exports" / "thread.json"
    write_private(target, b"one")
    write_private(target, b"two")
    assert target.read_bytes() == b"two" and _mode(target) == 0o600 and _mode(target.parent) == 0o700
    assert sorted(p.name for p in target.parent.iterdir()) == ["thread.json"]


def test_every_file_and_folder_of_a_data_dir_is_private_whatever_the_umask(open_memory: OpenMemory, tmp_path: Path) -> None:
    from fourfold.shortterm.threads import Thread

    old_umask = os.umask(0o022)  # the usual umask: files 0644, folders 0755 unless fourfold says otherwise
    try:
        with open_memory(tmp_path / "data") as mem:
            mem.long_term.remember("Prefers email", scope="c1")
            mem.episodes.record(goal="g", actions=["a"], outcome="o", success=True)
            mem.facts.set("refund_window_days", 30)
            with mem.conversations.lock("c1").hold():
                mem.conversations.save(Thread("c1", messages=({"role": "user", "content": "hi"},)))
            found = sorted((tmp_path / "data").rglob("*"))
            assert any(p.name == "fourfold.sqlite3-wal" for p in found)  # checked while the log exists
            for path in [tmp_path / "data", *found]:
                assert _mode(path) == (0o700 if path.is_dir() else 0o600), path
    finally:
        os.umask(old_umask)


def _open_modes(root: Path) -> list[str]:
    """Every folder under `root` (itself included) not 0700 and every file not 0600."""
    return [f"{oct(_mode(p))} {p.relative_to(root.parent)}" for p in [root, *sorted(root.rglob("*"))]
            if _mode(p) != (0o700 if p.is_dir() else 0o600)]


def test_a_chroma_data_dir_and_a_served_tenant_are_private_whatever_the_umask(open_memory: OpenMemory, tmp_path: Path) -> None:
    """Embedded Chroma writes its database and index files with the umask's modes (0644); the
    service's tenants folder was made 0755. Both must be private like the rest."""
    from fourfold.embeddings import HashEmbedder
    from fourfold.service.keys import KeyStore
    from fourfold.service.tenancy import Tenants

    with open_memory(tmp_path / "chroma", store="chroma") as mem:
        mem.long_term.remember_many([{"text": f"Customer {i} prefers email", "scope": "c1"} for i in range(50)])
        assert any(p.name == "chroma.sqlite3" for p in (tmp_path / "chroma").rglob("*"))
        assert _open_modes(tmp_path / "chroma") == []
    tenants = Tenants(tmp_path / "served", embedder=HashEmbedder())
    keys = KeyStore(tmp_path / "served" / "fourfold.sqlite3")
    try:
        keys.create("acme")
        tenants.get("acme").long_term.remember("Prefers email", scope="c1")
        assert (tmp_path / "served" / "tenants" / "acme").is_dir()
        assert _open_modes(tmp_path / "served") == []
    finally:
        tenants.close()
        keys.close()


def test_replacing_swaps_in_the_new_file_only_when_the_block_succeeds(tmp_path: Path) -> None:
    target = tmp_path / "model.onnx"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError), replacing(target) as temp:
        temp.write_bytes(b"half")
        raise RuntimeError("export failed")
    assert target.read_bytes() == b"old" and sorted(p.name for p in tmp_path.iterdir()) == ["model.onnx"]
    with replacing(target) as temp:
        temp.write_bytes(b"new")
        assert target.read_bytes() == b"old"  # readers see the old file until the rename
    assert target.read_bytes() == b"new" and sorted(p.name for p in tmp_path.iterdir()) == ["model.onnx"]
