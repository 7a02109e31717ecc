"""Edges of what fourfold accepts: names that would mislead where they are shown (NUL bytes,
surrounding spaces) are refused, and a folder's links that lead out of it are not its documents."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import OpenMemory
from fourfold import InvalidInput
from fourfold.episodic import SHARED_SCOPE


def test_a_scope_with_surrounding_spaces_is_refused(open_memory: OpenMemory, tmp_path: Path) -> None:
    """"shared:cases " would be shown exactly like the desk's shared scope."""
    with open_memory(tmp_path / "data") as mem:
        for scope in (SHARED_SCOPE + " ", " customer:acme", "customer:acme\t"):
            with pytest.raises(InvalidInput, match="scope"):
                mem.long_term.remember("Prefers email", scope=scope)
        assert mem.scopes() == {}


def test_nul_bytes_in_document_sources_and_metadata_keys_are_refused(open_memory: OpenMemory, tmp_path: Path) -> None:
    with open_memory(tmp_path / "data") as mem:
        for source in ("refunds\x00.md", " refunds.md", "refunds.md\n"):
            with pytest.raises(InvalidInput, match="source"):
                mem.docs.ingest_text("Refunds take five days.", source=source)
        with pytest.raises(InvalidInput, match="metadata key"):
            mem.long_term.remember("Prefers email", scope="customer:acme", metadata={"chan\x00nel": "email"})
        assert mem.docs.sources() == [] and mem.long_term.all(scope="customer:acme") == []


def test_folder_ingest_skips_links_that_lead_out_of_the_folder(open_memory: OpenMemory, tmp_path: Path) -> None:
    outside = tmp_path / "private.md"
    outside.write_text("root:x:0:0:root:/root:/bin/bash\n")
    kb = tmp_path / "kb"
    (kb / "guides").mkdir(parents=True)
    (kb / "refunds.md").write_text("# Refunds\n\nRefunds take five days.\n")
    os.symlink(outside, kb / "passwd.md")  # a link to a file outside the folder
    os.symlink(kb / "refunds.md", kb / "guides" / "same.md")  # a link inside it stays a document
    with open_memory(tmp_path / "data") as mem:
        mem.docs.ingest_paths([kb])
        assert sorted(mem.docs.sources()) == ["guides/same.md", "refunds.md"]
        mem.docs.ingest_paths([str(kb / "*.md")])
        assert "passwd.md" not in mem.docs.sources()
        assert all("root:x" not in hit.text for hit in mem.docs.search("root bash", k=5))
