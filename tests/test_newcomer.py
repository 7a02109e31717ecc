"""A walk-through: what a fresh newcomer trips over, from the outside.

The CLI runs in a subprocess and the service in its own process over HTTP, as a user meets them.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parent.parent


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "FOURFOLD_MODEL", "FOURFOLD_DATA_DIR")}
    return {**env, "HF_HUB_OFFLINE": "1", "FOURFOLD_EMBEDDER": "hash"}


def _fourfold(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fourfold.cli", *args], capture_output=True, text=True,
                          timeout=120, cwd=cwd, env=_env())


# -- a missing data dir: the key commands read it like any other reader ----------------------


@pytest.mark.parametrize("command", [["keys", "list"], ["keys", "revoke", "abc123"]])
def test_key_commands_on_a_mistyped_data_dir_are_an_error_and_create_nothing(tmp_path: Path, command: list[str]) -> None:
    r = _fourfold("--data-dir", str(tmp_path / "typo" / "deep"), *command, cwd=tmp_path)
    assert r.returncode == 1
    assert r.stderr.strip() == f"error: no fourfold data dir at {tmp_path / 'typo' / 'deep'}: nothing has been stored there yet"
    r = _fourfold(*command, cwd=tmp_path)  # no option: ./agent_memory must not appear either
    assert r.returncode == 1
    assert list(tmp_path.iterdir()) == []


def test_keys_create_says_once_where_it_created_the_data_dir(tmp_path: Path) -> None:
    r = _fourfold("keys", "create", "--tenant", "acme", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stderr.startswith(f"fourfold: created a new data dir at {tmp_path / 'agent_memory'} ")
    assert r.stdout.startswith("ffk_")
    again = _fourfold("keys", "create", "--tenant", "acme", cwd=tmp_path)
    assert again.returncode == 0 and again.stderr == ""
    listed = _fourfold("--json", "keys", "list", cwd=tmp_path)
    assert [k["tenant"] for k in json.loads(listed.stdout)] == ["acme", "acme"]


def test_fourfold_mcp_says_on_stderr_when_it_creates_the_data_dir(tmp_path: Path) -> None:
    """An MCP client's config with a mistyped path must not start a new, empty memory unseen."""
    hello = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "probe", "version": "1"}}})
    typo = tmp_path / "Users" / "me" / ".fourfld"
    for expected in (f"fourfold: created a new data dir at {typo} ", ""):
        ran = subprocess.run([sys.executable, "-m", "fourfold.cli", "--data-dir", str(typo), "mcp"], input=hello + "\n",
                             capture_output=True, text=True, timeout=120, cwd=tmp_path, env=_env())
        assert json.loads(ran.stdout.splitlines()[0])["id"] == 1  # stdout stays the protocol's
        assert ran.stderr.startswith(expected) if expected else ran.stderr == ""


# -- documents: two files under one name would replace each other -----------------------------


def test_two_files_with_one_name_are_refused_before_anything_is_stored(tmp_path: Path) -> None:
    for team, text in (("a", "Team A: refunds take 30 days."), ("b", "Team B: parcels ship in 5 days.")):
        (tmp_path / "kb" / team).mkdir(parents=True)
        (tmp_path / "kb" / team / "faq.md").write_text(text + "\n")
    files = [str(tmp_path / "kb" / "a" / "faq.md"), str(tmp_path / "kb" / "b" / "faq.md")]
    r = _fourfold("docs", "ingest", *files, cwd=tmp_path)
    assert r.returncode == 2, r.stdout
    assert "2 files would be stored as the same document 'faq.md'" in r.stderr
    assert "ingest their folder instead" in r.stderr and len(r.stderr.splitlines()) == 1
    # Nothing was half-written: the data dir was never even created.
    assert not (tmp_path / "agent_memory").exists()
    # A glob names its matches by their path inside the folder it starts from, as the folder does.
    r = _fourfold("docs", "ingest", str(tmp_path / "kb" / "*" / "faq.md"), cwd=tmp_path)
    assert r.stdout.splitlines() == ["added     a/faq.md (1 chunks)", "added     b/faq.md (1 chunks)"]
    r = _fourfold("docs", "ingest", str(tmp_path / "kb"), cwd=tmp_path)
    assert r.stdout.splitlines() == ["unchanged a/faq.md (1 chunks)", "unchanged b/faq.md (1 chunks)"]


# -- the README's own library and agent examples run as written -------------------------------


def test_the_readme_library_and_agent_examples_run(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    library, agent = re.findall(r"```python\n(.*?)```", readme, flags=re.S)[:2]
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "refunds.md").write_text("# Refunds\n\nRefunds go back to the card used, within 30 days.\n")
    code = library + agent + "\nprint(mem.docs.search('refund to a card', k=1)[0].source)\n"
    ran = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                         env=_env())
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert ran.stdout.splitlines()[-1] == "refunds.md"


def test_a_file_name_given_as_document_text_says_how_to_read_the_file(tmp_path: Path) -> None:
    code = ("from fourfold import Memory\nfrom fourfold.errors import InvalidInput\n"
            "mem = Memory.open('data')\n"
            "try:\n    mem.docs.ingest('docs/refunds.md')\nexcept InvalidInput as exc:\n    print(exc)\n")
    ran = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                         env=_env())
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert "never a file name" in ran.stdout and "ingest_file(path)" in ran.stdout


# -- the service: a malformed body says what is wrong with it ---------------------------------


@pytest.mark.slow  # a real `fourfold serve` process
def test_a_malformed_request_body_is_explained(tmp_path: Path) -> None:
    from fourfold.service.testing import LiveService

    with LiveService(tmp_path / "data", keys={"acme": 1}) as live:
        headers = {"Authorization": f"Bearer {live.keys['acme'][0]}"}
        search = f"{live.url}/v1/memories/search"
        broken = httpx.post(search, content=b'{"query": "contact", "k": 3', timeout=30,
                            headers={**headers, "Content-Type": "application/json"})
        assert broken.status_code == 422
        assert broken.json()["error"] == {
            "code": "invalid_input", "message": "the request body is not valid JSON at character 27: Expecting ',' delimiter"}
        form = httpx.post(search, content=b'{"query": "contact"}', timeout=30,
                          headers={**headers, "Content-Type": "application/x-www-form-urlencoded"})  # curl -d's default
        assert form.status_code == 422
        assert form.json()["error"]["message"] == (
            "the request body must be a JSON object (send Content-Type: application/json)")
        field = httpx.post(search, json={"query": 3}, headers=headers, timeout=30)
        assert field.status_code == 422 and field.json()["error"]["message"] == "query: Input should be a valid string"


# -- benchmarks: "arguments pass through", --help included ------------------------------------


def test_bench_help_shows_the_benchmarks_own_options(tmp_path: Path) -> None:
    r = _fourfold("bench", "locomo", "--help", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("usage: locomo.py") and "--data DATA" in r.stdout


# -- the second hour: a support lead's own help-desk data through the CLI -----------------------


def _desk(tmp_path: Path) -> Path:
    """A data dir as the newcomer had it: a customer with a changed preference, and a document."""
    data = tmp_path / "data"
    for args in (["remember", "Prefers phone", "--scope", "customer:acme", "--kind", "preference", "--key", "contact"],
                 ["remember", "Prefers email, never phone", "--scope", "customer:acme", "--kind", "preference",
                  "--key", "contact"],
                 ["remember", "Reached through the acme portal", "--scope", "customer:acme"]):
        assert _fourfold("--data-dir", str(data), *args, cwd=tmp_path).returncode == 0
    (tmp_path / "kb").mkdir()
    (tmp_path / "kb" / "billing.md").write_text("# Billing\n\nInvoices are sent on the first of the month.\n")
    assert _fourfold("--data-dir", str(data), "docs", "ingest", str(tmp_path / "kb"), cwd=tmp_path).returncode == 0
    return data


def test_a_missing_or_mistyped_scope_is_hinted_at(tmp_path: Path) -> None:
    data = str(_desk(tmp_path))
    for command in (["recall", "reach"], ["list"]):  # the memories are all under a scope
        r = _fourfold("--data-dir", data, *command, cwd=tmp_path)
        assert r.returncode == 0 and r.stdout.strip() in ("(nothing)", "(none)")
        assert r.stderr == ("hint: no memories without a scope; memories are stored under customer:acme "
                            "(pass --scope; `fourfold scopes` lists them)\n")
    r = _fourfold("--data-dir", data, "recall", "reach", "--scope", "customer:acm", cwd=tmp_path)
    assert r.stdout.strip() == "(nothing)"
    assert r.stderr == "hint: nothing is stored under scope 'customer:acm'; did you mean 'customer:acme'?\n"
    r = _fourfold("--data-dir", data, "recall", "reach", "--scope", "customer:acme", cwd=tmp_path)
    assert r.stderr == "" and "acme portal" in r.stdout  # a scope that answers needs no hint


def test_recall_all_versions_marks_the_old_ones(tmp_path: Path) -> None:
    data = str(_desk(tmp_path))
    for command in (["recall", "phone", "--scope", "customer:acme", "--all-versions"],
                    ["list", "--scope", "customer:acme", "--all-versions"]):
        lines = _fourfold("--data-dir", data, *command, cwd=tmp_path).stdout.splitlines()
        old = [line for line in lines if "Prefers phone" in line]
        current = [line for line in lines if "Prefers email" in line]
        assert len(old) == 1 and re.search(r"; old version, replaced \d{4}-\d\d-\d\d \d\d:\d\d\)$", old[0]), lines
        assert len(current) == 1 and "old version" not in current[0]


def test_counts_agree_and_a_second_import_adds_nothing(tmp_path: Path) -> None:
    data = str(_desk(tmp_path))
    # the scopes table counts what a listing of the scope shows; old versions apart
    assert _fourfold("--data-dir", data, "scopes", cwd=tmp_path).stdout == "customer:acme  2 memories, 1 old versions\n"
    listed = _fourfold("--data-dir", data, "list", "--scope", "customer:acme", cwd=tmp_path).stdout.splitlines()
    assert len(listed) == 2
    dump = str(tmp_path / "desk.jsonl")
    r = _fourfold("--data-dir", data, "export", dump, cwd=tmp_path)
    assert r.stdout == f"exported to {dump}: 2 memories, 1 old versions, 1 doc chunks\n"
    fresh = str(tmp_path / "copy")
    assert _fourfold("--data-dir", fresh, "import", dump, cwd=tmp_path).stdout == (
        f"imported from {dump}: 2 memories, 1 old versions, 1 doc chunks\n")
    assert _fourfold("--data-dir", fresh, "import", dump, cwd=tmp_path).stdout == (
        f"imported from {dump}: nothing new (4 already there)\n")


def test_facts_history_is_a_command_like_the_rest_route(tmp_path: Path) -> None:
    for value in ("30", "45"):
        assert _fourfold("facts", "set", "refund_window_days", value, cwd=tmp_path).returncode == 0
    r = _fourfold("facts", "history", "refund_window_days", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    first, now = r.stdout.splitlines()
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d  30", first) and now == "now               45"
    r = _fourfold("--json", "facts", "history", "refund_window_days", cwd=tmp_path)
    assert json.loads(r.stdout)["current"] == 45 and [h["value"] for h in json.loads(r.stdout)["history"]] == [30]
    r = _fourfold("facts", "history", "refund_window", cwd=tmp_path)
    assert r.returncode == 3 and r.stderr == "error: no fact 'refund_window'; did you mean 'refund_window_days'?\n"


def test_docs_delete_suggests_the_source_name_with_its_suffix(tmp_path: Path) -> None:
    data = str(_desk(tmp_path))
    r = _fourfold("--data-dir", data, "docs", "delete", "billing", cwd=tmp_path)
    assert r.returncode == 3 and r.stderr == "error: no document with source 'billing'; did you mean 'billing.md'?\n"
    assert _fourfold("--data-dir", data, "docs", "delete", "billing.md", cwd=tmp_path).returncode == 0


def test_a_key_for_an_empty_tenant_says_where_the_cli_data_is(tmp_path: Path) -> None:
    data = str(_desk(tmp_path))
    r = _fourfold("--data-dir", data, "keys", "create", "--tenant", "acme-desk", cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.startswith("ffk_")
    assert r.stderr == (f"warning: tenant 'acme-desk' is empty; what the CLI stored in {data} (1 scopes, 1 documents) "
                        "is tenant 'default', which this key cannot read: to serve that data, create a key with "
                        "--tenant default\n")
    r = _fourfold("--data-dir", data, "keys", "create", "--tenant", "default", cwd=tmp_path)
    assert r.returncode == 0 and r.stderr == ""


def test_every_locomo_recall_quoted_is_one_the_results_report() -> None:
    """README, docs and the CLI reference (its help) quote the benchmark results they cite, not older runs."""
    reported = set(re.findall(r"0\.\d{3}", (ROOT / "benchmarks" / "results" / "locomo-dev.md").read_text()))
    quoted: dict[str, set[str]] = {}
    for page in (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))):
        text = " ".join(page.read_text(encoding="utf-8").split())
        for found in re.finditer(r"R@10\b.{0,60}?(0\.\d{3})(?: (?:instead of|against|to) (0\.\d{3}))?", text):
            quoted.setdefault(page.name, set()).update(n for n in found.groups() if n)
    assert quoted and all(numbers <= reported for numbers in quoted.values()), (quoted, reported)
