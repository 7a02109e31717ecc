"""Ranking: every score fourfold gives a memory, an episode or a document comes from here.

- `fourfold.ranking.fusion`: the one hybrid ranker (`rank`), its fusion weights and calibrations,
  and the relevance in [0, 1] a caller filters on (`RELEVANCE_FLOOR`);
- `fourfold.ranking.bm25`: Okapi BM25, one kernel (`bm25_term_scores`) behind every lexical
  score, an incremental index (`BM25Index`) and a fixed table (`BM25Table`);
- `fourfold.ranking.terms`: a scope's term table with neighbours' context (`ContextTerms`).
"""

from fourfold.ranking.bm25 import BM25Index, BM25Table, CollectionStats
from fourfold.ranking.fusion import (
    EPISODES,
    MEMORIES,
    RELEVANCE_FLOOR,
    Background,
    Calibration,
    Fusion,
    Parts,
    evidence_of,
    lexical_share,
    rank,
    relevance,
    typicality,
)

__all__ = [
    "EPISODES", "MEMORIES", "RELEVANCE_FLOOR", "BM25Index", "BM25Table", "Background", "Calibration", "CollectionStats",
    "Fusion", "Parts", "evidence_of", "lexical_share", "rank", "relevance", "typicality",
]
