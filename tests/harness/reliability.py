"""Reliability workloads: nothing lost, nothing leaked, every bad input answered.

The crash cycles, concurrent writers, isolation checks and bad inputs that
tests/test_reliability_*.py run at CI sizes and benchmarks/reliability.py runs at full strength.

Writer processes run from a multiprocessing *forkserver*: one clean process that has
imported fourfold but never opened a store forks each writer, so a crash
cycle costs milliseconds instead of a fresh interpreter; each is still a separate process
killed with SIGKILL. Concurrency runs use *spawn* (fresh interpreters, as in production).
"""

# The bad-input cases bind their arguments as lambda defaults, which mypy cannot infer.
# mypy: disable-error-code="misc"

from __future__ import annotations

import hashlib
import json
import multiprocessing as mp
import os
import random
import reprlib
import signal
import sys
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fourfold import FourfoldError
from fourfold.config import MemoryConfig
from fourfold.embeddings import HashEmbedder
from fourfold.memory import Memory

# -- deterministic payloads -----------------------------------------------------------------
# Every write is named by a key; its content is a pure function of the key, so a verifier
# in another process can tell a complete record from a partial or damaged one.


def _h(key: str) -> int:
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=4).digest(), "little")


def scope_of(key: str) -> str:
    return f"customer:r{_h(key) % 4}"


def memory_text(key: str) -> str:
    filler = " ".join(f"detail{(_h(key) + i) % 97}" for i in range(_h(key) % 40))
    return f"Ledger entry {key}: the parcel {key} was refunded after review. {filler}".strip()


def episode_fields(key: str) -> dict[str, Any]:
    return {
        "goal": f"Parcel {key} arrived damaged",
        "actions": [f"checked photos for {key}", f"issued refund for {key}"],
        "outcome": f"refund issued for {key}",
        "success": True,
        "scope": scope_of(key),
        "tags": ["reliability"],
    }


def fact_key(key: str) -> str:
    return f"rel.{key}"


def fact_value(key: str) -> dict[str, Any]:
    return {"key": key, "items": [key] * (1 + _h(key) % 20), "n": _h(key)}


def _embedder() -> HashEmbedder:
    return HashEmbedder()


def open_memory(data_dir: str | Path, chroma_url: str | None = None, collection: str | None = None) -> Memory:
    """The memory under test: `data_dir` is a data dir, or a postgresql:// URL."""
    config = MemoryConfig(lock_timeout=120.0, collection=collection or MemoryConfig().collection)
    return Memory.open(data_dir, embedder=_embedder(), chroma_url=chroma_url, config=config)


def key_of_text(text: str) -> str:
    """The key a memory_text() was made from (what a memory written without metadata carries)."""
    return text.removeprefix("Ledger entry ").partition(":")[0]


# -- one write of each kind, acknowledged only after it returned ---------------------------

OPS = ("mem", "mems", "ep", "eps", "fact")


def members(op: str, key: str) -> list[tuple[str, str]]:
    """The (store, key) records one acknowledged operation must have left behind."""
    if op == "mem":
        return [("mem", key)]
    if op == "mems":
        return [("mem", f"{key}b{i}") for i in range(3)]
    if op == "ep":
        return [("ep", key)]
    if op == "eps":
        return [("ep", f"{key}b{i}") for i in range(2)]
    return [("fact", key)]


def do_write(mem: Memory, op: str, key: str) -> None:
    if op == "mem":
        mem.long_term.remember(memory_text(key), scope=scope_of(key), metadata={"k": key})
    elif op == "mems":
        batch = [k for _, k in members(op, key)]
        mem.long_term.remember_many(
            [{"text": memory_text(k), "scope": scope_of(k), "metadata": {"k": k}} for k in batch]
        )
    elif op == "ep":
        mem.episodes.record(**episode_fields(key))
    elif op == "eps":
        mem.episodes.record_many([episode_fields(k) for _, k in members(op, key)])
    else:
        mem.facts.set(fact_key(key), fact_value(key))


def _ack(fd: int, op: str, key: str) -> None:
    os.write(fd, f"{op} {key}\n".encode())


def read_acks(path: Path) -> list[tuple[str, str]]:
    try:
        lines = path.read_text(encoding="utf-8").split("\n")
    except FileNotFoundError:
        return []
    out = []
    for line in lines[:-1]:  # the last element is "" or an unfinished line
        op, _, key = line.partition(" ")
        if op in OPS and key:
            out.append((op, key))
    return out


# -- verification (always in a fresh process: no cached store state) ----------------------


def snapshot(mem: Memory) -> dict[str, Any]:
    """Every record the stores show, checked against the content its key implies."""
    found: Counter[tuple[str, str]] = Counter()
    partial: list[str] = []
    store = mem.long_term.store
    embedder = mem.long_term.embedder
    for scope in store.scopes():
        for rec in store.scan(scope):
            key = str(rec.metadata.get("k", "")) or key_of_text(rec.text)
            found["mem", key] += 1
            ok = rec.text == memory_text(key) and rec.scope == scope_of(key)
            ok = ok and bool(np.allclose(rec.embedding, embedder.embed(rec.text), atol=1e-5))
            if not ok:
                partial.append(f"memory {rec.id} ({key or 'no key'})")
    for ep in mem.episodes.episodes():
        key = ep.goal.removeprefix("Parcel ").removesuffix(" arrived damaged")
        found["ep", key] += 1
        want = episode_fields(key)
        got = {"goal": ep.goal, "actions": list(ep.actions), "outcome": ep.outcome, "success": ep.success,
               "scope": ep.scope, "tags": list(ep.tags)}
        if got != want:
            partial.append(f"episode {ep.id} ({key})")
    for fact in mem.facts.list():
        key = fact.key.removeprefix("rel.")
        found["fact", key] += 1
        if fact.value != fact_value(key):
            partial.append(f"fact {fact.key}")
    return {"found": found, "partial": partial, "index_damage": _index_damage(store)}


def _index_damage(store: Any) -> int:
    """Records Chroma holds that fourfold's read path (scope catalog + fetch by id) misses.

    fourfold never searches Chroma's own HNSW graph (it reads a scope's records and ranks
    them exactly) and builds that graph sparse to keep writes cheap, so the graph's
    nearest-neighbour answers are no measure of damage; a record that a scope read would
    not return is.
    """
    collection = getattr(store, "_collection", None)
    if collection is None:
        return 0
    got = collection.get(include=["metadatas"])
    if not got["ids"]:
        return 0
    by_scope: dict[str, set[str]] = {}
    for rid, meta in zip(got["ids"], got["metadatas"], strict=True):
        by_scope.setdefault(str((meta or {}).get("ff_scope", "")), set()).add(rid)
    missed = 0
    for key, ids in by_scope.items():
        seen = {r.id for r in store.scan(key or None)}
        missed += len(ids - seen)
    return missed


def judge(snap: dict[str, Any], acks: Sequence[tuple[str, str]]) -> dict[str, Any]:
    """Lost = acknowledged but missing; dupes = present twice; torn batches = half a batch."""
    found: Counter[tuple[str, str]] = snap["found"]
    wanted = [m for op, key in acks for m in members(op, key)]
    lost = [f"{s}:{k}" for s, k in wanted if found[s, k] == 0]
    dupes = [f"{s}:{k}" for (s, k), n in found.items() if n > 1]
    torn_batches = []
    for s, k in found:
        if "b" in k and s != "fact":
            base = k.rpartition("b")[0]
            op = "mems" if s == "mem" else "eps"
            seen = [found[m] > 0 for m in members(op, base)]
            if not all(seen):
                torn_batches.append(f"{op}:{base}")
    return {
        "acked": len(wanted), "present": sum(1 for m in wanted if found[m] > 0), "lost": lost,
        "dupes": dupes, "partial": list(snap["partial"]) + sorted(set(torn_batches)),
        "index_damage": snap["index_damage"],
    }


def verify(data_dir: str | Path, acks: Sequence[tuple[str, str]]) -> dict[str, Any]:
    """Open the data dir, then judge what it shows against the acknowledged writes."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with open_memory(data_dir) as mem:
                verdict = judge(snapshot(mem), acks)
        except Exception as exc:  # the verdict reports any failure to open as data
            return {"open_error": f"{type(exc).__name__}: {exc}", "acked": 0, "present": 0,
                    "lost": ["(could not open)"], "dupes": [], "partial": [], "index_damage": 0}
    verdict["warnings"] = [str(w.message) for w in caught]
    verdict["open_error"] = ""
    return verdict


# -- crash cycles -----------------------------------------------------------------------------


def _crash_writer(data_dir: str, cycle: int, ack_path: str, ready_path: str, seed: int) -> None:
    """Verify what earlier cycles left, say so, then write until killed."""
    from fourfold.text import redact

    redact("warm")  # the detector's rules compile on first use: the kill's delay counts from writing
    verdict = verify(data_dir, read_acks(Path(ack_path)))
    tmp = ready_path + ".tmp"
    Path(tmp).write_text(json.dumps(verdict), encoding="utf-8")
    os.replace(tmp, ready_path)
    if verdict["open_error"]:
        return
    rng = random.Random(seed)
    fd = os.open(ack_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    with open_memory(data_dir) as mem:
        for j in range(100_000):
            op = rng.choice(OPS)
            key = f"c{cycle}w{j}"
            do_write(mem, op, key)
            _ack(fd, op, key)


def _final_verifier(data_dir: str, ack_path: str, out_path: str) -> None:
    Path(out_path).write_text(json.dumps(verify(data_dir, read_acks(Path(ack_path)))), encoding="utf-8")


def forkserver() -> Any:
    """A forkserver context whose server has imported fourfold (no store opened)."""
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["harness.reliability", "fourfold.memory", "fourfold.stores.sqlite"])
    return ctx


@dataclass
class CrashResult:
    cycles: int = 0
    survived: int = 0  # cycles after which the data dir opened and showed every acked write once
    acked: int = 0
    present: int = 0
    lost: list[str] = field(default_factory=list)
    dupes: list[str] = field(default_factory=list)
    partial: list[str] = field(default_factory=list)
    open_errors: list[str] = field(default_factory=list)
    index_damage: int = 0
    verdicts: list[dict[str, Any]] = field(default_factory=list)


def crash_cycles(data_dir: Path, *, cycles: int, seed: int = 1, max_delay: float = 0.35,
                 store: str | None = None) -> CrashResult:
    """SIGKILL a writer at a random moment, `cycles` times; the next writer checks what was left.

    With `store` (a postgresql:// URL) the writers write there, and `data_dir` keeps only the
    benchmark's own files (the acknowledgements)."""
    ctx = forkserver()
    where = store or str(data_dir)
    rng = random.Random(seed)
    data_dir.mkdir(parents=True, exist_ok=True)
    ack_path = data_dir.parent / f"{data_dir.name}.acks"
    result = CrashResult()
    for cycle in range(cycles):
        ready = data_dir.parent / f"{data_dir.name}.ready{cycle}"
        proc = ctx.Process(target=_crash_writer, args=(where, cycle, str(ack_path), str(ready), rng.randrange(2**31)))
        proc.start()
        deadline = time.monotonic() + 120
        while not ready.exists() and proc.is_alive() and time.monotonic() < deadline:
            time.sleep(0.005)
        time.sleep(rng.uniform(0, max_delay))
        if proc.pid is not None and proc.is_alive():
            os.kill(proc.pid, signal.SIGKILL)
        proc.join(30)
        if cycle:  # the writer of cycle n verified what cycles 0..n-1 left
            _tally(result, json.loads(ready.read_text(encoding="utf-8")) if ready.exists() else None)
        ready.unlink(missing_ok=True)
    out = data_dir.parent / f"{data_dir.name}.final"
    proc = ctx.Process(target=_final_verifier, args=(where, str(ack_path), str(out)))
    proc.start()
    proc.join(300)
    _tally(result, json.loads(out.read_text(encoding="utf-8")) if out.exists() else None)
    return result


def _tally(result: CrashResult, verdict: dict[str, Any] | None) -> None:
    result.cycles += 1
    if verdict is None:
        result.open_errors.append("verifier died")
        return
    result.verdicts.append(verdict)
    ok = not (verdict["open_error"] or verdict["lost"] or verdict["dupes"] or verdict["partial"] or verdict["index_damage"])
    result.survived += ok
    result.acked, result.present = verdict["acked"], verdict["present"]
    result.lost = sorted(set(result.lost) | set(verdict["lost"]))
    result.dupes = sorted(set(result.dupes) | set(verdict["dupes"]))
    result.partial = sorted(set(result.partial) | set(verdict["partial"]))
    result.index_damage = max(result.index_damage, verdict["index_damage"])
    if verdict["open_error"]:
        result.open_errors.append(verdict["open_error"])


# -- concurrency ------------------------------------------------------------------------------


def _conc_writer(data_dir: str, worker: int, n: int, ack_path: str, chroma_url: str | None, collection: str | None) -> None:
    fd = os.open(ack_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    with open_memory(data_dir, chroma_url, collection) as mem:
        for i in range(n):
            for op in ("mem", "ep", "fact"):
                key = f"w{worker}i{i}"
                do_write(mem, op, key)
                _ack(fd, op, key)


def _conc_reader(data_dir: str, stop_path: str, out_path: str, chroma_url: str | None, collection: str | None) -> None:
    """Read all three stores in a loop while writers run; count reads and corrupt results."""
    reads, bad = 0, list[str]()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with open_memory(data_dir, chroma_url, collection) as mem:
            while not os.path.exists(stop_path) and len(bad) < 20:
                try:
                    bad.extend(_read_once(mem, reads))
                except Exception as exc:  # a reader must never fail, typed or not
                    bad.append(f"{type(exc).__name__}: {exc}")
                reads += 1
    Path(out_path).write_text(json.dumps({"reads": reads, "bad": bad}), encoding="utf-8")


def _read_once(mem: Memory, i: int) -> list[str]:
    bad = []
    scope = f"customer:r{i % 4}"
    for hit in mem.long_term.recall("parcel refunded after review", scope=scope, k=10):
        key = str(hit.metadata.get("k", ""))
        if hit.text != memory_text(key) or hit.scope != scope:
            bad.append(f"recall returned a damaged or foreign memory {hit.id}")
    for ep in mem.episodes.similar_successes("parcel arrived damaged", scope=scope, k=5):
        if ep.scope != scope or ep.outcome != episode_fields(ep.goal.split()[1])["outcome"]:
            bad.append(f"similar_successes returned a damaged or foreign episode {ep.id}")
    for fact in mem.facts.list():
        if fact.value != fact_value(fact.key.removeprefix("rel.")):
            bad.append(f"fact {fact.key} is damaged")
    return bad


@dataclass
class ConcurrencyResult:
    writers: int
    acked: int
    present: int
    lost: list[str]
    dupes: list[str]
    partial: list[str]
    index_damage: int
    reads: int
    reader_errors: list[str]
    writer_exits: list[int | None]


def concurrency(data_dir: Path, *, writers: int = 4, per_writer: int = 20, chroma_url: str | None = None,
                collection: str | None = None, timeout: float = 300, store: str | None = None) -> ConcurrencyResult:
    """`writers` spawned processes write all three stores at once while one process reads
    (in `store`, a postgresql:// URL, when given)."""
    ctx = mp.get_context("spawn")
    data_dir.mkdir(parents=True, exist_ok=True)
    where = store or str(data_dir)
    open_memory(where, chroma_url, collection).close()
    ack_path = data_dir.parent / f"{data_dir.name}.acks"
    stop, out = data_dir.parent / f"{data_dir.name}.stop", data_dir.parent / f"{data_dir.name}.reads"
    reader = ctx.Process(target=_conc_reader, args=(where, str(stop), str(out), chroma_url, collection))
    reader.start()
    procs = [ctx.Process(target=_conc_writer, args=(where, w, per_writer, str(ack_path), chroma_url, collection))
             for w in range(writers)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout)
    stop.touch()
    reader.join(timeout)
    for p in [*procs, reader]:
        if p.is_alive() and p.pid is not None:
            os.kill(p.pid, signal.SIGKILL)
            p.join()
    reads: dict[str, Any] = json.loads(out.read_text(encoding="utf-8")) if out.exists() else {"reads": 0, "bad": ["reader died"]}
    with open_memory(where, chroma_url, collection) as mem:
        verdict = judge(snapshot(mem), read_acks(ack_path))
    return ConcurrencyResult(
        writers, verdict["acked"], verdict["present"], verdict["lost"], verdict["dupes"], verdict["partial"],
        verdict["index_damage"], reads["reads"], reads["bad"], [p.exitcode for p in procs],
    )


# -- bad input ----------------------------------------------------------------------------------

_SENTINEL_TEXT = "Sentinel memory: the store must survive every bad input"


def _deep(n: int, leaf: Any = 1) -> Any:
    value: Any = leaf
    for _ in range(n):
        value = {"a": value}
    return value


def _deep_list(n: int) -> Any:
    value: Any = []
    for _ in range(n):
        value = [value]
    return value


HUGE = "x" * 10_000_000
BINARY = bytes(range(256)).decode("latin-1")

Call = Callable[[Memory], Any]


def bad_input_cases() -> list[tuple[str, Call]]:
    """Public API calls with bad input; each must end in a FourfoldError or a clean result."""
    lt = "long_term"
    cases: list[tuple[str, Call]] = []

    def add(name: str, fn: Call) -> None:
        cases.append((name, fn))

    texts: dict[str, Any] = {"empty": "", "blank": " \n\t", "huge": HUGE, "binary": BINARY, "nul": "a\x00b order 7",
                             "surrogate": "a\ud800b", "none": None, "int": 5, "bytes": b"order 55 shipped",
                             "list": ["order"], "dict": {"t": "x"}}
    for label, text in texts.items():
        add(f"remember text={label}", lambda m, t=text: getattr(m, lt).remember(t, scope="customer:fuzz"))
        add(f"recall query={label}", lambda m, t=text: m.long_term.recall(t, scope="customer:fuzz"))
        add(f"episodes.record goal={label}", lambda m, t=text: m.episodes.record(goal=t, actions=[], outcome="o", success=True))
        add(f"episodes.record action={label}", lambda m, t=text: m.episodes.record(goal="g", actions=[t], outcome="o", success=True))
        add(f"similar_successes situation={label}", lambda m, t=text: m.episodes.similar_successes(t))
        add(f"facts.set value={label}", lambda m, t=text: m.facts.set("fuzz.value", t))
        add(f"facts.set key={label}", lambda m, t=text: m.facts.set(t, 1))
        add(f"facts.get key={label}", lambda m, t=text: m.facts.get(t))
        add(f"docs.ingest text={label}", lambda m, t=text: m.docs.ingest(t, source="fuzz.md"))
        add(f"forget_scope scope={label}", lambda m, t=text: m.forget_scope(t))
        add(f"remember scope={label}", lambda m, t=text: m.long_term.remember("Order 5 shipped late", scope=t))
        add(f"remember kind={label}", lambda m, t=text: m.long_term.remember("Order 6 shipped late", kind=t))
        add(f"forget id={label}", lambda m, t=text: m.long_term.forget(t))
        add(f"conversations.load scope={label}", lambda m, t=text: m.conversations.load(t))
    metas: dict[str, Any] = {"nested": {"a": {"b": [1, None, {"c": []}]}}, "none-value": {"a": None},
                             "deep": _deep(5000), "nan": {"a": float("nan")}, "set": {"a": {1}},
                             "int-key": {1: "a"}, "surrogate-key": {"\ud800": 1}, "list": [1, 2], "str": "meta",
                             "huge": {"a": HUGE}, "object": {"a": object()}}
    for label, meta in metas.items():
        add(f"remember metadata={label}", lambda m, x=meta: m.long_term.remember("Order 41 shipped late", metadata=x))
        add(f"recall where={label}", lambda m, x=meta: m.long_term.recall("order", where=x))
    for label, k in {"0": 0, "-1": -1, "1e6": 1_000_000, "float": 2.5, "bool": True, "str": "3", "none": None}.items():
        add(f"recall k={label}", lambda m, k=k: m.long_term.recall("order", k=k))
        add(f"similar_successes k={label}", lambda m, k=k: m.episodes.similar_successes("order", k=k))
        add(f"docs.search k={label}", lambda m, k=k: m.docs.search("order", k=k))
    odd: dict[str, Call] = {
        "recall kinds=int": lambda m: m.long_term.recall("order", kinds=5),  # type: ignore[arg-type]
        "recall kinds=[None]": lambda m: m.long_term.recall("order", kinds=[None]),  # type: ignore[list-item]
        "recall kinds=unknown": lambda m: m.long_term.recall("order", kinds=["no_such_kind"]),
        "recall scope=unknown": lambda m: m.long_term.recall("order", scope="customer:never-seen"),
        "recall min_score=str": lambda m: m.long_term.recall("order", min_score="high"),  # type: ignore[arg-type]
        "remember_many None": lambda m: m.long_term.remember_many(None),  # type: ignore[arg-type]
        "remember_many [1]": lambda m: m.long_term.remember_many([1]),  # type: ignore[list-item]
        "episodes.record success=1": lambda m: m.episodes.record(goal="g", actions=[], outcome="o", success=1),  # type: ignore[arg-type]
        "episodes.record actions=None": lambda m: m.episodes.record(goal="g", actions=None, outcome="o", success=True),  # type: ignore[arg-type]
        "episodes.record actions=str": lambda m: m.episodes.record(goal="g", actions="abc", outcome="o", success=True),
        "episodes.record actions=deep": lambda m: m.episodes.record(goal="g", actions=[_deep_list(5000)], outcome="o", success=True),
        "episodes.record_many None": lambda m: m.episodes.record_many(None),  # type: ignore[arg-type]
        "episodes.get int": lambda m: m.episodes.get(5),  # type: ignore[arg-type]
        "facts.set value=deep": lambda m: m.facts.set("fuzz.deep", _deep_list(5000)),
        "facts.set value=bigint": lambda m: m.facts.set("fuzz.big", 10**5000),
        "facts.set value=set": lambda m: m.facts.set("fuzz.set", {1, 2}),
        "facts.set description=int": lambda m: m.facts.set("fuzz.d", 1, description=5),  # type: ignore[arg-type]
        "facts.history None": lambda m: m.facts.history(None),  # type: ignore[arg-type]
        "facts.delete unknown": lambda m: m.facts.delete("fuzz.never"),
        "docs.ingest source=int": lambda m: m.docs.ingest("Some manual text about parcels.", source=5),  # type: ignore[arg-type]
        "docs.ingest path=missing": lambda m: m.docs.ingest(Path("/nonexistent/manual.md")),
        "docs.ingest path=dir": lambda m: m.docs.ingest(Path("/")),
        "docs.delete_source unknown": lambda m: m.docs.delete_source("never.md"),
        "Memory.open path=NUL": lambda m: Memory.open("bad\x00dir", embedder=_embedder()),
        "Memory.open path=int": lambda m: Memory.open(5, embedder=_embedder()),  # type: ignore[arg-type]
        "Memory.open embedder=str": lambda m: Memory.open(m.data_dir, embedder="minilm"),  # type: ignore[arg-type]
        "Memory.open other dimension": lambda m: Memory.open(m.data_dir, embedder=HashEmbedder(dimension=64)),
    }
    cases.extend(odd.items())
    return cases


def cli_cases(data_dir: Path) -> list[tuple[str, list[str], bytes | None]]:
    """CLI invocations with bad input; each must exit non-zero with one line, or succeed."""
    base = ["--data-dir", str(data_dir), "--embedder", "hash"]
    surrogate = b"\xff\xfe order 5".decode("utf-8", "surrogateescape")
    raw = [
        ("remember empty", ["remember", ""], None),
        ("remember huge", ["remember", "x" * 100_000], None),
        ("remember invalid UTF-8", ["remember", surrogate], None),
        ("remember --meta not key=value", ["remember", "Order 5 shipped", "--meta", "{bad json"], None),
        ("remember --meta malformed JSON value", ["remember", "Order 8 shipped", "--meta", "a={bad"], None),
        ("remember --kind unknown", ["remember", "Order 6 shipped", "--kind", "NO SUCH KIND"], None),
        ("recall -k 0", ["recall", "order", "-k", "0"], None),
        ("recall -k -1", ["recall", "order", "-k", "-1"], None),
        ("recall -k 1000000", ["recall", "order", "-k", "1000000"], None),
        ("recall -k abc", ["recall", "order", "-k", "abc"], None),
        ("recall missing query", ["recall"], None),
        ("recall --scope empty", ["recall", "order", "--scope", ""], None),
        ("facts set malformed JSON", ["facts", "set", "fuzz.k", "{bad"], None),
        ("facts set bad key", ["facts", "set", "bad key!", "1"], None),
        ("facts get unknown", ["facts", "get", "never"], None),
        ("episodes record empty goal", ["episodes", "record", "--goal", "", "--outcome", "o"], None),
        ("episodes similar -k -1", ["episodes", "similar", "order", "-k", "-1"], None),
        ("docs ingest missing file", ["docs", "ingest", "/nonexistent/x.md"], None),
        ("docs ingest a directory", ["docs", "ingest", "/"], None),
        ("docs ingest binary stdin", ["docs", "ingest", "-"], b"\xff\xfe\x00\x01binary"),
        ("forget unknown id", ["forget", "mem_nope"], None),
        ("forget-scope empty", ["forget-scope", ""], None),
        ("unknown command", ["no-such-command"], None),
        ("no command", ["--json"], None),
        ("unknown option", ["recall", "order", "--no-such-option"], None),
    ]
    return [(name, base + args, stdin) for name, args, stdin in raw]


@dataclass
class Outcome:
    case: str
    ended: str  # "ok", "typed:<Error>", or "CRASH:<Exception>"

    @property
    def crashed(self) -> bool:
        return self.ended.startswith("CRASH")


def run_call(mem: Memory, name: str, fn: Call) -> Outcome:
    try:
        result = fn(mem)
    except FourfoldError as exc:
        return Outcome(name, f"typed:{type(exc).__name__}")
    except BaseException as exc:
        return Outcome(name, f"CRASH:{type(exc).__name__}: {str(exc)[:80]}")
    if isinstance(result, Memory):
        result.close()
    return Outcome(name, "ok")


def run_cli(name: str, argv: list[str], stdin: bytes | None) -> Outcome:
    import subprocess

    proc = subprocess.run([sys.executable, "-m", "fourfold.cli", *argv], input=stdin or b"", capture_output=True, timeout=120)
    err = proc.stderr.decode("utf-8", "replace").strip()
    if proc.returncode == 0:
        return Outcome(name, "ok")
    one_line = err.startswith('{"error": ') if "--json" in argv else err.startswith("error: ")  # JSON under --json
    if "Traceback" in err or len(err.splitlines()) != 1 or not one_line:
        return Outcome(name, f"CRASH:exit {proc.returncode}, {len(err.splitlines())} stderr lines")
    return Outcome(name, f"typed:exit {proc.returncode}")


def store_intact(mem: Memory) -> bool:
    hits = mem.long_term.recall("sentinel memory store survive", scope="customer:sentinel", k=1)
    return bool(hits) and hits[0].text == _SENTINEL_TEXT and mem.facts.get("sentinel.fact").value == {"ok": True}


def plant_sentinel(mem: Memory) -> None:
    mem.long_term.remember(_SENTINEL_TEXT, scope="customer:sentinel")
    mem.facts.set("sentinel.fact", {"ok": True})


def random_bad_calls(rng: random.Random, rounds: int) -> Iterable[tuple[str, Call]]:
    """Random combinations of the bad values above, for longer fuzzing."""
    pool: list[Any] = ["", " ", BINARY, "a\x00b", "a\ud800b", None, 0, -1, 10**6, 2.5, True, b"x", [], {},
                       {"a": None}, _deep(3000), float("nan"), "customer:" + "x" * 300, "ok text about order 9"]
    targets: list[tuple[str, Callable[[Memory, Any, Any], Any]]] = [
        ("remember", lambda m, a, b: m.long_term.remember(a, scope=b)),
        ("remember meta", lambda m, a, b: m.long_term.remember("Order 77 shipped", kind="note", metadata=a)),
        ("recall", lambda m, a, b: m.long_term.recall(a, k=b)),
        ("recall scope", lambda m, a, b: m.long_term.recall("order", scope=a, k=3)),
        ("record", lambda m, a, b: m.episodes.record(goal=a, actions=[b], outcome="done", success=True)),
        ("similar", lambda m, a, b: m.episodes.similar_successes(a, k=b)),
        ("facts.set", lambda m, a, b: m.facts.set("fuzz.rand", a, description=b)),
        ("forget_scope", lambda m, a, b: m.forget_scope(a)),
    ]
    for _ in range(rounds):
        name, target = rng.choice(targets)
        a, b = rng.choice(pool), rng.choice(pool)
        yield f"{name}({_short(a)}, {_short(b)})", lambda m, t=target, a=a, b=b: t(m, a, b)


def _short(value: Any) -> str:
    text = reprlib.repr(value)
    return text if len(text) <= 24 else text[:21] + "..."


# -- isolation ------------------------------------------------------------------------------------


def isolation_leaks(mem: Memory, ops: Sequence[tuple[str, int, int]], *, scopes: int = 4,
                    disk_skip: Sequence[str] = ()) -> list[str]:
    """Apply (op, scope index, n) steps; report any read that shows another scope's marker,
    and any forgotten marker left in a file (folders named in disk_skip are not searched)."""
    from fourfold.agent import SupportAgent
    from fourfold.models import ScriptedModel

    agent = SupportAgent(mem, ScriptedModel(lambda *_: _reply()), doc_k=0)
    leaks: list[str] = []
    written: dict[int, set[str]] = {i: set() for i in range(scopes)}

    def foreign(text: str, own: int) -> list[str]:
        return [mk for i, marks in written.items() if i != own for mk in marks if mk in text]

    for op, s, n in ops:
        scope, marker = f"customer:iso{s}", f"zq{s}x{n}zq"
        if op == "remember":
            mem.long_term.remember(f"Customer note {marker} prefers parcel lockers", scope=scope)
            written[s].add(marker)
        elif op == "record":
            mem.episodes.record(goal=f"Parcel lost {marker}", actions=[f"traced {marker}"], outcome=f"found {marker}",
                                success=True, scope=scope)
            written[s].add(marker)
        elif op == "recall":
            for hit in mem.long_term.recall("customer note parcel lockers", scope=scope, k=20):
                leaks += [f"recall({scope}) saw {m}" for m in foreign(hit.text, s)]
        elif op == "similar":
            for ep in mem.episodes.similar_successes("parcel lost traced found", scope=scope, k=20):
                leaks += [f"similar_successes({scope}) saw {m}" for m in foreign(ep.goal + " ".join(ep.actions), s)]
        elif op == "turn":
            reply = agent.turn(f"iso{s}", f"Where is my parcel? note {marker}")
            written[s].add(marker)
            text = reply.report.system_prompt + json.dumps(agent.history(f"iso{s}"), ensure_ascii=False)
            leaks += [f"prompt for {scope} saw {m}" for m in foreign(text, s)]
        elif op == "forget":
            before = _other_scopes_view(mem, scope, scopes)
            mem.forget_scope(scope)
            leaks += [f"forget_scope({scope}) changed {what}" for what in _diff(before, _other_scopes_view(mem, scope, scopes))]
            if mem.long_term.all(scope=scope) or mem.episodes.episodes(scope=scope):
                leaks.append(f"forget_scope({scope}) left records behind")
            leaks += [f"forget_scope({scope}) left {m} on disk in {f}" for m, f in on_disk(Path(str(mem.data_dir)), written[s], skip=disk_skip)]
            written[s].clear()
    return leaks


def _reply() -> Any:
    from fourfold.models.base import ChatResponse

    return ChatResponse(text="Let me check that parcel for you.")


def _other_scopes_view(mem: Memory, gone: str, scopes: int) -> dict[str, Any]:
    view: dict[str, Any] = {}
    for i in range(scopes):
        scope = f"customer:iso{i}"
        if scope != gone:
            view[f"{scope} memories"] = sorted(r.id for r in mem.long_term.all(scope=scope))
            view[f"{scope} episodes"] = sorted(e.id for e in mem.episodes.episodes(scope=scope))
            view[f"{scope} thread"] = len(mem.conversations.load(scope).messages)
    return view


def _diff(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    return [k for k in a if a[k] != b.get(k)]


def on_disk(data_dir: Path, markers: Iterable[str], *, skip: Sequence[str] = ()) -> list[tuple[str, str]]:
    """(marker, file) for every marker still present in any file under data_dir."""
    marks = [m.encode() for m in markers]
    found = []
    for path in sorted(data_dir.rglob("*")):
        if path.is_file() and not any(part in skip for part in path.relative_to(data_dir).parts):
            data = path.read_bytes()
            found += [(m.decode(), str(path.relative_to(data_dir))) for m in marks if m in data]
    return found


def random_isolation_ops(rng: random.Random, n: int, scopes: int = 4) -> list[tuple[str, int, int]]:
    kinds = ["remember"] * 4 + ["record"] * 3 + ["recall"] * 3 + ["similar"] * 3 + ["turn"] * 2 + ["forget"]
    return [(rng.choice(kinds), rng.randrange(scopes), i) for i in range(n)]


# -- the report -------------------------------------------------------------------------------------
