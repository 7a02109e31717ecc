"""`fourfold serve` as a real uvicorn process, driven by the CLI and by `connect()`."""

from __future__ import annotations

import subprocess
from pathlib import Path

import httpx
import pytest

from fourfold.remote import Unauthorized, connect
from fourfold.service.testing import LiveService, cli_command


@pytest.mark.slow
def test_serve_answers_healthz_and_serves_the_api_with_keys(tmp_path: Path) -> None:
    with LiveService(tmp_path, keys={"acme": 1}) as live:
        assert httpx.get(f"{live.url}/healthz").json() == {"status": "ok"}
        assert httpx.get(f"{live.url}/openapi.json").json()["info"]["title"] == "fourfold"
        assert httpx.get(f"{live.url}/v1/whoami").status_code == 401
        with connect(live.url, api_key=live.keys["acme"][0]) as memory:
            mid = memory.long_term.remember("Ships to the Lyon warehouse", scope="c1")
            assert [r.id for r in memory.long_term.recall("Lyon warehouse", scope="c1")] == [mid]
            # a second service on the same data dir serves the same memories, both ways, at once
            with LiveService(tmp_path, keys={"acme": 1}) as second, \
                    connect(second.url, api_key=second.keys["acme"][0]) as other:
                assert [r.id for r in other.long_term.recall("Lyon warehouse", scope="c1")] == [mid]
                theirs = other.long_term.remember("Invoices go to the Porto office", scope="c1")
                assert [r.id for r in memory.long_term.recall("Porto office invoices", scope="c1", k=1)] == [theirs]
                other.long_term.forget(theirs)
                assert theirs not in [r.id for r in memory.long_term.recall("Porto office invoices", scope="c1")]
        # revoking with the CLI while the service runs takes effect on the next request
        key_id = live.keys["acme"][0].split("_")[1]
        subprocess.run(cli_command("--data-dir", str(tmp_path), "keys", "revoke", key_id), check=True, capture_output=True)
        with connect(live.url, api_key=live.keys["acme"][0]) as memory, pytest.raises(Unauthorized):
            memory.long_term.recall("Lyon")
    # data written through the service is in the data dir, for the next service
    with LiveService(tmp_path, keys={"acme": 1}) as live, connect(live.url, api_key=live.keys["acme"][0]) as memory:
        assert [r.text for r in memory.long_term.all(scope="c1")] == ["Ships to the Lyon warehouse"]


def test_binding_beyond_loopback_without_a_key_is_refused(tmp_path: Path) -> None:
    out = subprocess.run(cli_command("--data-dir", str(tmp_path), "--embedder", "hash", "serve", "--host", "0.0.0.0"),
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert "refusing to bind 0.0.0.0 without an API key" in out.stderr


def test_serve_embeds_queries_with_int8_minilm_unless_told_otherwise(tmp_path: Path) -> None:
    import fourfold.cli.app  # noqa: F401 - the command modules load through the CLI app
    from fourfold.cli.service_commands import _query_embedder
    from fourfold.embeddings import HashEmbedder
    from fourfold.embeddings.onnx import OnnxMiniLMEmbedder, OnnxMiniLMInt8Embedder

    assert isinstance(_query_embedder(OnnxMiniLMEmbedder(), "int8"), OnnxMiniLMInt8Embedder)
    assert _query_embedder(OnnxMiniLMEmbedder(), "exact") is None
    assert _query_embedder(HashEmbedder(), "int8") is None  # no int8 variant: queries use the model itself
    out = subprocess.run(cli_command("--data-dir", str(tmp_path), "--embedder", "hash", "serve", "--query-model", "fp16"),
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "unknown query model 'fp16'" in out.stderr


def test_keys_commands(tmp_path: Path) -> None:
    def fourfold(*args: str) -> str:
        return subprocess.run(cli_command("--data-dir", str(tmp_path), *args), check=True,
                              capture_output=True, text=True, timeout=60).stdout

    key = fourfold("keys", "create", "--tenant", "acme", "--label", "ci").strip()
    assert key.startswith("ffk_")
    listing = fourfold("keys", "list")
    assert "acme" in listing and "active" in listing and key not in listing
    assert "revoked" in fourfold("keys", "revoke", key.split("_")[1])
    assert "revoked" in fourfold("keys", "list")
    bad = subprocess.run(cli_command("--data-dir", str(tmp_path), "keys", "create", "--tenant", "Not Valid"),
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "tenant name" in bad.stderr


def test_fourfold_help_does_not_import_the_service_stack() -> None:
    code = (
        "import sys\n"
        "from fourfold.cli.app import app\n"
        "from fourfold.cli.service_commands import register\n"
        "register(app)\n"
        "from fourfold.cli import main\n"
        "main(['--help'])\n"
        "import fourfold\n"
        "heavy = [m for m in ('fastapi', 'uvicorn', 'mcp', 'starlette') if m in sys.modules]\n"
        "print('heavy:', heavy)\n"
    )
    import sys

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip().endswith("heavy: []"), out.stdout[-300:]


@pytest.mark.slow
def test_the_benchmark_runs_short_and_loses_nothing() -> None:
    import sys

    bench = Path(__file__).resolve().parents[1] / "benchmarks" / "service.py"
    out = subprocess.run([sys.executable, str(bench), "--duration", "3", "--clients", "5", "--embedder", "hash",
                          "--tenants", "2", "--seed", "50", "--rate", "20", "--open-s", "8"],
                         capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr[-500:]
    last = out.stdout.strip().splitlines()[-1]
    assert last.startswith("service: rps=") and " rate=20 " in last, last
    assert last.endswith("errors=0 lost=0 stale=0"), last


def test_serve_chooses_its_query_model_from_the_cli_default_pair() -> None:
    """The CLI's default embedder already pairs MiniLM with its int8 queries: `--query-model` decides."""
    import fourfold.cli.app  # noqa: F401 - the command modules load through the CLI app
    from fourfold.cli.service_commands import _serving_embedders
    from fourfold.embeddings.asymmetric import AsymmetricEmbedder
    from fourfold.embeddings.onnx import OnnxMiniLMEmbedder, OnnxMiniLMInt8Embedder

    exact = OnnxMiniLMEmbedder()
    paired = AsymmetricEmbedder(exact, OnnxMiniLMInt8Embedder(threads=1))
    stored, queries = _serving_embedders(paired, "int8")
    assert stored is exact and isinstance(queries, OnnxMiniLMInt8Embedder)
    assert _serving_embedders(paired, "exact") == (exact, None)


_SERVE_WITH_A_FAKE_UVICORN = """
import gc, json, sys, types
from pathlib import Path

seen = {}
uvicorn = types.ModuleType("uvicorn")
uvicorn.Config = lambda app, **options: options
class Server:
    def __init__(self, config): pass
    def run(self, sockets=None):  # where uvicorn would start serving: the collector as the service has it
        seen["serving"] = [list(gc.get_threshold()), gc.get_freeze_count()]
uvicorn.Server = Server
sys.modules["uvicorn"] = uvicorn

import fourfold.cli.app
from fourfold import Memory
from fourfold.embeddings import HashEmbedder
from fourfold.cli import service_commands
from fourfold.cli._common import state

state.data_dir, state.embedder = Path(sys.argv[1]), "hash"
with Memory.open(Path(sys.argv[1]) / "library", embedder=HashEmbedder()) as memory:
    memory.long_term.remember("Prefers email", scope="c1")
seen["library"] = [list(gc.get_threshold()), gc.get_freeze_count()]
service_commands._serve(host="127.0.0.1", port=0, max_body=1 << 20, log_level="warning", query_model="exact",
                        allow_host=[], review_cases=False)
print(json.dumps(seen))
"""


def test_a_service_process_freezes_its_start_up_heap_and_the_library_leaves_the_collector_alone(tmp_path: Path) -> None:
    import gc
    import json
    import sys

    from fourfold.service.heap import SERVICE_THRESHOLDS

    out = subprocess.run([sys.executable, "-c", _SERVE_WITH_A_FAKE_UVICORN, str(tmp_path)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["library"] == [list(gc.get_threshold()), 0]  # an application that imports fourfold keeps its own
    thresholds, frozen = seen["serving"]
    assert thresholds == list(SERVICE_THRESHOLDS)
    assert frozen > 10_000  # the modules, the app and the models' objects
