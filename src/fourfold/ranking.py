"""The one hybrid ranker: candidates' dense and lexical evidence in, relevance in [0, 1] out.

Long-term memory, episodes and documents all rank through `rank`; a store that finds its own
candidates (a database with a vector index) feeds them here rather than ranking on its own.

Both signals are absolute, so a score means the same in any query, scope or store size:

- dense: the cosine of query and candidate;
- lexical: the candidate's BM25 score as a share of the most the query could score (every
  query word matched, saturated), in [0, 1). A query whose only matches are words common in
  the scope earns little; one that names a rare word of the candidate earns much.

They are added (`Fusion.lexical` weighs the lexical share), plus `Fusion.boost` for candidates
with a bonus (a memory whose speaker the query names), and the sum is mapped to a relevance in
[0, 1] by a logistic curve fitted on labelled sets (`Fusion.slope`, `Fusion.offset`), so
`min_score` and the agent's prompt floor read the same scale everywhere.

Measured (benchmarks/results/locomo-dev.md, paraphrase.md): the weights were chosen by
cross-validation on the LoCoMo dev split (leave one conversation out) together with the
paraphrase set (leave attribute types out). Unlike per-query z-scores, an absolute lexical share
cannot let a few ordinary words in a customer's other memories outvote a clear dense match.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from fourfold.errors import InvalidInput

__all__ = ["RELEVANCE_FLOOR", "Fusion", "lexical_share", "rank", "relevance"]

Floats = npt.NDArray[np.float64]

#: The default floor of relevance for what an agent puts in its prompt: chosen by
#: cross-validation on the paraphrase set as the highest floor that keeps on-topic hit@3
#: within 0.01 of no floor (benchmarks/results/paraphrase.md).
RELEVANCE_FLOOR = 0.1


@dataclass(frozen=True, slots=True)
class Fusion:
    """How dense and lexical evidence add up, and how the sum becomes a relevance in [0, 1]."""

    lexical: float = 1.75
    boost: float = 0.15
    slope: float = 4.78
    offset: float = -2.40

    def __post_init__(self) -> None:
        for name in ("lexical", "boost", "slope", "offset"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                raise InvalidInput(f"Fusion.{name} must be a finite number, got {value!r}")
        if self.slope <= 0:
            raise InvalidInput("Fusion.slope must be > 0: relevance must grow with the evidence")


def lexical_share(scores: Floats, best_possible: float) -> Floats:
    """BM25 scores as shares of the most the query could score (0 when it could score nothing)."""
    if best_possible <= 0:
        return np.zeros_like(scores)
    out: Floats = np.clip(scores / best_possible, 0.0, 1.0)
    return out


def relevance(evidence: Floats, fusion: Fusion) -> Floats:
    """The calibrated relevance in [0, 1] of fused evidence (dense + weighted lexical + boost)."""
    out: Floats = 1.0 / (1.0 + np.exp(-(fusion.slope * evidence + fusion.offset)))
    return out


def rank(
    dense: Floats,
    lexical: Floats,
    *,
    k: int,
    fusion: Fusion,
    boost: Floats | None = None,
    newer: Floats | None = None,
) -> list[tuple[int, float]]:
    """The k best candidates as (position, relevance), best first.

    `dense` holds cosines, `lexical` lexical shares (`lexical_share`), `boost` 0/1 flags; among
    equal scores the candidate with the larger `newer` (default: the later position) wins.
    """
    evidence = dense + fusion.lexical * lexical
    if boost is not None:
        evidence = evidence + fusion.boost * boost
    tiebreak = newer if newer is not None else np.arange(len(evidence), dtype=np.float64)
    top = _top_k(evidence, k, tiebreak=tiebreak)
    scores = relevance(evidence[top], fusion)
    return [(i, float(s)) for i, s in zip(top, scores, strict=True)]


def _top_k(scores: Floats, k: int, *, tiebreak: Floats) -> list[int]:
    """Indices of the k highest scores; among equal scores the largest tiebreak first."""
    if scores.size > k * 4:
        part = np.argpartition(-scores, k - 1)[:k]
        # keep everything tied with the k-th score so the tie-break is fair
        part = np.nonzero(scores >= scores[part].min())[0]
    else:
        part = np.arange(scores.size)
    order = np.lexsort((-tiebreak[part], -scores[part]))
    return [int(i) for i in part[order][:k]]
