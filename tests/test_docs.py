"""The documentation: the CLI reference is current, the site builds with no broken link, and
the page a newcomer copies from runs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from conftest import OpenMemory
from fourfold.cli.reference import cli_reference

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def test_the_cli_reference_is_generated_from_the_current_app() -> None:
    committed = (DOCS / "cli.md").read_text(encoding="utf-8")
    assert committed == cli_reference(), (
        "docs/cli.md is stale: run `python -m fourfold.cli.reference > docs/cli.md`")


def test_the_cli_reference_lists_every_command_with_its_options() -> None:
    page = cli_reference()
    for heading in ("## fourfold recall", "## fourfold reindex", "### fourfold facts tool-description",
                    "### fourfold docs ingest", "## fourfold serve"):
        assert heading + "\n" in page, heading
    assert "| `-k, --k <int>` | How many to return. [default: 3] |" in page


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    """A broken link or anchor is a warning, and --strict makes any warning fail the build."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                           cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    assert built.returncode == 0, built.stderr[-3000:]
    assert (tmp_path / "site" / "cli" / "index.html").is_file()


def test_the_add_to_your_agent_example_runs(tmp_path: Path) -> None:
    page = (DOCS / "agent.md").read_text(encoding="utf-8")
    code = re.findall(r"```python\n(.*?)```", page, flags=re.S)[0]
    code += "\nprint(context_for('42', 'how do I contact them?'))\nprint(policy.handle({'key': 'refund_window_days'}))\n"
    env = {**os.environ, "FOURFOLD_EMBEDDER": "hash", "HF_HUB_OFFLINE": "1"}
    ran = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert ran.stdout.splitlines()[-1] == "30"


def test_the_guides_code_runs(open_memory: OpenMemory) -> None:
    """Every Python block of these pages runs as written, against a fresh data dir."""

    mem = open_memory()
    system_prompt = "You are a support agent."
    messages = [{"role": "user", "content": "Where is my refund?"}, {"role": "assistant", "content": "Checking."},
                {"role": "user", "content": "Thanks, and the invoice?"}]
    for page in ("kinds.md", "short-term.md", "conversations.md"):
        for block in re.findall(r"```python\n(.*?)```", (DOCS / page).read_text(encoding="utf-8"), flags=re.S):
            exec(block, {"mem": mem, "messages": messages, "system_prompt": system_prompt})
