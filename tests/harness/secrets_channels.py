"""The secrets corpus through every channel that stores text, then a byte scan of the data dir.

Channels: memory text, metadata keys and values (at any depth), episode goal/actions/outcome/tags,
documents (the secret with prose around it), facts (values, and keys inside values), the support agent's conversation (and
what it sent to the model), MCP tools, and the REST API. Each channel writes into its own
data dir, so a secret found on disk names the channel that let it through.

With `postgres=` (a running `fourfold.testing.postgres.PostgresServer`), PostgreSQL is the
engine instead: each channel writes into its own schema, and after each channel a CHECKPOINT
puts every change on disk and the server's whole data directory (tables, indexes, TOAST, WAL
in pg_wal/) and its log are scanned. A secret first seen there after a channel is that
channel's leak. So that the scan reads stored values as they are, the benchmark's schemas
store every column uncompressed (`SET STORAGE EXTERNAL`): PostgreSQL compresses values of
rows over about 2 kB (a document chunk with its vector), and a compressed secret would be
invisible to a byte scan, not absent. `run` checks afterwards that no value was compressed.

    secrets: caught=N of M leaked_channels=N false_positives=N of K

caught: corpus secrets found nowhere, in any channel's reads or files; leaked_channels:
channels where any secret was found; false_positives: ordinary support sentences that did
not come back exactly as written.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from fourfold import InvalidInput, Memory
from fourfold.embeddings import HashEmbedder

_PROSE_BEFORE = "# Runbook\n\n" + "The nightly export copies the order tables to the warehouse. " * 12
_PROSE_AFTER = "\n\nIf it fails, retry once and then page the on-call engineer. " * 6
EMBEDDER = HashEmbedder()


class SecretCase(Protocol):
    """One case of a secrets corpus (tests/secrets_corpus.py is the project's)."""

    @property
    def kind(self) -> str: ...  # the kind the detector must report

    @property
    def text(self) -> str: ...  # the secret in prose

    @property
    def secret(self) -> str: ...  # what must not survive anywhere


Secrets = Sequence[SecretCase]


@dataclass
class SecretsResult:
    total: int
    caught: int
    leaked_channels: dict[str, list[str]] = field(default_factory=dict)  # channel -> kinds found
    false_positives: list[str] = field(default_factory=list)
    ordinary: int = 0
    missed: set[int] = field(default_factory=set)  # indices in the corpus of the secrets found somewhere

    def line(self, engine: str = "") -> str:
        label = f"secrets ({engine})" if engine else "secrets"
        return (f"{label}: caught={self.caught} of {self.total} leaked_channels={len(self.leaked_channels)} "
                f"false_positives={len(self.false_positives)} of {self.ordinary}")


def combine(results: dict[str, SecretsResult]) -> SecretsResult:
    """One result for several engines: a secret is caught only if caught on every engine."""
    missed = set().union(*(r.missed for r in results.values()))
    leaked = {f"{channel} ({engine})": kinds for engine, r in results.items() for channel, kinds in r.leaked_channels.items()}
    changed = list(dict.fromkeys(s for r in results.values() for s in r.false_positives))
    total, ordinary = max(r.total for r in results.values()), max(r.ordinary for r in results.values())
    return SecretsResult(total=total, caught=total - len(missed), leaked_channels=leaked,
                         false_positives=changed, ordinary=ordinary, missed=missed)


def markers(secret: str) -> list[str]:
    """The pieces of a secret to look for: each line (PEM bodies are stored with \\n escaped)."""
    pieces = [p for line in secret.split("\n") for p in line.split("\\n")]
    return [p for p in pieces if len(p) >= 8] or [secret]


def _found(secret: str, haystack: bytes) -> bool:
    return any(m.encode() in haystack or json.dumps(m)[1:-1].encode() in haystack for m in markers(secret))


def _files(root: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file())


def _hits(secrets: Secrets, haystack: bytes) -> set[int]:
    """Indices of the corpus secrets found in `haystack`."""
    return {i for i, case in enumerate(secrets) if _found(case.secret, haystack)}


#: Where one channel's Memory lives: a data dir, or a postgresql:// URL.
Target = Path | str


class SQLiteEngine:
    """Each channel in its own data dir under `root`; its disk is every file there."""

    name = "sqlite"

    def __init__(self, root: Path, secrets: Secrets) -> None:
        self.secrets = secrets
        self.root = root

    def target(self, channel: str) -> Target:
        return self.root / _slug(channel)

    def keys(self, channel: str) -> Target:
        return self.root / _slug(channel) / "keys.sqlite3"

    def prepare(self) -> None:
        """Nothing to do: SQLite stores text as it is."""

    def disk(self, channel: str) -> set[int]:
        return _hits(self.secrets, _files(self.root / _slug(channel)))

    def check(self) -> None:
        """Nothing to check."""

    def close(self) -> None:
        """Nothing to close."""


class PostgresEngine:
    """Each channel in its own schema of one PostgreSQL; its disk is the server's whole data
    directory and log, so a secret is charged to the first channel after which it shows."""

    name = "postgres"

    def __init__(self, server: Any, secrets: Secrets) -> None:
        self.secrets = secrets
        import psycopg

        self.server = server
        self.conn = psycopg.connect(server.url, autocommit=True)
        self.seen: set[int] = set()

    def target(self, channel: str) -> Target:
        return f"{self.server.url}?schema=secrets_{_slug(channel).replace('-', '_').lower()}"

    def keys(self, channel: str) -> Target:
        return self.target(channel)

    def prepare(self) -> None:
        """Store every column of fourfold's tables uncompressed (see the module doc)."""
        columns = self._columns("a.attstorage IN ('x', 'm')")
        for schema, table, column in columns:
            self.conn.execute(f'ALTER TABLE "{schema}"."{table}" ALTER COLUMN "{column}" SET STORAGE EXTERNAL')
        for schema, table in {(s, t) for s, t, _ in columns}:
            self.conn.execute(f'ALTER TABLE "{schema}"."{table}" SET (toast_tuple_target = 8160)')

    def disk(self, channel: str) -> set[int]:
        self.conn.execute("CHECKPOINT")
        log = self.server.root / "server.log"
        found = _hits(self.secrets, _files(self.server.data_dir) + (log.read_bytes() if log.exists() else b"")) - self.seen
        self.seen |= found
        return found

    def check(self) -> None:
        """Fail loudly if any stored value was compressed: the scan could not have seen it."""
        for schema, table, column in self._columns("a.attlen = -1"):  # every variable-length column
            row = self.conn.execute(
                f'SELECT count(*) FROM "{schema}"."{table}" WHERE pg_column_compression("{column}") IS NOT NULL'
            ).fetchone()
            if row and row[0]:
                raise RuntimeError(f"{row[0]} compressed values in {schema}.{table}.{column}: the byte scan is blind")

    def _columns(self, condition: str) -> list[tuple[str, str, str]]:
        """(schema, table, column) of the benchmark's schemas' table columns meeting `condition`."""
        return self.conn.execute(
            "SELECT n.nspname, c.relname, a.attname FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind = 'r' AND a.attnum > 0 "
            f"AND NOT a.attisdropped AND {condition} AND starts_with(n.nspname, 'secrets_')"
        ).fetchall()

    def close(self) -> None:
        self.conn.close()


Engine = SQLiteEngine | PostgresEngine


# A vector store factory: None is the default (on-disk) store; tests pass a fast in-memory
# one, the benchmark keeps the default so that the byte scan covers its files.
StoreFactory = Callable[[], Any] | None


@contextmanager
def _memory(target: Target, store: StoreFactory, engine: Engine) -> Iterator[Memory]:
    with Memory.open(target, embedder=EMBEDDER, vector_store=store() if store else None) as mem:
        engine.prepare()  # the stores' tables exist now, and nothing is written yet
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
    mem.long_term.remember(f"Ticket {i} has an attachment", scope=f"customer:s{i}",
                           metadata={"note": text, "list": [text], "deep": {"a": [{"b": text}]}})
    _refused(lambda: mem.long_term.remember(f"Ticket {i} has a labelled field", scope=f"customer:s{i}", metadata={text: "x"}))
    _refused(lambda: mem.long_term.remember(f"Ticket {i} has a nested field", scope=f"customer:s{i}",
                                            metadata={"form": {"fields": [{text: "x"}]}}))


def _ch_episode(mem: Memory, i: int, text: str) -> None:
    mem.episodes.record(goal=f"Ticket {i}: {text}", actions=[text], outcome=f"Rotated: {text}", success=True, scope=f"customer:s{i}")
    _refused(lambda: mem.episodes.record(goal=f"Ticket {i}", actions=["a"], outcome="ok", success=True, tags=[text]))


def _ch_document(mem: Memory, i: int, text: str) -> None:
    mem.docs.ingest_text(f"{_PROSE_BEFORE}\n\n{text}{_PROSE_AFTER}", source=f"runbook-{i}.md")


def _ch_facts(mem: Memory, i: int, text: str) -> None:
    _refused(lambda: mem.facts.set(f"note.{i}", text))
    _refused(lambda: mem.facts.set(text[:200], 1))
    _refused(lambda: mem.facts.set(f"table.{i}", {"rows": [{text: 1}]}))  # a secret in a value's key
    _refused(lambda: mem.facts.set(f"deep.{i}", {"a": {"b": [text]}}))


_LIBRARY_CHANNELS: dict[str, Callable[[Memory, int, str], None]] = {
    "memory text": _ch_memory_text,
    "metadata keys and values": _ch_metadata,
    "episode goal/actions/outcome/tags": _ch_episode,
    "documents": _ch_document,
    "facts": _ch_facts,
}


def _library_channel(
    target: Target, write: Callable[[Memory, int, str], None], texts: list[str], store: StoreFactory, engine: Engine
) -> bytes:
    with _memory(target, store, engine) as mem:
        for i, text in enumerate(texts):
            write(mem, i, text)
        mem.episodes.similar_successes("ticket rotated", k=3)  # writes the vector cache too
        return _stored_reads(mem)


def _agent_channel(target: Target, texts: list[str], store: StoreFactory, engine: Engine) -> bytes:
    from fourfold.agent import SupportAgent
    from fourfold.models import ChatResponse, ScriptedModel

    model = ScriptedModel(lambda *_: ChatResponse(text="ok"))
    with _memory(target, store, engine) as mem:
        agent = SupportAgent(mem, model, doc_k=0)
        for i, text in enumerate(texts):
            agent.turn(f"c{i}", f"Here is my info: {text}")
            agent.resolve(f"c{i}", f"Told them never to share {text}", success=True)
        return _stored_reads(mem) + json.dumps(model.requests, ensure_ascii=False, default=str).encode()


def _mcp_channel(target: Target, texts: list[str], store: StoreFactory, engine: Engine) -> bytes:
    import anyio
    from mcp import Client

    from fourfold.service.mcp import build_mcp_server

    with _memory(target, store, engine) as mem:
        async def main() -> None:
            async with Client(build_mcp_server(lambda _r: mem, scope="user:me")) as client:
                for text in texts:
                    await client.call_tool("remember", {"text": f"Note: {text}"})
                    await client.call_tool("record_episode", {"goal": text, "actions": [text], "outcome": text, "success": True})
                    await client.call_tool("ingest_doc", {"text": f"{_PROSE_BEFORE}\n\n{text}{_PROSE_AFTER}", "source": "mcp.md"})

        anyio.run(main)
        return _stored_reads(mem)


def _rest_channel(target: Target, keys_at: Target, texts: list[str], store: StoreFactory, engine: Engine) -> bytes:
    from fastapi.testclient import TestClient

    from fourfold.service.app import create_app
    from fourfold.service.keys import KeyStore
    from fourfold.service.tenancy import Tenants

    tenants = Tenants(target, embedder=EMBEDDER, vector_store=(lambda _t: store()) if store else None)
    keys = KeyStore(keys_at)
    try:
        client = TestClient(create_app(tenants, keys, mount_mcp=False))
        auth = {"Authorization": f"Bearer {keys.create('acme')[1]}"}
        tenants.get("acme")
        engine.prepare()  # the tenant's tables exist now
        answers = []
        for i, text in enumerate(texts):
            for path, body in [
                ("/v1/memories", {"text": f"Note: {text}", "scope": f"customer:{i}", "metadata": {"n": text}}),
                ("/v1/memories", {"text": f"Note {i}", "scope": f"customer:{i}", "metadata": {"n": {text: 1}}}),
                ("/v1/episodes", {"goal": text, "actions": [text], "outcome": text, "success": True}),
                ("/v1/docs", {"text": f"{_PROSE_BEFORE}\n\n{text}{_PROSE_AFTER}", "source": f"r{i}.md"}),
            ]:
                answers.append(client.post(path, json=body, headers=auth).text)
        return "".join(answers).encode() + _stored_reads(tenants.get("acme"))
    finally:
        tenants.close()
        keys.close()


def _false_positives(target: Target, ordinary: Sequence[str], store: StoreFactory, engine: Engine) -> list[str]:
    with _memory(target, store, engine) as mem:
        changed = []
        for sentence in ordinary:
            stored = mem.long_term.remember_many([{"text": sentence, "scope": "customer:o"}])[0]
            if stored.text != sentence:
                changed.append(sentence)
        return changed


def run(
    root: Path, secrets: Secrets, ordinary: Sequence[str], *, vector_store: StoreFactory = None, postgres: Any = None
) -> SecretsResult:
    """Every secret through every channel, then a scan of each channel's files; and every
    `ordinary` sentence stored, which must come back exactly as written.

    On SQLite (the default) each channel has a data dir under `root`. With `postgres` (a
    started PostgresServer) every channel keeps everything in its own schema of it, and the
    scan reads the server's data directory and log (see the module doc).
    """
    engine: Engine = PostgresEngine(postgres, secrets) if postgres is not None else SQLiteEngine(root, secrets)
    store = vector_store if postgres is None else None
    texts = [c.text for c in secrets]
    leaked: dict[str, list[str]] = {}
    missed: set[int] = set()
    try:
        for name in [*_LIBRARY_CHANNELS, "agent conversation", "mcp", "rest"]:
            target = engine.target(name)
            if name in _LIBRARY_CHANNELS:
                read = _library_channel(target, _LIBRARY_CHANNELS[name], texts, store, engine)
            elif name == "agent conversation":
                read = _agent_channel(target, texts, store, engine)
            elif name == "mcp":
                read = _mcp_channel(target, texts, store, engine)
            else:
                read = _rest_channel(target, engine.keys(name), texts, store, engine)
            hits = _hits(secrets, read) | engine.disk(name)
            if hits:
                leaked[name] = sorted({secrets[i].kind for i in hits})
                missed.update(hits)
        false_positives = _false_positives(engine.target("ordinary"), ordinary, store, engine)
        engine.check()
    finally:
        engine.close()
    return SecretsResult(total=len(secrets), caught=len(secrets) - len(missed), leaked_channels=leaked,
                         false_positives=false_positives, ordinary=len(ordinary), missed=missed)


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in name)


def describe(result: SecretsResult) -> Iterable[str]:
    for channel, kinds in result.leaked_channels.items():
        yield f"  leaked through {channel}: {', '.join(kinds)}"
    for sentence in result.false_positives:
        yield f"  changed: {sentence!r}"
