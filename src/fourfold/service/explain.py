"""Why was this recalled: each result of a recall, a similar-successes search or a document
search, with the evidence its relevance was made of.

Read-only. For memories and documents the parts are the library's own
(`LongTermMemory.explain`, `fourfold.ranking.Parts`); this module adds which query words each
result matched, with their BM25 points and where the result got them (its own text, its date,
a neighbour), from an index built like recall's. Episodes have no explain of their own: their
parts are recomputed beside `similar_successes` with the ranker's public functions. Either
way `recomputed` is the relevance the shown parts give, so a reader (and a test) can see that
they add up to the score.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fourfold.episodic import EpisodeLog, dense_text, lexical_text
from fourfold.longterm import LongTermMemory
from fourfold.longterm.retrieval import ScopeIndex
from fourfold.longterm.store import DOC_KIND
from fourfold.memory import Memory
from fourfold.ranking import (
    EPISODES,
    MEMORIES,
    Background,
    Calibration,
    Fusion,
    lexical_share,
    relevance,
)
from fourfold.ranking.bm25 import BM25Index
from fourfold.text import memory_date, time_words, tokenize
from fourfold.types import Episode, Recalled

__all__ = ["Explained", "Word", "explain_docs", "explain_recall", "explain_similar"]


@dataclass(frozen=True, slots=True)
class Word:
    """One query word the result matched: its BM25 points and where the result got it from."""

    word: str
    points: float
    source: str  # "text" (its own words), "date" (its date's words), "context" (a neighbour's)


@dataclass(frozen=True, slots=True)
class Explained:
    """One result with its parts, in the ranker's units: evidence = dense + lexical + speaker - typical."""

    id: str
    text: str
    score: float  # what the library returned (episodes have none: then `recomputed`)
    recomputed: float  # relevance(dense + lexical + speaker), from the parts below
    dense: float  # cosine of query and the result's vector, neighbours blended in
    dense_own: float  # cosine with the result's own vector alone
    lexical_share: float  # BM25 as a share of the most the query could score
    lexical: float  # the share, weighted (Fusion.lexical)
    speaker: float  # the speaker lift (Fusion.boost) when the query names its speaker, else 0
    words: tuple[Word, ...] = ()
    date: str | None = None  # the result's own date (metadata occurred_at/date), ISO
    speaker_name: str | None = None
    null: float = 0.0  # what the query's background similarity takes off the evidence, weighted
    typical: float = 0.0  # what the result's typicality in its scope takes off the evidence, weighted
    detail: Mapping[str, Any] = field(default_factory=dict)  # the result itself, as the API shows it

    @property
    def context(self) -> float:
        """What neighbouring memories added to the dense part (negative: they pulled it away)."""
        return self.dense - self.dense_own


def explain_recall(
    lt: LongTermMemory, query: str, *, scope: str | None, k: int = 5, kinds: Sequence[str] | None = None,
    where: Mapping[str, Any] | None = None,
) -> list[Explained]:
    """`lt.recall(query, ...)`'s results, best first, each with its parts and matched words."""
    found = lt.explain(query, scope=scope, k=k, kinds=kinds, where=where)
    if not found:
        return []
    records, _ = lt.store.scan_versioned(scope)
    index = ScopeIndex(records, lt.embedder.dimension, weights=lt.weights)
    position = {r.id: i for i, r in enumerate(index.records)}
    fusion = lt.weights.fusion
    tokens = tokenize(query)
    per_word = {t: index.bm25.scores([t]) for t in dict.fromkeys(tokens)}
    out = []
    for hit, parts in found:
        i = position.get(hit.id)
        record = index.records[i] if i is not None else None
        when = memory_date(hit.metadata) if lt.weights.dates else None
        words: tuple[Word, ...] = ()
        if record is not None:  # else written between the search and the scan: no words
            own_words = set(tokenize(" ".join((record.text, *record.extra))))
            date_words = set(tokenize(" ".join(time_words(when)))) if when else set()
            words = tuple(
                Word(t, points, "text" if t in own_words else "date" if t in date_words else "context")
                for t in dict.fromkeys(tokens)
                if (points := tokens.count(t) * per_word[t].get(str(i), 0.0)) > 0
            )
        speaker_name = str(hit.metadata.get("speaker") or "") or None
        out.append(_explained(
            hit.id, hit.text, hit.score, parts.dense, parts.own, parts.lexical, bool(parts.boost), fusion, MEMORIES,
            null=parts.null, words=words, date=when.date().isoformat() if when else None,
            speaker_name=speaker_name, detail=_recalled_detail(hit), typical=parts.typical,
        ))
    return out


def explain_docs(
    memory: Memory, query: str, *, scope: str | None = None, k: int = 5, source: str | None = None
) -> list[Explained]:
    """`docs.search`'s results (document chunks) with their parts: chunks have no neighbours."""
    return explain_recall(memory.long_term, query, scope=scope, k=k, kinds=(DOC_KIND,),
                          where={"source": source} if source else None)


def explain_similar(
    log: EpisodeLog, situation: str, *, scope: str | None, k: int = 3, include_unscoped: bool = True
) -> list[Explained]:
    """`similar_successes`' results with their parts (episodes have no neighbours or dates).

    The lexical part is scored, as the search does, over the successful episodes of the
    groups searched (the scope's, and the unscoped ones unless excluded).
    """
    found = log.similar_successes(situation, k=k, scope=scope, include_unscoped=include_unscoped)
    if not found:
        return []
    groups: tuple[str | None, ...] = (
        (None,) if scope is None else (None, scope) if include_unscoped else (scope,)
    )
    searched = [e for g in groups for e in log.episodes(scope=g, success=True) if e.scope == g]
    bm25 = BM25Index()
    for e in searched:
        bm25.add(e.id, tokenize(lexical_text(e)))
    tokens = tokenize(situation)
    best = bm25.best_possible(tokens)
    query_vector = log.embedder.embed(situation)
    vectors = log.embedder.embed_many([dense_text(e) for e in found])
    fusion = Fusion()  # episodes fuse as memories do, with their own calibration (EPISODES)
    null = Background.of(log.embedder).null(query_vector)
    out = []
    for e, vector in zip(found, vectors, strict=True):
        own_words = set(tokenize(lexical_text(e)))
        words = tuple(
            Word(t, points, "text") for t in dict.fromkeys(tokens)
            if t in own_words and (points := tokens.count(t) * bm25.scores([t]).get(e.id, 0.0)) > 0
        )
        share = float(lexical_share(np.array([sum(w.points for w in words)]), best)[0])
        dense = float(np.dot(vector, query_vector))
        explained = _explained(e.id, e.goal, e.score, dense, dense, share, False, fusion, EPISODES, null=null, words=words,
                               detail=_episode_detail(e))
        out.append(explained)
    return out


def _explained(
    result_id: str, text: str, score: float | None, dense: float, dense_own: float, share: float, named: bool,
    fusion: Fusion, calibration: Calibration, *, null: float, words: tuple[Word, ...], date: str | None = None,
    speaker_name: str | None = None, detail: Mapping[str, Any], typical: float = 0.0,
) -> Explained:
    lexical = fusion.lexical * share
    speaker = fusion.boost if named else 0.0
    taken = fusion.typical * typical
    recomputed = float(relevance(np.array([dense + lexical + speaker - taken]), calibration, null=null)[0])
    return Explained(
        id=result_id, text=text, score=recomputed if score is None else float(score), recomputed=recomputed,
        dense=dense, dense_own=dense_own, lexical_share=share, lexical=lexical, speaker=speaker, words=words,
        date=date, speaker_name=speaker_name, null=calibration.null * null, typical=taken, detail=detail,
    )


def _recalled_detail(r: Recalled) -> dict[str, Any]:
    return {"kind": r.kind, "scope": r.scope, "metadata": dict(r.metadata), "created_at": r.created_at}


def _episode_detail(e: Episode) -> dict[str, Any]:
    return {"scope": e.scope, "actions": list(e.actions), "outcome": e.outcome, "success": e.success, "ts": e.ts,
            "tags": list(e.tags)}
