"""The secrets corpus through every channel that stores text, then a byte scan of the data dir.

Channels: memory text, metadata keys and values, episode goal/actions/outcome/tags,
documents (the secret with prose around it), facts, the support agent's conversation (and
what it sent to the model), MCP tools, and the REST API. Each channel writes into its own
data dir, so a secret found on disk names the channel that let it through.

    secrets: caught=N of M leaked_channels=N false_positives=N of K

caught: corpus secrets found nowhere, in any channel's reads or files; leaked_channels:
channels where any secret was found; false_positives: ordinary support sentences that did
not come back exactly as written.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fourfold import InvalidInput, Memory
from fourfold.embeddings import HashEmbedder

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from secrets_corpus import ORDINARY, SECRETS

_PROSE_BEFORE = "# Runbook\n\n" + "The nightly export copies the order tables to the warehouse. " * 12
_PROSE_AFTER = "\n\nIf it fails, retry once and then page the on-call engineer. " * 6
EMBEDDER = HashEmbedder()


@dataclass
class SecretsResult:
    total: int
    caught: int
    leaked_channels: dict[str, list[str]] = field(default_factory=dict)  # channel -> kinds found
    false_positives: list[str] = field(default_factory=list)
    ordinary: int = 0

    def line(self) -> str:
        return (f"secrets: caught={self.caught} of {self.total} leaked_channels={len(self.leaked_channels)} "
                f"false_positives={len(self.false_positives)} of {self.ordinary}")


def markers(secret: str) -> list[str]:
    """The pieces of a secret to look for: each line (PEM bodies are stored with \\n escaped)."""
    pieces = [p for line in secret.split("\n") for p in line.split("\\n")]
    return [p for p in pieces if len(p) >= 8] or [secret]


def _found(secret: str, haystack: bytes) -> bool:
    return any(m.encode() in haystack or json.dumps(m)[1:-1].encode() in haystack for m in markers(secret))


def _files(root: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file())


# A vector store factory: None is the default (on-disk) store; tests pass a fast in-memory
# one, the benchmark keeps the default so that the byte scan covers its files.
StoreFactory = Callable[[], Any] | None


@contextmanager
def _memory(root: Path, store: StoreFactory) -> Iterator[Memory]:
    with Memory.open(root, embedder=EMBEDDER, vector_store=store() if store else None) as mem:
        yield mem


def _refused(call: Callable[[], Any]) -> None:
    """Identifiers holding a secret are refused: that is a catch, not a failure."""
    with suppress(InvalidInput):
        call()


def _stored_reads(mem: Memory) -> bytes:
    memories = [(r.text, r.metadata) for s in [None, *mem.long_term.store.scopes()] for r in mem.long_term.all(scope=s, kinds=None)]
    docs = [r.text for r in mem.long_term.all(kinds=("doc",))]
    episodes = [(e.goal, e.actions, e.outcome, e.tags, e.scope) for e in mem.episodes.episodes()]
    facts = [(f.key, f.value) for f in mem.facts.list()]
    return json.dumps([memories, docs, episodes, facts], ensure_ascii=False, default=str).encode()


def _ch_memory_text(mem: Memory, i: int, text: str) -> None:
    mem.long_term.remember(f"Ticket note {i}: {text}", scope=f"customer:s{i}")


def _ch_metadata(mem: Memory, i: int, text: str) -> None:
    mem.long_term.remember(f"Ticket {i} has an attachment", scope=f"customer:s{i}", metadata={"note": text, "list": [text]})
    _refused(lambda: mem.long_term.remember(f"Ticket {i} has a labelled field", scope=f"customer:s{i}", metadata={text: "x"}))


def _ch_episode(mem: Memory, i: int, text: str) -> None:
    mem.episodes.record(goal=f"Ticket {i}: {text}", actions=[text], outcome=f"Rotated: {text}", success=True, scope=f"customer:s{i}")
    _refused(lambda: mem.episodes.record(goal=f"Ticket {i}", actions=["a"], outcome="ok", success=True, tags=[text]))


def _ch_document(mem: Memory, i: int, text: str) -> None:
    mem.docs.ingest_text(f"{_PROSE_BEFORE}\n\n{text}{_PROSE_AFTER}", source=f"runbook-{i}.md")


def _ch_facts(mem: Memory, i: int, text: str) -> None:
    _refused(lambda: mem.facts.set(f"note.{i}", text))
    _refused(lambda: mem.facts.set(text[:200], 1))


_LIBRARY_CHANNELS: dict[str, Callable[[Memory, int, str], None]] = {
    "memory text": _ch_memory_text,
    "metadata keys and values": _ch_metadata,
    "episode goal/actions/outcome/tags": _ch_episode,
    "documents": _ch_document,
    "facts": _ch_facts,
}


def _library_channel(root: Path, write: Callable[[Memory, int, str], None], texts: list[str], store: StoreFactory) -> bytes:
    with _memory(root, store) as mem:
        for i, text in enumerate(texts):
            write(mem, i, text)
        mem.episodes.similar_successes("ticket rotated", k=3)  # writes the vector cache too
        return _stored_reads(mem)


def _agent_channel(root: Path, texts: list[str], store: StoreFactory) -> bytes:
    from fourfold.agent import SupportAgent
    from fourfold.models import ChatResponse, ScriptedModel

    model = ScriptedModel(lambda *_: ChatResponse(text="ok"))
    with _memory(root, store) as mem:
        agent = SupportAgent(mem, model, doc_k=0)
        for i, text in enumerate(texts):
            agent.turn(f"c{i}", f"Here is my info: {text}")
            agent.resolve(f"c{i}", f"Told them never to share {text}", success=True)
        return _stored_reads(mem) + json.dumps(model.requests, ensure_ascii=False, default=str).encode()


def _mcp_channel(root: Path, texts: list[str], store: StoreFactory) -> bytes:
    import anyio
    from mcp import Client

    from fourfold.service.mcp import build_mcp_server

    with _memory(root, store) as mem:
        async def main() -> None:
            async with Client(build_mcp_server(lambda _r: mem, scope="user:me")) as client:
                for text in texts:
                    await client.call_tool("remember", {"text": f"Note: {text}"})
                    await client.call_tool("record_episode", {"goal": text, "actions": [text], "outcome": text, "success": True})
                    await client.call_tool("ingest_doc", {"text": f"{_PROSE_BEFORE}\n\n{text}{_PROSE_AFTER}", "source": "mcp.md"})

        anyio.run(main)
        return _stored_reads(mem)


def _rest_channel(root: Path, texts: list[str], store: StoreFactory) -> bytes:
    from fastapi.testclient import TestClient

    from fourfold.service.app import create_app
    from fourfold.service.keys import KeyStore
    from fourfold.service.tenancy import Tenants

    tenants = Tenants(root, embedder=EMBEDDER, vector_store=(lambda _t: store()) if store else None)
    keys = KeyStore(root / "keys.sqlite3")
    try:
        client = TestClient(create_app(tenants, keys, mount_mcp=False))
        auth = {"Authorization": f"Bearer {keys.create('acme')[1]}"}
        answers = []
        for i, text in enumerate(texts):
            for path, body in [
                ("/v1/memories", {"text": f"Note: {text}", "scope": f"customer:{i}", "metadata": {"n": text}}),
                ("/v1/episodes", {"goal": text, "actions": [text], "outcome": text, "success": True}),
                ("/v1/docs", {"text": f"{_PROSE_BEFORE}\n\n{text}{_PROSE_AFTER}", "source": f"r{i}.md"}),
            ]:
                answers.append(client.post(path, json=body, headers=auth).text)
        return "".join(answers).encode() + _stored_reads(tenants.get("acme"))
    finally:
        tenants.close()
        keys.close()


def _false_positives(root: Path, store: StoreFactory) -> list[str]:
    with _memory(root, store) as mem:
        changed = []
        for sentence in ORDINARY:
            stored = mem.long_term.remember_many([{"text": sentence, "scope": "customer:o"}])[0]
            if stored.text != sentence:
                changed.append(sentence)
        return changed


def run(root: Path, *, vector_store: StoreFactory = None) -> SecretsResult:
    """Every secret through every channel under `root`; then scan each channel's files."""
    store = vector_store
    texts = [c.text for c in SECRETS]
    reads: dict[str, bytes] = {}
    for name, write in _LIBRARY_CHANNELS.items():
        reads[name] = _library_channel(root / _slug(name), write, texts, store)
    reads["agent conversation"] = _agent_channel(root / "agent", texts, store)
    reads["mcp"] = _mcp_channel(root / "mcp", texts, store)
    reads["rest"] = _rest_channel(root / "rest", texts, store)
    leaked: dict[str, list[str]] = {}
    missed: set[int] = set()
    for name, read in reads.items():
        haystack = read + _files(root / _slug(name) if name in _LIBRARY_CHANNELS else root / _dir(name))
        hits = [i for i, case in enumerate(SECRETS) if _found(case.secret, haystack)]
        if hits:
            leaked[name] = sorted({SECRETS[i].kind for i in hits})
            missed.update(hits)
    result = SecretsResult(total=len(SECRETS), caught=len(SECRETS) - len(missed), leaked_channels=leaked)
    result.false_positives = _false_positives(root / "ordinary", store)
    result.ordinary = len(ORDINARY)
    return result


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in name)


def _dir(name: str) -> str:
    return {"agent conversation": "agent", "mcp": "mcp", "rest": "rest"}[name]


def describe(result: SecretsResult) -> Iterable[str]:
    for channel, kinds in result.leaked_channels.items():
        yield f"  leaked through {channel}: {', '.join(kinds)}"
    for sentence in result.false_positives:
        yield f"  changed: {sentence!r}"
