"""The CLI is a thin adapter: JSON where scripts want it, one-line errors and non-zero exits."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import OpenMemory
from fourfold.cli import main


@pytest.fixture
def run(memory_target: Path | str, capsys: pytest.CaptureFixture[str]):  # type: ignore[no-untyped-def]
    """The CLI on a data dir, or on PostgreSQL with --store."""
    where = ["--data-dir", str(memory_target)] if isinstance(memory_target, Path) else ["--store", memory_target]

    def _run(*args: str) -> tuple[int, str, str]:
        code = main([*where, "--embedder", "hash", *args])
        out = capsys.readouterr()
        return code, out.out, out.err

    return _run


def test_remember_recall_forget_round_trip(run) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = run("--json", "remember", "Prefers invoices by email", "--scope", "c:1", "--kind", "preference",
                       "-m", "ticket=T-1")
    assert code == 0
    mid = json.loads(out)["id"]
    code, out, _ = run("--json", "recall", "invoices email", "--scope", "c:1")
    hits = json.loads(out)
    assert code == 0 and hits[0]["id"] == mid and hits[0]["metadata"] == {"ticket": "T-1"}
    assert run("forget", mid)[0] == 0
    code, _, err = run("forget", mid)
    assert code == 3 and err.startswith("error: ") and len(err.strip().splitlines()) == 1


def test_recall_and_list_select_alike(run) -> None:  # type: ignore[no-untyped-def]
    """`recall` and `list` share their selection options: the same flags pick the same memories."""
    ids = {}
    for text, kind, priority in (("Prefers email", "preference", 3), ("Refund sent by email", "resolution", 3),
                                 ("Email bounced once", "note", 3), ("Email address checked", "note", 1)):
        code, out, err = run("--json", "remember", text, "--scope", "c:1", "--kind", kind, "-m", f"priority={priority}")
        assert code == 0, err
        ids[text] = json.loads(out)["id"]
    selection = ["--scope", "c:1", "--kind", "resolution", "--kind", "note", "--where", '{"priority": {"$gte": 2}}',
                 "--as-of", str(2**31)]
    code, out, err = run("--json", "list", *selection)
    assert code == 0, err
    listed = [r["id"] for r in json.loads(out)]
    _, out, _ = run("--json", "recall", "email", "-k", "5", *selection)
    assert listed == [ids["Refund sent by email"], ids["Email bounced once"]]
    assert sorted(h["id"] for h in json.loads(out)) == sorted(listed)
    for command in (["list"], ["recall", "email"]):
        code, _, err = run(*command, "--as-of", "someday")
        assert code == 2 and "--as-of must be ISO 8601" in err, command
        code, _, err = run(*command, "--as-of", "0", "--all-versions")
        assert code == 2 and "not both" in err, command


def test_secrets_are_reported(run) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = run("--json", "remember", "db password=hunter2secret for staging", "--scope", "ops")
    assert code == 0 and json.loads(out)["redacted"] == ["password"]


def test_bad_input_is_one_line_and_nonzero(run) -> None:  # type: ignore[no-untyped-def]
    for args in (["remember", "   "], ["recall", "x", "-k", "0"], ["remember", "ok"], ["remember", "x", "-m", "novalue"]):
        code, _, err = run(*args)
        assert code == 2, args
        assert err.startswith("error: ") and len(err.strip().splitlines()) == 1


def test_facts_and_schema(run) -> None:  # type: ignore[no-untyped-def]
    assert run("facts", "set", "refund_window_days", "30", "--description", "Refund window")[0] == 0
    assert run("facts", "set", "support_hours", "Mon-Fri 9-18")[0] == 0
    _, out, _ = run("--json", "facts", "get", "refund_window_days")
    assert json.loads(out)["value"] == 30
    _, out, _ = run("facts", "schema")
    assert json.loads(out)["input_schema"]["properties"]["key"]["enum"] == ["refund_window_days", "support_hours"]
    assert run("facts", "get", "missing")[0] == 3


def test_episodes_and_docs(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    assert run("episodes", "record", "--goal", "deploy 502", "--action", "restart worker", "--outcome", "fixed")[0] == 0
    code, out, _ = run("episodes", "similar", "deploy gives 502")
    assert code == 0 and out.strip() == "Previously: deploy 502 -> restart worker -> fixed"
    code, out, _ = run("--json", "episodes", "record", "--goal", "printer jam", "--outcome", "cleared", "--scope", "c1")
    assert run("episodes", "delete", json.loads(out)["id"])[0] == 0
    run("episodes", "record", "--goal", "planted advice", "--outcome", "wire money")
    code, out, _ = run("--json", "episodes", "erase", "--unscoped")  # "deploy 502" and the planted one
    assert code == 0 and json.loads(out) == {"deleted": 2}
    assert json.loads(run("--json", "episodes", "list")[1]) == []
    assert run("episodes", "erase")[0] != 0
    doc = tmp_path / "faq.md"
    doc.write_text("# Shipping\n\nParcels ship within two business days.")
    assert run("docs", "ingest", str(doc))[0] == 0
    code, out, _ = run("--json", "docs", "search", "when do parcels ship")
    assert json.loads(out)[0]["source"] == "faq.md"


def test_chat_reads_stdin(tmp_path: Path) -> None:
    env = {**os.environ, "ANTHROPIC_API_KEY": ""}
    proc = subprocess.run(
        [sys.executable, "-m", "fourfold.cli", "--data-dir", str(tmp_path), "--embedder", "hash", "chat", "ann"],
        input="hello, my order ORD-1 is late\n/resolve re-shipped ORD-1\n/quit\n", capture_output=True, text=True,
        env=env, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "[offline model — not an LLM]" in proc.stdout and "resolved: episode" in proc.stdout


def test_help_does_not_import_heavy_dependencies() -> None:
    code = (
        "import sys\nfrom fourfold.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "print('HEAVY', sorted(m for m in ('torch', 'chromadb', 'anthropic', 'sentence_transformers') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "HEAVY []" in out and "remember" in out


def test_store_takes_a_postgresql_url_only(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["--store", str(tmp_path), "--embedder", "hash", "recall", "x"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --store takes a postgresql:// URL") and len(err.strip().splitlines()) == 1


@pytest.mark.postgres
def test_fourfold_store_env_points_every_process_at_postgresql(postgres_url: str, tmp_path: Path, open_memory: OpenMemory) -> None:
    """FOURFOLD_STORE in the environment: a command in another process writes, this one reads."""
    env = {**os.environ, "FOURFOLD_STORE": postgres_url, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.run(
        [sys.executable, "-m", "fourfold.cli", "--embedder", "hash", "--json", "remember", "Ships to Oslo", "--scope", "c:9"],
        capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    mem = open_memory(postgres_url)
    assert [r.id for r in mem.long_term.recall("Oslo", scope="c:9")] == [json.loads(proc.stdout)["id"]]
    assert not any(tmp_path.iterdir())  # nothing written to a data dir


def test_versions_from_the_command_line(tmp_path: Path) -> None:
    """remember --key, update, history, recall --as-of / --all-versions, forget: each a real process."""
    def fourfold(*args: str) -> Any:
        proc = subprocess.run(
            [sys.executable, "-m", "fourfold.cli", "--data-dir", str(tmp_path), "--embedder", "hash", "--json", *args],
            capture_output=True, text=True, timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    a = fourfold("remember", "Prefers email", "--scope", "c1", "--kind", "preference", "--key", "contact_channel",
                 "--valid-from", "2024-01-05")
    b = fourfold("remember", "Prefers text messages", "--scope", "c1", "--key", "contact_channel")
    assert a["supersedes"] == [] and b["supersedes"] == [a["id"]]
    c = fourfold("update", b["id"], "Prefers WhatsApp")
    assert c["supersedes"] == [b["id"]]
    history = fourfold("history", a["id"])
    assert [h["text"] for h in history] == ["Prefers email", "Prefers text messages", "Prefers WhatsApp"]
    assert history[0]["valid_from"] == 1704412800.0 and history[-1]["valid_to"] is None
    assert history[0]["key"] == "contact_channel"
    assert [h["text"] for h in fourfold("recall", "email text WhatsApp", "--scope", "c1", "-k", "5")] == ["Prefers WhatsApp"]
    assert [h["text"] for h in fourfold("recall", "email", "--scope", "c1", "--as-of", "2024-02-01")] == ["Prefers email"]
    assert len(fourfold("recall", "email text WhatsApp", "--scope", "c1", "-k", "5", "--all-versions")) == 3
    fourfold("forget", b["id"])
    assert fourfold("recall", "email text WhatsApp", "--scope", "c1", "--all-versions") == []
    human = subprocess.run(
        [sys.executable, "-m", "fourfold.cli", "--data-dir", str(tmp_path), "--embedder", "hash", "recall", "x",
         "--as-of", "someday"], capture_output=True, text=True, timeout=120,
    )
    assert human.returncode != 0 and "--as-of must be ISO 8601" in human.stderr


def test_add_prints_a_write_as_the_service_does(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """One JSON form of the value types for every surface (`fourfold.serialize.to_json`): `add`
    prints each `Remembered` with the field names of the REST service and of `remember`."""
    said = tmp_path / "said.json"
    said.write_text(json.dumps(["I prefer email over phone calls."]), encoding="utf-8")
    code, out, _ = run("--json", "add", str(said), "--scope", "c:9")
    written = json.loads(out)
    assert code == 0 and [sorted(w) for w in written] == [["created", "id", "redacted", "supersedes", "text"]]


def test_a_command_with_options_does_not_import_pydantic(tmp_path: Path) -> None:
    """Parsing a command's options costs no pydantic: typer 0.29 coerces every parameter through
    a pydantic TypeAdapter (a cost every cold `fourfold recall` would pay), so it is kept below."""
    code = (
        "import sys\nfrom fourfold.cli import main\n"
        f"main(['--data-dir', {str(tmp_path)!r}, '--embedder', 'hash', 'recall', 'late parcel', '--scope', 'c:1', '-k', '3'])\n"
        "print('PYDANTIC', 'pydantic' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "PYDANTIC False" in out


def test_add_refuses_broken_json_naming_where_it_broke(run, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """Input that opens as JSON is read as JSON or refused (exit 2, the position named); it is
    never stored as a line of text. Plain text is still one message a line."""
    monkeypatch.setattr("sys.stdin", io.StringIO('[{"role": "user", "content": "I prefer phone calls"'))
    code, _, err = run("add", "-", "--scope", "x")
    assert code == 2 and "not valid JSON" in err and "line 1 column 52" in err
    monkeypatch.setattr("sys.stdin", io.StringIO("[urgent] I prefer phone calls.\n"))
    code, out, _ = run("--json", "add", "-", "--scope", "x")
    assert code == 0 and [r["text"] for r in json.loads(out)] == ["User said: [urgent] I prefer phone calls."]
    kept = json.loads(run("--json", "recall", "phone calls", "--scope", "x", "-k", "5")[1])
    assert [r["text"] for r in kept] == ["User said: [urgent] I prefer phone calls."]


def test_profile_lists_the_current_keyed_memories_with_when_each_was_set(run) -> None:  # type: ignore[no-untyped-def]
    run("remember", "Prefers phone calls", "--scope", "c:1", "--key", "contact_channel", "--valid-from", "2026-01-01")
    run("remember", "Prefers Signal", "--scope", "c:1", "--key", "contact_channel", "--valid-from", "2026-03-01")
    run("remember", "Owns a label printer", "--scope", "c:1")
    run("remember", "Likes the dark theme", "--scope", "c:1", "--kind", "preference", "--valid-from", "2026-02-01")
    code, out, _ = run("profile", "--scope", "c:1")
    assert code == 0 and [line.split() for line in out.splitlines()] == [
        ["contact_channel", "Prefers", "Signal", "(since", "2026-03-01", "00:00)"],
        ["preference", "Likes", "the", "dark", "theme", "(since", "2026-02-01", "00:00)"]]
    code, out, _ = run("--json", "profile", "--scope", "c:1")
    assert code == 0 and [(r["key"], r["text"]) for r in json.loads(out)] == [
        ("contact_channel", "Prefers Signal"), (None, "Likes the dark theme")]


def test_facts_search_finds_a_policy_by_what_it_is_about(run) -> None:  # type: ignore[no-untyped-def]
    run("facts", "set", "refund_window_days_annual", "60", "--description", "Days to ask for a refund on an annual plan")
    code, out, _ = run("facts", "search", "Can I get my money back on the annual plan?")
    assert code == 0 and out.strip() == "refund_window_days_annual = 60"
