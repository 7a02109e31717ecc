"""Moving data: a lossless JSON Lines export read back into a data dir, and the move of a real
fourfold 0.1 data dir (made by the 0.1 code: Chroma, JSONL, separate SQLite files, a tenant)."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import OpenMemory
from fourfold import EmbedderMismatch, InvalidInput, Memory, StoreCorrupt, StoreUnavailable
from fourfold.cli import main
from fourfold.embeddings import HashEmbedder
from fourfold.service.keys import KeyStore
from fourfold.shortterm.threads import Thread
from fourfold.transfer import export_memory, import_memory, migrate_legacy

LEGACY = Path(__file__).parent / "data" / "legacy-0.1-datadir.tar.gz"
#: The API key the 0.1 service issued when the fixture was made (only its digest is in the fixture).
LEGACY_KEY = "ffk_7e60dd5f9a51_bpnJzbR3wBsTh5xGqON7nThnK2TJR8ti1wOQ6xcbEMM"


def _legacy(tmp_path: Path) -> Path:
    with tarfile.open(LEGACY) as tar:
        tar.extractall(tmp_path, filter="data")
    return tmp_path / "legacy01"


def _fill(mem: Memory) -> None:
    mem.long_term.remember("Prefers email over phone", scope="customer:alice", kind="preference",
                           metadata={"thread": "t1", "tags": ["contact"]})
    mem.long_term.remember("Ships to the Lyon warehouse", scope="customer:bob")
    mem.long_term.remember("Restart the sync worker before anything else")
    # versions: a keyed memory superseded twice (once backdated), and an updated plain one
    mem.long_term.remember("Speaks French", scope="customer:alice", kind="preference", key="language", valid_from=1_000)
    mem.long_term.remember("Speaks German", scope="customer:alice", kind="preference", key="language", valid_from=3_000)
    mem.long_term.remember("Speaks Dutch", scope="customer:alice", kind="preference", key="language", valid_from=2_000)
    mem.long_term.update(mem.long_term.remember("Ships to Lille", scope="customer:bob"), "Ships to Nantes")
    mem.docs.ingest_text("# Returns\n\nReturns are accepted within thirty days.", source="returns.md")
    mem.episodes.record(goal="Invoice PDF fails with 502", actions=["cleared the cache"], outcome="fixed",
                        success=True, scope="customer:alice", tags=["billing"])
    mem.episodes.record(goal="VPN drops", actions=["rebooted"], outcome="still broken", success=False)
    mem.episodes.similar_successes("invoice 502", scope="customer:alice")  # stores a vector
    mem.facts.set("refund_window_days", 30, description="days to ask for a refund")
    mem.facts.set("refund_window_days", 45)
    mem.facts.set("support_hours", {"from": 9, "to": 17})
    mem.facts.set_tool_description("Values of the Acme returns desk.")
    mem.conversations.save(Thread("customer:alice", messages=({"role": "user", "content": "hello"},),
                                  extras={"ticket": {"goal": "invoice", "actions": []}}))


def _dump(mem: Memory) -> list[dict[str, object]]:
    out = io.StringIO()
    export_memory(mem, out)
    items = [json.loads(line) for line in out.getvalue().splitlines()]
    items[0].pop("exported_at")
    return items


def test_an_export_read_into_a_new_data_dir_gives_back_the_same_data(open_memory: OpenMemory, tmp_path: Path) -> None:
    first = open_memory(tmp_path / "a")
    _fill(first)
    dump = _dump(first)
    out = io.StringIO()
    export_memory(first, out)
    assert {item["type"] for item in dump} == {"header", "memory", "episode", "fact", "fact_history", "tool_description",
                                                 "thread"}
    second = open_memory(tmp_path / "b")
    counts = import_memory(second, out.getvalue().splitlines())
    # 5 current memories, 3 versions they replaced and a document chunk: as `scopes` counts them
    assert (counts.memories, counts.old_versions, counts.doc_chunks) == (5, 3, 1)
    assert (counts.episodes, counts.facts, counts.fact_history, counts.threads, counts.unchanged) == (2, 2, 1, 1, 0)
    assert _dump(second) == dump
    again = import_memory(second, out.getvalue().splitlines())  # nothing new: nothing counted as imported
    assert again.as_dict() == {**dict.fromkeys(again.as_dict(), 0), "unchanged": 9 + 2 + 2 + 1 + 1}
    history = second.long_term.history(second.long_term.recall("language", scope="customer:alice", k=1)[0].id)
    assert [(h.text, h.valid_from, h.valid_to, h.key) for h in history] == [
        ("Speaks French", 1_000, 2_000, "language"), ("Speaks Dutch", 2_000, 3_000, "language"),
        ("Speaks German", 3_000, None, "language")]
    assert [m.text for m in second.long_term.all(scope="customer:bob")] == ["Ships to the Lyon warehouse",
                                                                           "Ships to Nantes"]
    assert [m.text for m in second.long_term.history(second.long_term.all(scope="customer:bob")[1].id)] == [
        "Ships to Lille", "Ships to Nantes"]
    hit = second.long_term.recall("email or phone", scope="customer:alice", k=1)[0]
    assert (hit.text, hit.kind, hit.metadata) == ("Prefers email over phone", "preference",
                                                 {"thread": "t1", "tags": ["contact"]})
    assert second.facts.history("refund_window_days")[0][0] == 30
    assert second.facts.tool_description() == "Values of the Acme returns desk."
    assert second.conversations.load("customer:alice").extras == {"ticket": {"goal": "invoice", "actions": []}}
    assert [e.goal for e in second.episodes.similar_successes("invoice 502", scope="customer:alice")] == [
        "Invoice PDF fails with 502"]
    import_memory(second, out.getvalue().splitlines())  # again: nothing is doubled
    assert _dump(second) == dump


def test_a_shared_case_keeps_its_link_to_its_customer_through_export_and_import(open_memory: OpenMemory, tmp_path: Path) -> None:
    from fourfold.agent import SupportAgent
    from fourfold.models import OfflineModel

    first = open_memory(tmp_path / "a")
    agent = SupportAgent(first, OfflineModel())
    agent.turn("alice", "Invoice PDF fails with error 502")
    case = agent.resolve("alice", "Invoice PDF 502 fixed by clearing the browser cache").case
    assert case is not None
    out = io.StringIO()
    export_memory(first, out)
    second = open_memory(tmp_path / "b")
    import_memory(second, out.getvalue().splitlines())
    assert second.episodes.sources([case.id]) == {case.id: "customer:alice"}
    assert SupportAgent(second, OfflineModel()).forget_customer("alice")["cases"] == 1


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(st.text(min_size=1, max_size=60).filter(lambda t: t.strip() and "\x00" not in t),
                      min_size=1, max_size=6, unique=True),
       scope=st.sampled_from([None, "customer:1", "c/é"]))
def test_any_memory_text_survives_export_and_import(tmp_path: Path, texts: list[str], scope: str | None) -> None:
    import tempfile

    # a fresh pair of data dirs per hypothesis example, opened here: open_memory's handles live per test
    with tempfile.TemporaryDirectory(dir=tmp_path) as work:
        with Memory.open(Path(work) / "a", embedder=HashEmbedder()) as first:
            stored = []
            for text in texts:
                try:
                    stored.append(first.long_term.remember(text, scope=scope))
                except InvalidInput:
                    continue  # chatter or a lone surrogate: refused, not exported
            out = io.StringIO()
            export_memory(first, out)
            before = first.long_term.all(scope=scope)
        with Memory.open(Path(work) / "b", embedder=HashEmbedder()) as second:
            import_memory(second, out.getvalue().splitlines())
            after = second.long_term.all(scope=scope)
    assert [(r.id, r.text, r.created_at) for r in after] == [(r.id, r.text, r.created_at) for r in before]
    assert len(after) == len(stored)


def test_an_import_refuses_another_embedder_and_names_a_damaged_line(open_memory: OpenMemory, tmp_path: Path) -> None:
    first = open_memory(tmp_path / "a")
    _fill(first)
    out = io.StringIO()
    export_memory(first, out)
    lines = out.getvalue().splitlines()
    other = open_memory(tmp_path / "b", embedder=HashEmbedder(dimension=64))
    with pytest.raises(EmbedderMismatch):
        import_memory(other, lines)
    mem = open_memory(tmp_path / "c")
    with pytest.raises(InvalidInput, match="not a fourfold export"):
        import_memory(mem, lines[1:])
    with pytest.raises(StoreCorrupt, match="line 3"):
        import_memory(mem, [*lines[:2], '{"type": "memory", "id": "m", "text": "x"', *lines[2:]])
    broken = json.loads(lines[1])
    broken["embedding"] = broken["embedding"][:12]
    with pytest.raises(StoreCorrupt, match="line 2"):
        import_memory(mem, [lines[0], json.dumps(broken)])


def test_export_never_holds_api_keys(memory: Memory) -> None:
    _fill(memory)
    _, secret = KeyStore(memory.database).create("acme")
    out = io.StringIO()
    export_memory(memory, out)
    assert "keys" not in {json.loads(line)["type"] for line in out.getvalue().splitlines()}
    assert secret.split("_", 2)[2] not in out.getvalue()  # the secret may itself hold "_"


def test_a_data_dir_of_fourfold_0_1_is_refused_in_one_line_then_migrated(open_memory: OpenMemory, tmp_path: Path) -> None:
    root = _legacy(tmp_path)
    with pytest.raises(StoreUnavailable, match=r"fourfold 0\.1: run `fourfold migrate .*legacy01`") as err:
        open_memory(root)
    assert "\n" not in str(err.value)
    counts = migrate_legacy(root)
    assert (counts.memories, counts.doc_chunks, counts.episodes, counts.facts, counts.fact_history, counts.threads,
            counts.keys) == (5, 1, 2, 3, 1, 1, 1)
    with open_memory(root) as mem:
        assert mem.long_term.recall("email phone", scope="customer:alice", k=1)[0].text == "Prefers email over phone"
        assert [d.source for d in mem.docs.search("returns thirty days")] == ["returns.md"]
        assert mem.facts.get("refund_window_days").value == 45 and mem.facts.history("refund_window_days")[0][0] == 30
        assert [e.goal for e in mem.episodes.similar_successes("invoice pdf 502", scope="customer:alice")] == [
            "Invoice PDF fails with 502"]
        assert mem.conversations.load("customer:alice").messages[0]["content"] == "hello"
        assert KeyStore(mem.database).authenticate(LEGACY_KEY) == "acme"  # keys keep working
    with open_memory(root / "tenants" / "acme") as acme:
        assert [r.text for r in acme.long_term.all(scope="customer:acme1")] == ["Acme prefers invoices by post"]
        assert acme.facts.get("sla_hours").value == 4
    assert (root / "fourfold-0.1-backup" / "episodes.jsonl").exists()
    assert not (root / "vectors").exists() and not (root / "episodes.jsonl").exists()
    with pytest.raises(InvalidInput, match=r"not a fourfold 0\.1 data dir"):
        migrate_legacy(root)  # once is enough


def test_the_export_import_and_migrate_commands(open_memory: OpenMemory, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _legacy(tmp_path)
    assert main(["--data-dir", str(root), "--json", "migrate"]) == 0
    assert json.loads(capsys.readouterr().out)["memories"] == 5
    dump = tmp_path / "dump.jsonl"
    assert main(["--data-dir", str(root), "--embedder", "hash", "export", str(dump)]) == 0
    assert "exported to" in capsys.readouterr().out
    assert oct(dump.stat().st_mode & 0o777) == oct(0o600)
    assert main(["--data-dir", str(tmp_path / "new"), "--embedder", "hash", "--json", "import", str(dump)]) == 0
    imported = json.loads(capsys.readouterr().out)
    assert (imported["memories"], imported["doc_chunks"]) == (4, 1)
    mem = open_memory(tmp_path / "new")
    assert mem.long_term.recall("email phone", scope="customer:alice", k=1)[0].text == "Prefers email over phone"
    assert mem.long_term.all(scope="customer:bob")[0].text == "Ships to the Lyon warehouse"


@pytest.mark.postgres
def test_sqlite_to_postgresql_to_sqlite_gives_back_the_same_data(open_memory: OpenMemory, tmp_path: Path, postgres_url: str) -> None:
    first = open_memory(tmp_path / "a")
    _fill(first)
    dump = _dump(first)
    out = io.StringIO()
    export_memory(first, out)
    middle = open_memory(postgres_url)
    import_memory(middle, out.getvalue().splitlines())
    assert _dump(middle) == dump
    again = io.StringIO()
    export_memory(middle, again)
    last = open_memory(tmp_path / "c")
    import_memory(last, again.getvalue().splitlines())
    assert _dump(last) == dump
