"""The `fourfold` command from the outside: what a newcomer does in the first hour.

Every test runs the CLI in a subprocess, as a user would, and asserts what they would see.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from fourfold.models import ChatResponse, ToolCall
from fourfold.testing import FakeLLMServer

Run = Callable[..., subprocess.CompletedProcess[str]]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "FOURFOLD_MODEL", "FOURFOLD_DATA_DIR")}
    return {**env, "HF_HUB_OFFLINE": "1", "FOURFOLD_EMBEDDER": "hash", **extra}


@pytest.fixture
def cli(tmp_path: Path) -> Run:
    """`fourfold ARGS` in a subprocess on a fresh data dir (hash embeddings: fast and offline)."""

    def run(*args: str, stdin: str = "", cwd: Path | None = None, data: bool = True,
            env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        prefix = ["--data-dir", str(tmp_path / "data")] if data else []
        return subprocess.run([sys.executable, "-m", "fourfold.cli", *prefix, *args], input=stdin,
                              capture_output=True, text=True, timeout=120, cwd=cwd, env=_env(**(env or {})))

    return run


# -- 1. global options anywhere, errors as JSON -----------------------------------------


def test_global_options_work_after_the_subcommand(cli: Run) -> None:
    assert cli("remember", "Prefers email in the morning", "--scope", "customer:42").returncode == 0
    r = cli("recall", "how to contact them", "--scope", "customer:42", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)[0]["text"] == "Prefers email in the morning"


def test_data_dir_option_after_the_subcommand(cli: Run, tmp_path: Path) -> None:
    other = tmp_path / "other"
    assert cli("remember", "Ships to Rotterdam", "--data-dir", str(other), data=False).returncode == 0
    assert (other / "fourfold.json").exists()


def test_errors_are_json_under_json(cli: Run) -> None:
    cli("remember", "Prefers email", "--scope", "c:1")
    r = cli("forget", "mem_doesnotexist", "--json")
    assert r.returncode == 3 and r.stdout == ""
    assert json.loads(r.stderr) == {"error": {"code": "not_found", "exit_code": 3,
                                              "message": "no memory with id 'mem_doesnotexist'"}}
    usage = cli("--json", "recall")  # a usage error, before any command ran
    assert usage.returncode == 2 and json.loads(usage.stderr)["error"]["code"] == "usage"


def test_plain_errors_stay_one_line(cli: Run) -> None:
    cli("remember", "Prefers email", "--scope", "c:1")
    r = cli("forget", "mem_doesnotexist")
    assert r.returncode == 3 and r.stderr == "error: no memory with id 'mem_doesnotexist'\n"


# -- 2. readers never create a store -----------------------------------------------------


def test_a_missing_data_dir_is_an_error_and_is_not_created(cli: Run, tmp_path: Path) -> None:
    missing = tmp_path / "nope" / "x" / "y"
    for args in (["recall", "x"], ["scopes"], ["facts", "list"], ["docs", "list"], ["episodes", "list"]):
        r = cli("--data-dir", str(missing), *args, data=False)
        assert r.returncode == 1 and r.stderr.startswith("error: no fourfold data dir at "), (args, r.stderr)
        assert len(r.stderr.splitlines()) == 1
    assert not (tmp_path / "nope").exists()


def test_reading_with_no_data_dir_leaves_the_working_directory_alone(cli: Run, tmp_path: Path) -> None:
    here = tmp_path / "here"
    here.mkdir()
    r = cli("recall", "x", cwd=here, data=False)
    assert r.returncode == 1 and list(here.iterdir()) == []


def test_the_first_write_says_where_the_data_lives(cli: Run, tmp_path: Path) -> None:
    first = cli("remember", "Prefers email", "--scope", "c:1")
    assert f"created a new data dir at {tmp_path / 'data'}" in first.stderr
    assert "created" not in cli("remember", "Prefers phone", "--scope", "c:2").stderr


# -- 3. erasure ---------------------------------------------------------------------------


def test_forget_scope_of_an_unknown_scope_names_the_likely_one(cli: Run) -> None:
    cli("remember", "Prefers email", "--scope", "customer:alice")
    r = cli("forget-scope", "alice", "--yes")
    assert r.returncode == 3
    assert "nothing is stored under scope 'alice'; did you mean 'customer:alice'?" in r.stderr
    assert "customer:alice" in cli("scopes").stdout  # nothing was erased


def test_scopes_lists_counts_and_forget_scope_erases(cli: Run) -> None:
    cli("remember", "Prefers email", "--scope", "customer:42")
    cli("remember", "Has two dogs", "--scope", "customer:42")
    cli("episodes", "record", "--goal", "late parcel", "--outcome", "re-shipped", "--scope", "customer:42")
    r = cli("--json", "scopes")
    assert json.loads(r.stdout) == {"customer:42": {"memories": 2, "old_versions": 0, "docs": 0, "episodes": 1,
                                                     "conversations": 0}}
    assert cli("scopes").stdout.strip() == "customer:42  2 memories, 1 episodes"
    r = cli("forget-scope", "customer:42")  # not a terminal: no question asked
    assert r.returncode == 0 and r.stdout.strip() == "2 memories, 1 episodes, 0 cases, 0 conversations removed from customer:42"
    assert cli("scopes").stdout.strip() == "(no scopes)"


def test_forget_scope_asks_on_a_terminal(tmp_path: Path) -> None:
    pexpect = pytest.importorskip("pexpect")
    data = str(tmp_path / "data")
    base = [sys.executable, "-m", "fourfold.cli", "--data-dir", data]
    subprocess.run([*base, "remember", "Prefers email", "--scope", "customer:7"], env=_env(), check=True,
                   capture_output=True)
    child = pexpect.spawn(base[0], [*base[1:], "forget-scope", "customer:7"], env=_env(), encoding="utf-8", timeout=60)
    child.expect(r"Erase scope customer:7 \(1 memories\)")
    child.sendline("n")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 1
    kept = subprocess.run([*base, "scopes"], env=_env(), capture_output=True, text=True)
    assert "customer:7" in kept.stdout
    child = pexpect.spawn(base[0], [*base[1:], "forget-scope", "customer:7"], env=_env(), encoding="utf-8", timeout=60)
    child.expect("cannot be undone")
    child.sendline("y")
    child.expect("1 memories, 0 episodes, 0 cases, 0 conversations removed from customer:7")
    child.expect(pexpect.EOF)


# -- 4. documents -------------------------------------------------------------------------


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / ".git").mkdir()
    (docs / "refunds.md").write_text("# Refunds\n\nRefunds go back to the original card within 30 days.\n")
    (docs / "shipping.txt").write_text("Parcels ship from Rotterdam every weekday before noon.\n")
    (docs / "sub" / "warranty.md").write_text("# Warranty\n\nDevices carry a two year warranty.\n")
    (docs / "logo.png").write_bytes(b"\x89PNG not text")
    (docs / ".git" / "HEAD.md").write_text("ref: refs/heads/main\n")
    return docs


def test_docs_ingest_a_folder_then_skip_unchanged_and_replace_changed(cli: Run, folder: Path) -> None:
    r = cli("docs", "ingest", str(folder))
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["added     refunds.md (1 chunks)", "added     shipping.txt (1 chunks)",
                                     "added     sub/warranty.md (1 chunks)"]
    listed = json.loads(cli("--json", "docs", "list").stdout)
    assert [(d["source"], d["chunks"]) for d in listed] == [("refunds.md", 1), ("shipping.txt", 1), ("sub/warranty.md", 1)]
    (folder / "refunds.md").write_text("# Refunds\n\nRefunds are issued as store credit within 14 days.\n")
    r = cli("docs", "ingest", str(folder))
    assert r.stdout.splitlines() == ["replaced  refunds.md (1 chunks, 1 old removed)",
                                     "unchanged shipping.txt (1 chunks)", "unchanged sub/warranty.md (1 chunks)"]
    hits = json.loads(cli("--json", "docs", "search", "how are refunds paid back").stdout)
    texts = " ".join(h["text"] for h in hits)
    assert "store credit" in texts and "original card" not in texts


def test_docs_ingest_globs_and_delete(cli: Run, folder: Path) -> None:
    r = cli("docs", "ingest", str(folder / "**" / "*.md"))
    # named by their path inside the folder the pattern starts from, as the folder names them
    assert r.returncode == 0 and [line.split()[1] for line in r.stdout.splitlines()] == ["refunds.md", "sub/warranty.md"]
    again = cli("docs", "ingest", str(folder))
    assert [line.split()[0] for line in again.stdout.splitlines()] == ["unchanged", "added", "unchanged"]
    assert cli("docs", "delete", "sub/warranty.md").stdout.strip() == "deleted sub/warranty.md (1 chunks)"
    assert [d["source"] for d in json.loads(cli("--json", "docs", "list").stdout)] == ["refunds.md", "shipping.txt"]
    gone = cli("docs", "delete", "sub/warranty.md")
    assert gone.returncode == 3 and "no document with source 'sub/warranty.md'" in gone.stderr


def test_docs_ingest_a_typo_is_an_error(cli: Run, folder: Path) -> None:
    cli("docs", "ingest", str(folder / "refunds.md"))
    r = cli("docs", "ingest", str(folder / "refund.md"))
    assert r.returncode == 3 and "no such file or folder" in r.stderr
    r = cli("docs", "ingest", str(folder / "*.pdf"))
    assert r.returncode == 3 and "no file matches" in r.stderr


# -- 5. chat ------------------------------------------------------------------------------


def test_chat_survives_mistakes_and_records_failures(cli: Run) -> None:
    lines = ["/resolve", "/resolve fixed it", "/frobnicate", "/help", "My parcel ORD-9 is late",
             "/resolve", "/fail courier lost the parcel", "/customer bob", "/history", "/quit"]
    r = cli("chat", "ann", stdin="\n".join(lines) + "\n")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "error: say what happened: /resolve WHAT FIXED IT" in out
    assert "error: customer 'ann' has no open ticket to resolve" in out
    assert "error: unknown command /frobnicate: /help lists the commands" in out
    assert "/fail WHAT HAPPENED" in out and "[offline model — not an LLM]" in out
    assert "closed as failed: episode" in out and "now talking as bob" in out and "(no conversation yet)" in out
    episodes = json.loads(cli("--json", "episodes", "list", "--scope", "customer:ann").stdout)
    assert [(e["goal"], e["outcome"], e["success"]) for e in episodes] == [
        ("My parcel ORD-9 is late", "courier lost the parcel", False)]


def test_chat_a_first_short_ticket_teaches_the_next_customer(cli: Run) -> None:
    # One customer, a short ticket, an outcome that does not repeat the problem.
    lines = ["My invoice PDF fails with error 502", "/resolve Cleared the browser cache", "/customer bob",
             "My invoice PDF fails with error 502, what can I do?", "/quit"]
    r = cli("chat", "alice", stdin="\n".join(lines) + "\n")
    assert r.returncode == 0, r.stderr
    assert "cleared the browser cache" in r.stdout.split("now talking as bob", 1)[1].lower()
    cases = json.loads(cli("--json", "episodes", "list", "--scope", "shared:cases").stdout)
    # ordinary language travels whole: only what identifies someone is removed
    assert [(c["goal"], c["outcome"]) for c in cases] == [("My invoice PDF fails with error 502", "Cleared the browser cache")]


def test_chat_on_a_terminal_has_a_prompt_and_keeps_going(tmp_path: Path) -> None:
    pexpect = pytest.importorskip("pexpect")
    args = ["-m", "fourfold.cli", "--data-dir", str(tmp_path / "d"), "chat", "ann"]
    child = pexpect.spawn(sys.executable, args, env=_env(), encoding="utf-8", timeout=90)
    child.expect("/help lists the commands")
    child.expect_exact("ann> ")
    child.sendline("/oops")
    child.expect("unknown command /oops")
    child.expect_exact("ann> ")
    child.sendline("Where is my order ORD-1?")
    child.expect_exact("agent:")
    child.expect_exact("ann> ")
    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


# -- 6. one model spec everywhere ---------------------------------------------------------


def _tool_then_answer(body: dict[str, Any]) -> ChatResponse:
    """Ask for the refund window first; once the tool's result is in, answer with it."""
    answered = any(
        m.get("role") == "tool"
        or (isinstance(m.get("content"), list) and any(b.get("type") == "tool_result" for b in m["content"]))
        for m in body.get("messages", [])
    )
    if answered:
        return ChatResponse("Refunds are accepted for 30 days.")
    return ChatResponse("Let me check.", (ToolCall("call_1", "lookup_policy", {"key": "refund_window_days"}),), "tool_use")


@pytest.fixture
def fake() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(_tool_then_answer) as server:
        yield server


@pytest.mark.parametrize("form", ["anthropic", "openai", "openai-compatible", "ollama", "env"])
def test_model_spec_drives_chat_through_the_real_sdk(cli: Run, fake: FakeLLMServer, form: str) -> None:
    spec, env = {
        "anthropic": (f"anthropic:claude-test@{fake.url}", {"ANTHROPIC_API_KEY": "test"}),
        "openai": ("openai:gpt-4.1-mini", {"OPENAI_API_KEY": "test", "OPENAI_BASE_URL": fake.openai_url}),
        "openai-compatible": (f"openai-compatible:llama3.1@{fake.openai_url}", {}),
        "ollama": (f"ollama:llama3.1@{fake.openai_url}", {}),
        "env": ("", {"FOURFOLD_MODEL": f"openai-compatible:qwen3@{fake.openai_url}"}),
    }[form]
    cli("facts", "set", "refund_window_days", "30")
    args = ["--model", spec] if spec else []
    r = cli(*args, "chat", "ann", stdin="How long do I have for a refund?\n", env=env)
    assert r.returncode == 0, r.stderr
    assert "agent: Refunds are accepted for 30 days." in r.stdout
    assert "tool     lookup_policy" in r.stdout and "-> 30" in r.stdout
    chats = [q for q in fake.requests if q.path in ("/v1/messages", "/v1/chat/completions")]
    assert len(chats) == 2  # the tool loop: ask, then answer with the result
    assert chats[-1].body["model"] == {"anthropic": "claude-test", "openai": "gpt-4.1-mini", "env": "qwen3"}.get(
        form, "llama3.1")


def test_the_offline_spec_runs_the_tool_loop_without_any_server(cli: Run, fake: FakeLLMServer) -> None:
    cli("facts", "set", "refund_window_days", "30")
    r = cli("--model", "offline", "chat", "ann", stdin="What is the refund window?\n",
            env={"ANTHROPIC_API_KEY": "test", "ANTHROPIC_BASE_URL": fake.url})
    assert r.returncode == 0, r.stderr
    assert "tool     lookup_policy" in r.stdout and "-> 30" in r.stdout and "[offline model" in r.stdout
    assert fake.requests == []  # offline wins over a key in the environment


def test_a_bad_model_spec_is_one_line(cli: Run) -> None:
    r = cli("--model", "gpt5", "chat", "ann", stdin="hi\n")
    assert r.returncode == 2
    assert r.stderr.startswith("error: unknown model provider 'gpt5'") and "openai-compatible:MODEL@BASE_URL" in r.stderr


@pytest.mark.parametrize("form", ["openai-compatible", "openai"])
def test_embedder_spec_uses_an_embeddings_endpoint(cli: Run, fake: FakeLLMServer, form: str) -> None:
    spec, env, model = {
        "openai-compatible": (f"openai-compatible:embed-test@{fake.openai_url}?dimension=8", {}, "embed-test"),
        "openai": ("openai:text-embedding-3-small?dimension=8",
                   {"OPENAI_API_KEY": "test", "OPENAI_BASE_URL": fake.openai_url}, "text-embedding-3-small"),
    }[form]
    assert cli("--embedder", spec, "remember", "Prefers email", "--scope", "c:1", env=env).returncode == 0
    assert fake.requests[-1].path == "/v1/embeddings" and fake.requests[-1].body["model"] == model
    r = cli("--embedder", spec, "--json", "recall", "email", "--scope", "c:1", env=env)
    assert [h["text"] for h in json.loads(r.stdout)] == ["Prefers email"]
    r = cli("--embedder", "hash", "recall", "email", "--scope", "c:1")
    assert r.returncode == 1 and "error:" in r.stderr  # the store remembers its embedder


@pytest.mark.slow
def test_the_default_embedder_is_the_packaged_minilm(cli: Run, tmp_path: Path) -> None:
    from fourfold.embeddings import default_embedder

    env = {k: v for k, v in _env().items() if k != "FOURFOLD_EMBEDDER"}
    run = [sys.executable, "-m", "fourfold.cli", "--data-dir", str(tmp_path / "mini")]
    for args in (["remember", "Prefers email over phone", "--scope", "c:1"], ["--json", "recall", "how to reach them", "--scope", "c:1"]):
        r = subprocess.run([*run, *args], capture_output=True, text=True, timeout=300, env=env)
        assert r.returncode == 0, r.stderr
    assert [h["text"] for h in json.loads(r.stdout)] == ["Prefers email over phone"]
    manifest = json.loads((tmp_path / "mini" / "fourfold.json").read_text())
    assert manifest["embedder"] == default_embedder().identity and "minilm" in manifest["embedder"].lower()


# -- 10. listing and filtering memories ----------------------------------------------------


def test_list_and_where_from_the_command_line(cli: Run) -> None:
    cli("remember", "Prefers email over phone", "--scope", "c:1", "-m", "priority=3", "-m", "channel=email")
    cli("remember", "Lives near the Lyon warehouse", "--scope", "c:1", "-m", "priority=1")
    cli("remember", "Another customer", "--scope", "c:2")
    listed = json.loads(cli("--json", "list", "--scope", "c:1").stdout)
    assert [m["text"] for m in listed] == ["Prefers email over phone", "Lives near the Lyon warehouse"]
    r = cli("list", "--scope", "c:1", "--where", '{"priority": {"$gte": 2}}')
    assert r.returncode == 0 and "Prefers email" in r.stdout and "Lyon" not in r.stdout
    r = cli("--json", "recall", "warehouse email", "--scope", "c:1", "--where", '{"channel": {"$ne": "email"}}')
    assert [h["text"] for h in json.loads(r.stdout)] == ["Lives near the Lyon warehouse"]
    r = cli("list", "--scope", "c:1", "--where", '{"created_at": {"$lt": "2000-01-01"}}')
    assert r.returncode == 0 and r.stdout.strip() == "(none)"
    for bad in ['{"priority": {"$regex": 1}}', '{"priority": ']:
        r = cli("list", "--scope", "c:1", "--where", bad)
        assert r.returncode == 2 and r.stderr.startswith("error: ") and len(r.stderr.splitlines()) == 1


# -- 7. facts -----------------------------------------------------------------------------


def test_facts_refuse_broken_json_but_keep_plain_text(cli: Run) -> None:
    r = cli("facts", "set", "k", '{"a": 1')
    assert r.returncode == 2 and "looks like JSON but is not valid" in r.stderr and "--string" in r.stderr
    assert cli("facts", "set", "k", '{"a": 1', "--string").returncode == 0
    assert cli("facts", "set", "hours", "Mon-Fri 9-18").returncode == 0
    facts = {f["key"]: f["value"] for f in json.loads(cli("--json", "facts", "list").stdout)}
    assert facts == {"k": '{"a": 1', "hours": "Mon-Fri 9-18"}


def test_fact_descriptions_and_the_operators_tool_description_reach_the_schema(cli: Run) -> None:
    cli("facts", "set", "refund_window_days", "30", "--description", "Days a customer has to ask for a refund")
    cli("facts", "set", "support_hours", "Mon-Fri 9-18")
    schema = json.loads(cli("facts", "schema", "--description", "Values of the Acme returns desk").stdout)
    assert schema["description"] == "Values of the Acme returns desk"
    key = schema["input_schema"]["properties"]["key"]
    assert key["enum"] == ["refund_window_days", "support_hours"]
    assert key["description"].endswith("refund_window_days: Days a customer has to ask for a refund.")


def test_the_stored_tool_description_reaches_the_model_in_chat(cli: Run, fake: FakeLLMServer) -> None:
    cli("facts", "set", "refund_window_days", "30", "--description", "Days a customer has to ask for a refund")
    r = cli("facts", "tool-description", "Values of the Acme returns desk; use it for refunds.")
    assert r.returncode == 0 and r.stdout.strip() == "Values of the Acme returns desk; use it for refunds."
    assert cli("facts", "tool-description").stdout.strip() == "Values of the Acme returns desk; use it for refunds."
    assert json.loads(cli("facts", "schema").stdout)["description"].startswith("Values of the Acme returns desk")
    r = cli("--model", f"openai-compatible:llama3.1@{fake.openai_url}", "chat", "ann", stdin="Refund window?\n")
    assert r.returncode == 0, r.stderr
    tool, search = fake.requests[0].body["tools"]  # the lookup, and the search over the facts
    assert search["function"]["name"] == "search_policy"
    assert tool["function"]["description"] == "Values of the Acme returns desk; use it for refunds."
    assert tool["function"]["parameters"]["properties"]["key"]["description"].endswith(
        "refund_window_days: Days a customer has to ask for a refund.")
    assert cli("facts", "tool-description", "--reset").stdout.strip().startswith("Return an authoritative")
    assert cli("facts", "tool-description", " ").returncode == 2


# -- 6 and 8. the service: --model after `serve`, and /docs offline ------------------------


@pytest.mark.slow  # a real `fourfold serve` process
def test_service_takes_the_model_spec_and_serves_swagger_offline(tmp_path: Path, fake: FakeLLMServer) -> None:
    import re

    import httpx

    from fourfold.service.testing import LiveService

    spec = f"openai-compatible:llama3.1@{fake.openai_url}"
    with LiveService(tmp_path, serve_args=["--model", spec]) as live:
        html = httpx.get(f"{live.url}/docs").text
        assert "SwaggerUIBundle" in html and "://" not in html  # nothing from a CDN, nothing absolute
        assets = re.findall(r'(?:src|href)="([^"]+)"', html)
        assert any(a.endswith("swagger-ui-bundle.js") for a in assets) and any(a.endswith(".css") for a in assets)
        for asset in assets:
            got = httpx.get(f"{live.url}{asset}")
            assert got.status_code == 200 and len(got.content) > 500, asset
        reply = httpx.post(f"{live.url}/v1/agent/turn", json={"customer_id": "ann", "message": "Refund window?"},
                           timeout=60)
        assert reply.status_code == 200, reply.text
        assert reply.json()["text"] == "Refunds are accepted for 30 days."
    assert {q.body["model"] for q in fake.requests if q.path == "/v1/chat/completions"} == {"llama3.1"}
